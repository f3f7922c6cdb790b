"""The live matrix: real agent CLIs (Codex, Claude Code) against the mock control plane, opt-in.

Each turn runs one agent CLI headless with the mock control plane attached
as its `paperclip` MCP server (`capeval.paperclip.mcpserver`, started by the
CLI itself; `capeval.paperclip.liveagents` says how per CLI), so every call
the agent makes is decided by the same control plane the offline suite uses.
The verdict comes from the control plane's journal (`livejudge.judge`).

A matrix is every configuration of one row per group (optional-tool rows
granted and ungranted, `livecases.live_cases`), for each agent, `repeats`
times: a model's conformance is a rate, not a bit. A turn whose outcome is
`error` (the measurement did not happen) is run again on capability
repeats' schedule (`capeval.runner.retry`: up to `retries` more times, waits
doubling from `--retry-wait`, with jitter), each attempt in a fresh scratch
directory; only the last attempt's row is written, with `attempts` and the
earlier attempts' errors. Rows go through the result stream writer
(`capeval.results.jsonl.JsonlWriter`: appended, fsynced, locked), one per
turn as it ends.

An agent must be installed and configured (an API key or a login, or for
Codex a provider passed with `-c`); otherwise it is skipped with a message
saying which. `scripted=True` answers for the model with the scripted model
server (the fake agent's plan, replayed through the CLI's own tool loop):
the wiring and the judge are then tested offline, with no model and no
network.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval import __version__
from capeval.agents.cliadapter import resolve_binary
from capeval.core.outcome import ERROR
from capeval.paperclip.liveagents import AGENTS, LiveAgent, LiveSkipped, version_of
from capeval.paperclip.livecases import ABSENT_TOOLS, LISTED_TOOLS, LiveCase, prompt, scripted_calls
from capeval.paperclip.livejudge import judge, live_fields
from capeval.proc.process import run_process
from capeval.runner.retry import RetryPolicy, retrying

DEFAULT_TIMEOUT_S = 300.0
LIVE_DIR = "live"  # under the evidence folder, where `report` finds the rows by default
ROWS_FILE = "live-rows.jsonl"
__all__ = ["LiveSkipped"]


class AgentNotFound(ValueError):
    """An explicitly named agent binary that is not an executable: bad input, not a skip.

    A skip exits 0, so a mistyped `--codex` would read as "nothing to do" in CI
    and the matrix the user asked for would silently never run.
    """


@dataclass(frozen=True)
class LiveRunner:
    """One agent of the matrix: which CLI, which binary, which model (None: its default)."""

    agent: LiveAgent
    binary: str
    model: str | None = None
    version: str | None = None

    @property
    def name(self) -> str:
        return self.agent.name


@dataclass(frozen=True)
class LiveSettings:
    derivative: Path
    config: tuple[str, ...] = ()  # extra `-c key=value` overrides for Codex
    scripted: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    repeats: int = 1
    retry: RetryPolicy = field(default_factory=RetryPolicy)  # as `capeval run --retries`
    ungranted_tools: str = ABSENT_TOOLS
    # What the scripted model does per case (default: the fake agent's plan);
    # tests hand in a misbehaving model to see the matrix fail.
    script: Callable[[LiveCase], list[dict[str, Any]]] = scripted_calls
    # The MCP server the CLI starts (default: this Python's capeval.paperclip.mcpserver);
    # tests hand in one that breaks to see a turn that never saw the surface.
    server: tuple[str, ...] = ()


def find_agent(agent: LiveAgent, binary: str | None = None) -> str:
    """The agent's binary (an absolute path: the CLI runs in a scratch directory).

    Raises `LiveSkipped` when none was named and the default is not on PATH,
    and `AgentNotFound` when the named one is not an executable.
    """
    found = resolve_binary(binary or agent.binary)
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
        raise AgentNotFound(
            f"{agent.flag} {binary!r} {why}; pass the path of the {agent.binary} binary "
            f"(e.g. node_modules/.bin/{agent.binary}), or leave {agent.flag} out to use "
            f"`{agent.binary}` on PATH"
        )
    raise LiveSkipped(
        f"live matrix skipped for {agent.name}: `{agent.binary}` is not on PATH; install it "
        f"({agent.install}) or pass {agent.flag} PATH"
    )


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


def server_argv(settings: LiveSettings, case: LiveCase, journal: Path) -> list[str]:
    """The MCP server the CLI starts for one configuration of one case."""
    argv = [
        *(settings.server or (sys.executable, "-m", "capeval.paperclip.mcpserver")),
        "--case", case.row.id,
        "--journal", str(journal),
        "--derivative", str(settings.derivative),
    ]  # fmt: skip
    if not case.granted:
        argv.append("--ungranted")
        if settings.ungranted_tools == LISTED_TOOLS:
            argv.append("--list-granted")
    return argv


def model_of(settings: LiveSettings, runner: LiveRunner) -> str | None:
    """The model asked for (None: the CLI's configured default)."""
    return runner.model or (runner.agent.scripted_model if settings.scripted else None)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def run_turn(settings: LiveSettings, runner: LiveRunner, case: LiveCase) -> dict[str, Any]:
    """One attempt at one turn: the CLI started, the journal judged; the row's fields."""
    agent = runner.agent
    started = _now()
    with tempfile.TemporaryDirectory(prefix="capeval-live-") as tmp:
        journal, workdir, home = Path(tmp) / "journal.jsonl", Path(tmp) / "work", Path(tmp) / "home"
        workdir.mkdir()
        home.mkdir()
        env = {**os.environ, **agent.env(home)}
        extra: list[str] = []
        server = None
        if settings.scripted:
            from capeval.agents.modelserver import ModelServer, Script

            script = Script.from_json(agent.render(settings.script(case)))
            server = ModelServer(script).start()
            extra, scripted_env = agent.scripted(server.url, home)
            env.update(scripted_env)
        if agent.name == "codex":
            for override in settings.config:
                extra += ["-c", override]
        model = model_of(settings, runner)
        argv = agent.argv(
            runner.binary, prompt(case), server_argv(settings, case, journal), workdir, model, extra
        )
        try:
            # The runner's launcher: on a timeout the whole process group goes,
            # the MCP server the CLI started included.
            proc = run_process(argv, cwd=workdir, env=env, timeout_s=settings.timeout_s)
        finally:
            if server is not None:
                server.stop()
        records = read_journal(journal)
    stdout = proc.stdout.decode(errors="replace")
    stderr = proc.stderr.decode(errors="replace")
    error: str | None = None
    code: int | None = None
    infra: str | None = None
    if proc.timed_out:
        error = f"{agent.name} did not finish within {settings.timeout_s:g} s"
        report = agent.report(stdout, stderr, None)
        if report.last_error:
            # As `capeval run` says it: a CLI that cannot reach its model retries
            # until the timeout, and only its stream says why.
            error += f"; the last error in its stream: {report.last_error[:300]}"
        refused = report.cli_refused
    else:
        code = proc.exit_code
        report = agent.report(stdout, stderr, code)
        refused, infra = report.cli_refused, report.infra_error
        if code != 0:
            tail = stderr.strip().splitlines()[-3:]
            error = f"{agent.name} exited with {code}: {' | '.join(tail) or 'no stderr'}"
    verdict = judge(
        case, records, exit_code=code, error=error, infra_error=infra, cli_refused=refused
    )
    status = "timeout" if proc.timed_out else ("done" if code == 0 else "failed")
    # The journal's reason first: a CLI whose MCP server never listed its tools may then
    # report its own stream as broken off, which is the consequence, not the cause.
    kind = verdict.error_kind or report.error_kind
    # Why the turn could not be measured, or why the CLI failed; judged failures are `failures`.
    why = infra or error or (verdict.failures[0].message if verdict.outcome == ERROR else None)
    return {
        **live_fields(case, records, verdict, cli_refused=refused),
        "id": case.config_id,
        "variantId": agent.name,
        "resultKey": f"{agent.name}::{case.config_id}",
        "agent": agent.name,
        "agentVersion": runner.version,
        "requestedModel": model,
        "model": report.model or model,
        "scripted": settings.scripted,
        "ungrantedTools": None if case.granted else settings.ungranted_tools,
        "agentExitCode": code,
        "status": status,
        "errorKind": kind if verdict.outcome == ERROR else None,
        "providerStatus": report.provider_status if verdict.outcome == ERROR else None,
        "error": why,
        "durationMs": round(proc.duration_ms),
        "startedAt": started,
        "finishedAt": _now(),
    }


def run_with_retries(
    settings: LiveSettings,
    runner: LiveRunner,
    case: LiveCase,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """The turn, run again while its outcome is `error`, on capability repeats' schedule
    (`capeval.runner.retry.retrying`: `settings.retry`'s retries and doubling waits)."""
    attempts: list[dict[str, Any]] = []

    def attempt() -> dict[str, Any]:
        attempts.append(run_turn(settings, runner, case))
        return attempts[-1]

    row: dict[str, Any] = retrying(settings.retry, sleep=sleep)(attempt)
    errors = [str(a.get("error") or a["outcome"]) for a in attempts[:-1]]
    return {**row, "attempts": len(attempts), "attemptErrors": errors}


def run_matrix(
    settings: LiveSettings,
    runners: Sequence[LiveRunner],
    cases: Sequence[LiveCase],
    rows_path: Path,
    *,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every turn (repeat by repeat, agent by agent, case by case), each row appended and
    made durable as its turn ends."""
    from capeval.results.jsonl import JsonlWriter

    run_id, run_started = uuid.uuid4().hex, _now()
    out: list[dict[str, Any]] = []
    with JsonlWriter(rows_path) as writer:
        for repeat in range(settings.repeats):
            for runner in runners:
                for case in cases:
                    row = {
                        **run_with_retries(settings, runner, case),
                        "repeat": repeat,
                        "runId": run_id,
                        "runStartedAt": run_started,
                        "capevalVersion": __version__,
                    }
                    writer.write(row)
                    out.append(row)
                    if progress is not None:
                        progress(row)
    return out


def make_runner(name: str, binary: str | None, model: str | None) -> LiveRunner:
    """The runner of agent `name`: its binary found, its version asked once."""
    agent = AGENTS[name]
    found = find_agent(agent, binary)
    return LiveRunner(agent, found, model, version_of(found))
