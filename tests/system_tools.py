"""GNU awk for the real-tool tests, unpacked from Debian's packages without root.

`editViaShellCount` is checked against the real sed, perl and gawk
(tests/core/test_behaviors_real_tools.py). Debian images ship mawk as `awk`, and
`-i inplace` / `--include` are gawk's, so those spellings would only be
checked against a table. `.ci/run` calls `python3 tests/system_tools.py
install`, which leaves a gawk installed system-wide alone and otherwise
downloads the gawk package and its one library (`apt-get download`, no root
needed), unpacks them into the cache with `dpkg -x`, and writes a `gawk`
wrapper that points the binary at its libraries and its `inplace` extension.

Stdlib only and no capeval import, like tests/agent_clis.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The gawk package and the library its binary links that Debian images lack.
PACKAGES = ("gawk", "libsigsegv2")
TIMEOUT_S = 300


def cache_dir() -> Path:
    return Path(os.environ.get("CAPEVAL_TOOL_CACHE") or REPO / ".cache" / "tools")


def wrapper() -> Path:
    return cache_dir() / "bin" / "gawk"


def find_gawk() -> str | None:
    """A gawk that runs: the system's, else the unpacked one, else None."""
    for candidate in (shutil.which("gawk"), str(wrapper())):
        if candidate and os.access(candidate, os.X_OK) and _runs(candidate):
            return candidate
    return None


def _runs(path: str) -> bool:
    try:
        done = subprocess.run(
            [path, "--version"], stdin=subprocess.DEVNULL, capture_output=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.startswith(b"GNU Awk")


def install() -> str:
    """Unpack gawk into the cache unless one runs already; the gawk to use."""
    found = find_gawk()
    if found is not None:
        return found
    for tool in ("apt-get", "dpkg"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not on PATH (not a Debian system)")
    root = cache_dir() / "root"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["apt-get", "download", *PACKAGES],
            cwd=tmp,
            check=True,
            stdin=subprocess.DEVNULL,
            timeout=TIMEOUT_S,
        )
        for deb in sorted(Path(tmp).glob("*.deb")):
            subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True, timeout=TIMEOUT_S)
    libs = next((p for p in (root / "usr" / "lib").glob("*/gawk")), None)
    if libs is None:
        raise RuntimeError(f"no gawk extension folder under {root / 'usr' / 'lib'}")
    script = wrapper()
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(
        "#!/bin/sh\n"
        "# Written by tests/system_tools.py: gawk unpacked from Debian's package.\n"
        f'LD_LIBRARY_PATH="{libs.parent}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" '
        f'AWKPATH=".:{root / "usr" / "share" / "awk"}" AWKLIBPATH="{libs}" '
        f'exec "{root / "usr" / "bin" / "gawk"}" "$@"\n'
    )
    script.chmod(0o755)
    if not _runs(str(script)):
        raise RuntimeError(f"the unpacked gawk in {root} does not run")
    return str(script)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("install", "where"))
    args = parser.parse_args(argv)
    if args.action == "where":
        print(find_gawk() or "gawk not found: run `python3 tests/system_tools.py install`")
        return 0
    try:
        print(f"gawk: {install()}")
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        print(f"gawk: install failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
