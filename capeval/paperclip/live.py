"""The live matrix: one real Codex turn per Paperclip group (opt-in, separate from the suite).

Each turn runs `codex exec --json` with the mock control plane attached as an
MCP server (`capeval.paperclip.mcpserver`, started by Codex itself), so Codex
sees the case's surface through the Codex binding and every call it makes is
decided by the same control plane the offline suite uses. The verdict comes
from the control plane's journal (`livejudge.judge`), one JSON Lines row per
turn, flushed as each turn ends.

Codex must be installed and configured (an API key, `codex login`, or a
provider passed with `-c`); otherwise the matrix is skipped with a message
saying which. `scripted=True` answers for the model with the scripted model
server (the fake agent's plan, replayed through Codex's own tool loop): the
wiring is then tested offline, with no model and no network.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.agents.cliadapter import resolve_binary
from capeval.paperclip.livejudge import LiveCase, judge, live_row, prompt, scripted_turn
from capeval.paperclip.mcpserver import SERVER_NAME
from capeval.proc.process import run_process

SCRIPTED_PROVIDER = "capeval-live"
SCRIPTED_KEY_VAR = "CAPEVAL_LIVE_API_KEY"
SCRIPTED_MODEL = "gpt-5.5"
DEFAULT_TIMEOUT_S = 300.0
_KEY_VARS = ("OPENAI_API_KEY", "CODEX_API_KEY")
MCP_STARTUP_TIMEOUT_S = 60  # Codex's default is 10 s


class LiveSkipped(Exception):
    """Codex cannot take a live turn here; the message says why and what to do."""


@dataclass(frozen=True)
class LiveSettings:
    codex: str
    derivative: Path
    model: str | None = None
    config: tuple[str, ...] = ()  # extra `-c key=value` overrides for Codex
    scripted: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    # What the scripted model does per case (default: the fake agent's plan);
    # tests hand in a misbehaving model to see the matrix fail.
    script: Callable[[LiveCase], list[dict[str, Any]]] = scripted_turn


class CodexNotFound(ValueError):
    """An explicitly named Codex that is not an executable: bad input, not a skip.

    A skip exits 0, so a mistyped `--codex` would read as "nothing to do" in CI
    and the matrix the user asked for would silently never run.
    """


def find_codex(binary: str | None = None) -> str:
    """The Codex binary to drive (an absolute path: Codex runs in a scratch directory).

    Raises `LiveSkipped` when none was named and `codex` is not on PATH, and
    `CodexNotFound` when the named one is not an executable.
    """
    found = resolve_binary(binary or "codex")
    if found is not None:
        return found
    if binary:
        path = Path(binary).expanduser()
        if os.sep not in binary and not (os.altsep and os.altsep in binary):
            why = "is not on PATH"
        elif not path.exists():
            why = "does not exist"
        elif path.is_dir():
            why = "is a directory"
        else:
            why = "is not executable"
        raise CodexNotFound(
            f"--codex {binary!r} {why}; pass the path of the Codex binary "
            "(e.g. node_modules/.bin/codex), or leave --codex out to use `codex` on PATH"
        )
    raise LiveSkipped(
        "live matrix skipped: `codex` is not on PATH; install it "
        "(npm install -g @openai/codex) or pass --codex PATH"
    )


def check_configured(env: Mapping[str, str], config: Sequence[str]) -> None:
    """Raise `LiveSkipped` unless Codex has a way to reach a model."""
    if any(env.get(k) for k in _KEY_VARS):
        return
    configured_home = env.get("CODEX_HOME")
    home = Path(configured_home) if configured_home else Path.home() / ".codex"
    if (home / "auth.json").is_file():
        return
    shown = home / "auth.json" if configured_home else "~/.codex/auth.json"
    if any(c.split("=", 1)[0].strip() == "model_provider" for c in config):
        return
    raise LiveSkipped(
        "live matrix skipped: Codex is installed but not configured: set OPENAI_API_KEY, "
        f"run `codex login` (looked for {shown}), or pass a provider with "
        "-c model_provider=... and its -c model_providers.<id>.* settings"
    )


def codex_argv(
    settings: LiveSettings, case: LiveCase, journal: Path, workdir: Path, extra: Sequence[str]
) -> list[str]:
    """`codex exec` with the control plane attached as the `paperclip` MCP server.

    Values are TOML; JSON's strings and arrays of strings are valid TOML.
    MCP tools ask for approval by default, which `exec` can never give: the
    server's tools are approved up front (the control plane decides instead).
    Codex starts MCP servers beside the first model request; on a loaded
    machine the scripted model answered before the server had listed its
    tools, and the turn failed ("never listed", "never called") with nothing
    wrong in the control plane. The server is therefore `required`, ready once
    its tool catalog is known, with a start-up allowance beyond Codex's 10 s.
    """
    server = [
        "-m", "capeval.paperclip.mcpserver",
        "--case", case.row.id,
        "--journal", str(journal),
        "--derivative", str(settings.derivative),
    ]  # fmt: skip
    mcp = f"mcp_servers.{SERVER_NAME}"
    argv = [
        settings.codex, "exec", "--json", "--skip-git-repo-check", "-C", str(workdir),
        "-c", f"{mcp}.command={json.dumps(sys.executable)}",
        "-c", f"{mcp}.args={json.dumps(server)}",
        "-c", f'{mcp}.default_tools_approval_mode="approve"',
        "-c", f"{mcp}.startup_timeout_sec={MCP_STARTUP_TIMEOUT_S}",
        "-c", f"{mcp}.required=true",
        "-c", f'{mcp}.startup_readiness="catalog"',
    ]  # fmt: skip
    model = model_of(settings)
    if model:
        argv += ["-m", model]
    argv += extra  # already `-c key=value` pairs
    for override in settings.config:
        argv += ["-c", override]
    return [*argv, prompt(case)]


def model_of(settings: LiveSettings) -> str | None:
    """The model asked for (None: Codex's configured default)."""
    return settings.model or (SCRIPTED_MODEL if settings.scripted else None)


def read_journal(path: Path) -> list[dict[str, Any]]:
    """The control plane's records; a line torn by a killed server ends the reading.

    What was recorded before it still counts (a call that completed is
    evidence); the judge then sees a turn without the rest.
    """
    if not path.exists():
        return []
    records: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                break
    return records


def run_turn(settings: LiveSettings, case: LiveCase) -> dict[str, Any]:
    """One Codex turn for one case; its JSON Lines row."""
    with tempfile.TemporaryDirectory(prefix="capeval-live-") as tmp:
        journal, workdir = Path(tmp) / "journal.jsonl", Path(tmp) / "work"
        workdir.mkdir()
        env = dict(os.environ)
        extra: list[str] = []
        server = None
        if settings.scripted:
            from capeval.agents.codex import provider_args
            from capeval.agents.modelserver import ModelServer, Script

            server = ModelServer(Script.from_json(settings.script(case))).start()
            extra = [
                *provider_args(SCRIPTED_PROVIDER, f"{server.url}/v1", SCRIPTED_KEY_VAR),
                "-c",
                f"model_provider={SCRIPTED_PROVIDER}",
            ]
            home = Path(tmp) / "codex-home"
            home.mkdir()
            env.update({SCRIPTED_KEY_VAR: "capeval-live", "CODEX_HOME": str(home)})
        argv = codex_argv(settings, case, journal, workdir, extra)
        error: str | None = None
        code: int | None = None
        try:
            # The runner's launcher: on a timeout the whole process group goes,
            # the MCP server Codex started included.
            proc = run_process(argv, cwd=workdir, env=env, timeout_s=settings.timeout_s)
        finally:
            if server is not None:
                server.stop()
        if proc.timed_out:
            error = f"codex did not finish within {settings.timeout_s:g} s"
        else:
            code = proc.exit_code
            if code != 0:
                tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
                error = f"codex exited with {code}: {' | '.join(tail) or 'no stderr'}"
        duration_ms = round(proc.duration_ms)
        records = read_journal(journal)
    failures = judge(case, records, exit_code=code, error=error)
    return live_row(
        case, records, failures, exit_code=code, duration_ms=duration_ms, model=model_of(settings)
    )


def run_matrix(
    settings: LiveSettings,
    cases: Sequence[LiveCase],
    rows_path: Path,
    *,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every case's turn, in order; each row is appended and flushed as its turn ends."""
    rows_path.parent.mkdir(parents=True, exist_ok=True)
    out: list[dict[str, Any]] = []
    with open(rows_path, "w", encoding="utf-8") as handle:
        for case in cases:
            row = run_turn(settings, case)
            handle.write(json.dumps(row, sort_keys=True) + "\n")
            handle.flush()
            out.append(row)
            if progress is not None:
                progress(row)
    return out
