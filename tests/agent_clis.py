"""Pinned agent CLIs from the npm registry, for the real-CLI tests.

`.ci/run` calls `python3 tests/agent_clis.py install` before the test suite,
so CI drives the same Claude Code and Codex builds that printed the golden
streams in `shared/agent-streams/`. Tests call `find_cli(name)`; when it
returns None they skip with `missing_reason(name)` instead of passing.

Stdlib only and no capeval import: this runs before the project is installed.
The cache is `$CAPEVAL_CLI_CACHE`, default `.cache/agent-clis` in the repo;
each CLI gets its own npm prefix so versions never mix.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# name -> (npm package, pinned version, binary name). The versions are the
# ones that printed the golden streams; bump them together with those.
# (opencode and Gemini CLI have no golden stream in ../shared; their
# real-CLI tests pin them.)
PINNED: dict[str, tuple[str, str, str]] = {
    "claude-code": ("@anthropic-ai/claude-code", "2.1.332", "claude"),
    "codex": ("@openai/codex", "0.171.0", "codex"),
    "opencode": ("opencode-ai", "1.18.33", "opencode"),
    "gemini": ("@google/gemini-cli", "0.61.0", "gemini"),
}

INSTALL_TIMEOUT_S = 600


def cache_dir() -> Path:
    return Path(os.environ.get("CAPEVAL_CLI_CACHE") or REPO / ".cache" / "agent-clis")


def prefix(name: str) -> Path:
    _, version, _ = PINNED[name]
    return cache_dir() / f"{name}-{version}"


def find_cli(name: str) -> Path | None:
    """The installed binary of a pinned CLI, or None when it is not installed."""
    _, _, binary = PINNED[name]
    path = prefix(name) / "node_modules" / ".bin" / binary
    if path.exists() and os.access(path, os.X_OK):
        return path
    return None


def missing_reason(name: str) -> str:
    package, version, _ = PINNED[name]
    if shutil.which("npm") is None:
        return f"{package}@{version} not installed and npm is not on PATH"
    return (
        f"{package}@{version} not installed in {prefix(name)}: "
        "run `python3 tests/agent_clis.py install` (needs the npm registry)"
    )


def install(name: str) -> Path:
    """Install one pinned CLI into its own prefix (a no-op when present)."""
    found = find_cli(name)
    if found is not None:
        return found
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH")
    package, version, _ = PINNED[name]
    target = prefix(name)
    target.mkdir(parents=True, exist_ok=True)
    cmd = [
        npm,
        "install",
        "--prefix",
        str(target),
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        f"{package}@{version}",
    ]
    subprocess.run(cmd, check=True, timeout=INSTALL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    found = find_cli(name)
    if found is None:
        raise RuntimeError(f"npm installed {package}@{version} but no binary appeared in {target}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    p_install = sub.add_parser("install", help="install the pinned CLIs into the cache")
    p_install.add_argument("names", nargs="*", default=list(PINNED))
    sub.add_parser("where", help="print where each CLI is (or why it is missing)")
    args = parser.parse_args(argv)
    if args.action == "where":
        for name in PINNED:
            print(f"{name}\t{find_cli(name) or missing_reason(name)}")
        return 0
    failed = 0
    for name in args.names:
        if name not in PINNED:
            print(f"unknown CLI {name!r}; known: {', '.join(PINNED)}", file=sys.stderr)
            failed += 1
            continue
        try:
            print(f"{name}: {install(name)}")
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            print(f"{name}: install failed: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
