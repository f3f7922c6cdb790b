"""The launching half every stream-printing CLI adapter shares.

Claude Code, Codex, Gemini CLI and opencode differ in flags and in their
event streams, but not in how a repeat runs: start the binary headlessly in
the workdir with stdin closed, under the agent timeout, keep its raw output
outside the workdir (never lose data), parse the stream with the CLI's pure
parser, and fold the process outcome and the stream's own verdict into one
`AgentResult`. Subclasses say only what differs: flags, environment, parser.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from capeval.agents.base import AgentRequest, AgentResult
from capeval.agents.infra import InfraError, from_text
from capeval.agents.streams import BROKE_OFF, ParsedStream, reported_error, unparsed_error
from capeval.core.agentconfig import AgentConfig
from capeval.proc import reaper, strays

if TYPE_CHECKING:
    from capeval.proc.process import ProcessResult

log = logging.getLogger(__name__)

VERSION_TIMEOUT_S = 30.0
# One token per agent launch: what the CLI started in sessions of its own dies
# as the CLI ends, before the grader looks at the workdir.
AGENT_MARK_VAR = "CAPEVAL_AGENT_RUN"
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+.][0-9A-Za-z.-]+)?")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_COMPLAINT = re.compile(r"error|fatal|panic|exception|segmentation fault|killed", re.IGNORECASE)


def stderr_tail(stderr: str, limit: int = 300) -> str | None:
    """The stderr line that best says why a CLI failed, without colour codes.

    The last line naming an error, else the last line: a CLI's final line is
    often detail (opencode ends a failed query with `params:`), not the cause.
    """
    lines = [line.strip() for line in _ANSI.sub("", stderr).splitlines() if line.strip()]
    named = [line for line in lines if _COMPLAINT.search(line)]
    chosen = (named or lines)[-1:]
    return chosen[0][:limit] if chosen else None


def resolve_binary(command: str) -> str | None:
    """The executable `command` names (a path or a name on PATH), as an absolute path, or None.

    Absolute because the CLI is started in the repeat's workdir: a relative
    path (or a relative PATH entry) would name another file, or none, there.
    """
    if os.sep in command or (os.altsep and os.altsep in command):
        path = Path(command).expanduser()
        return os.path.abspath(path) if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(command)
    return os.path.abspath(found) if found else None


def unresolved_reason(command: str) -> str:
    """Why `resolve_binary(command)` found nothing, with the fix: "not found", or
    "exists but is not executable: run chmod +x PATH", said after the command.

    A script that exists without its execute bit was reported "not found",
    which sent its author looking for a file that was right there.
    """
    given = Path(command).expanduser()
    if os.sep in command or (os.altsep and os.altsep in command):
        candidates = [given]
    else:
        candidates = [
            Path(d or ".") / command for d in os.environ.get("PATH", "").split(os.pathsep)
        ]
    for path in candidates:
        if path.is_file() and not os.access(path, os.X_OK):
            where = "" if path == given else f" on PATH at {path}"
            return f"exists{where} but is not executable: run chmod +x {shlex.quote(str(path))}"
    if candidates == [given] and given.is_dir():
        return "is a folder, not a program: name the executable in it"
    return "not found"


def probe_version(
    exe: str,
    args: tuple[str, ...] = ("--version",),
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> str | None:
    """The first version-looking token `exe --version` prints, or None."""
    from capeval.proc.process import run_process

    try:
        proc = run_process(
            [exe, *args], cwd=cwd or Path.cwd(), env=env, timeout_s=VERSION_TIMEOUT_S
        )
    except OSError:
        return None
    m = _VERSION.search(proc.stdout.decode(errors="replace")) if proc.exit_code == 0 else None
    return m.group(0) if m else None


def agent_environment(
    config: AgentConfig,
    request: AgentRequest,
    adapter_env: Mapping[str, str],
    needs: Iterable[str] = (),
) -> dict[str, str]:
    """The agent's environment: the allow-list, then the adapter's, the request's, the config's.

    From capeval's own environment only `PATH`, `LANG`, `LC_ALL`, `TERM`, the
    variables the adapter `needs` (its credentials and endpoints, documented
    per adapter) and the entry's `env_pass` reach the agent
    (`capeval.isolation.environment`); HOME is the repeat's own. The config
    comes last so a user can override anything capeval sets (for example
    point CLAUDE_CONFIG_DIR at their own login).
    """
    from capeval.isolation.environment import agent_environment as allowed

    home = request.home or os.environ.get("HOME") or str(request.capture_dir)
    base = allowed(needs=needs, env_pass=request.env_pass, home=home)
    return {**base, **adapter_env, **request.env, **config.env}


def launch(
    config: AgentConfig, argv: list[str], request: AgentRequest, env: Mapping[str, str]
) -> ProcessResult | AgentResult:
    """Run the agent process under the agent timeout; an AgentResult when it could not start.

    It runs in the request's sandbox (docs/isolation.md). However it ends,
    nothing it started outlives it: its group is killed by `run_process`,
    what it started in sessions of its own by `strays`, and a sandbox's
    whole process tree by the sandbox.
    """
    from capeval.isolation.limits import LimitError
    from capeval.isolation.sandbox import Confinement, Sandbox
    from capeval.proc.process import ProcessCancelled

    sandbox = request.sandbox
    exe = resolve_binary(argv[0])
    if exe is None and sandbox is not None and sandbox.resolves_in_image:
        exe = argv[0]  # not on this host: the image's PATH may have it
    elif exe is None:
        return AgentResult(
            exitCode=None,
            status="failed",
            error=(
                f"agent {config.name!r}: {argv[0]!r} {unresolved_reason(argv[0])}; install it or fix "
                f"`command` in [agents.{config.name}]"
            ),
            errorKind="start",
        )
    else:
        # Found from here (a relative PATH entry or command), run from the workdir.
        exe = os.path.abspath(exe)
    request.capture_dir.mkdir(parents=True, exist_ok=True)
    if sandbox is None:
        from capeval.core.isolation import Isolation

        sandbox = Sandbox(Isolation(), Confinement(name="agent", writable=()))
    # Marked, so that what the CLI started in sessions of its own dies with it.
    mark = strays.new_mark()
    try:
        return sandbox.run(
            [exe, *argv[1:]],
            cwd=request.workdir,
            env={**env, AGENT_MARK_VAR: mark},
            timeout_s=request.timeout_s,
            tools=(exe,) if os.path.isabs(exe) else (),
        )
    except ProcessCancelled as exc:
        return AgentResult(exitCode=None, status="cancelled", error=str(exc))
    except OSError as exc:
        return AgentResult(
            exitCode=None,
            status="failed",
            error=f"could not start {exe}: {exc}",
            errorKind="start",
        )
    except LimitError as exc:
        return AgentResult(
            exitCode=None, status="failed", error=f"sandbox: {exc}", errorKind="capeval"
        )
    finally:
        strays.kill_marked(AGENT_MARK_VAR, mark)


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def classify(
    *, timed_out: bool, cancelled: bool, exit_code: int | None, stream_status: str | None
) -> str:
    """One status from the process outcome and what the stream concluded.

    Timeout and cancellation win (the stream is cut short then); a stream
    that reports failure fails even with exit 0, and a non-zero exit fails
    even when the stream looked fine.
    """
    if timed_out:
        return "timeout"
    if cancelled:
        return "cancelled"
    if exit_code != 0 or stream_status == "failed":
        return "failed"
    return stream_status or "done"


class CliAdapter:
    """Base for adapters that launch one CLI and parse its JSON-lines stdout."""

    type: ClassVar[str]
    default_binary: ClassVar[str]
    version_args: ClassVar[tuple[str, ...]] = ("--version",)
    # What the CLI reads from capeval's environment: its credentials and
    # endpoints (docs/agents.md#environment). Nothing else of it is passed.
    env_needs: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    @staticmethod
    def parse(lines: Iterable[str]) -> ParsedStream:
        """The CLI's pure stream parser; each adapter sets its own."""
        raise NotImplementedError

    # -- what subclasses define ------------------------------------------

    @classmethod
    def parse_timed(cls, lines: list[tuple[str, float | None]]) -> ParsedStream:
        """Parse stdout lines that carry their arrival time (epoch ms).

        Most CLIs stamp their own events; one that does not (Codex) overrides
        this to time its turns by when their events reached capeval.
        """
        return cls.parse(line for line, _ in lines)

    def cli_args(self, request: AgentRequest) -> list[str]:
        """Flags before `config.args`; the prompt is added by `prompt_args`."""
        raise NotImplementedError

    def prompt_args(self, request: AgentRequest) -> list[str]:
        # `--` ends option parsing, so a prompt starting with `-` stays a prompt.
        return ["--", request.prompt]

    def cli_env(self, request: AgentRequest) -> dict[str, str]:
        """Variables the adapter sets (config isolation, quiet side traffic)."""
        return {}

    def exit_infra(self, exit_code: int | None, stderr: str) -> InfraError | None:
        """What the exit of a CLI whose stream reached no verdict says of an outage.

        Only then: a run its stream judged keeps the stream's word. opencode
        prints no final event, so its stderr is read when it exits non-zero
        without an `error` event.
        """
        if exit_code in (0, None):
            return None
        return from_text(stderr_tail(stderr) or "")

    def amend(self, parsed: ParsedStream, request: AgentRequest) -> ParsedStream:
        """What the CLI's own files (in its isolated home) say beyond its stream.

        Streams can leave model responses out (Codex's hidden tools, an empty
        response from Claude Code or Gemini CLI): their adapters count them in
        the CLI's session log here, so a turn budget sees every response.
        """
        return parsed

    # -- shared ------------------------------------------------------------

    def home_of(self, request: AgentRequest, var: str, name: str, copied: str = "") -> Path:
        """The config home a run used: `var` from the config or request env (they win
        over the adapter's, as in `agent_environment`), else the copy in the repeat's
        home (`copied`, from `home_dirs`), else the isolated `name`."""
        given = {**request.env, **self.config.env}.get(var)
        return Path(given) if given else Path(config_home(request, copied, name, make=False))

    @property
    def binary(self) -> str:
        return self.config.command or self.default_binary

    def argv(self, request: AgentRequest) -> list[str]:
        return [
            self.binary,
            *self.cli_args(request),
            *self.config.args,
            *self.prompt_args(request),
        ]

    def environment(self, request: AgentRequest) -> dict[str, str]:
        return agent_environment(self.config, request, self.cli_env(request), self.env_needs)

    def version(self) -> str | None:
        """The CLI's version, asked in the environment of a run.

        Even `--version` writes to the CLI's home (Gemini CLI registers the
        folder in `~/.gemini/projects.json`, opencode makes its directories),
        so it runs with a throwaway config home and working directory.
        """
        exe = resolve_binary(self.binary)
        if exe is None:
            return None
        # The reaper's kind of temp dir: a run killed mid-probe leaves none behind.
        with reaper.temp_dir("capeval-version-") as scratch:
            tmp = str(scratch)
            request = AgentRequest(
                workdir=scratch,
                prompt="",
                provider="",
                model="",
                case_dir=scratch,
                capture_dir=scratch / "capture",
                env={"TMPDIR": tmp},
            )
            env = self.environment(request)
            return probe_version(exe, self.version_args, env=env, cwd=scratch)

    def run(self, request: AgentRequest) -> AgentResult:
        started = datetime.now(UTC)
        proc = launch(self.config, self.argv(request), request, self.environment(request))
        if isinstance(proc, AgentResult):
            return proc

        stdout = proc.stdout.decode(errors="replace")
        stderr = proc.stderr.decode(errors="replace")
        (request.capture_dir / f"{self.type}-stream.jsonl").write_text(stdout)
        (request.capture_dir / f"{self.type}-stderr.log").write_text(stderr)

        parsed = self.amend(self.parse_timed(proc.stdout_lines()), request)
        status = classify(
            timed_out=proc.timed_out,
            cancelled=proc.cancelled,
            exit_code=proc.exit_code,
            stream_status=parsed.status,
        )
        duration = parsed.durationMs if parsed.durationMs is not None else proc.duration_ms
        error = parsed.error
        if status == "timeout":
            error = f"agent timed out after {request.timeout_s:g} s"
            # What the CLI last complained of, when it did: Codex without a
            # network retries until the timeout, saying why in its stream.
            reported = reported_error(parsed)
            if reported:
                error += f"; the last error in its stream: {reported[:300]}"
        elif status == "failed":
            tail = stderr_tail(stderr)
            if error is None:
                error = f"{self.type} exit code {proc.exit_code}" + (f": {tail}" if tail else "")
            elif proc.exit_code != 0 and tail and reported_error(parsed) is None:
                # The stream merely stopped (a crash, a kill): why is on stderr.
                error += f"; stderr: {tail}"

        lost = unparsed_error(parsed)
        if lost is not None:
            error = f"{error}; {lost}" if error else lost
        infra = None
        if status == "failed":
            # A timeout is the agent's (it ran out of time): only a run that ended
            # otherwise can have measured nothing (docs/agents.md#outcome-signals).
            infra = parsed.infra or (BROKE_OFF if lost is not None else None)
            if parsed.status is None or infra is BROKE_OFF:
                # No verdict in the stream: the exit and stderr may say more.
                infra = self.exit_infra(proc.exit_code, stderr) or infra
        # A stream with no turn at all was not captured, and one with events cut
        # short was not parsed: behaviors must be null then, not zeros or a part.
        summary = None
        if lost is None and (parsed.summary.turns or parsed.sessionId is not None):
            summary = replace(
                parsed.summary,
                status=status,
                startedAt=started.isoformat(),
                finishedAt=(started + timedelta(milliseconds=proc.duration_ms)).isoformat(),
                durationMs=duration,
                error=error,
            )
        return AgentResult(
            exitCode=proc.exit_code,
            status=status,
            sessionId=parsed.sessionId,
            provider=parsed.provider,
            model=parsed.model,
            turnsUsed=parsed.summary.turnsUsed if summary is not None else None,
            toolCallCount=parsed.summary.toolCallCount if summary is not None else None,
            tokenUsage=parsed.summary.tokenUsage,
            costUsd=parsed.costUsd,
            durationMs=duration,
            textPreview=parsed.textPreview,
            summary=summary,
            error=error,
            agentVersion=parsed.agentVersion,
            errorKind=infra.kind if infra is not None else None,
            providerStatus=infra.status if infra is not None else None,
        )


def isolated_dir(request: AgentRequest, name: str) -> str:
    """A per-repeat config directory inside capture_dir, so a CLI's own config never leaks in."""
    path = request.capture_dir / name
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def config_home(request: AgentRequest, copied: str, name: str, *, make: bool = True) -> str:
    """A CLI's config directory for one repeat: the repeat's copy of the user's
    (`copied`, e.g. `.claude`, when the entry's `home_dirs` brought it into the
    repeat's home), else a fresh `name` in the capture dir."""
    if copied and request.home is not None and (request.home / copied).is_dir():
        return str(request.home / copied)
    return isolated_dir(request, name) if make else str(request.capture_dir / name)


def runs_sandboxed(request: AgentRequest) -> bool:
    """The request runs in a bwrap or Docker sandbox, not as capeval's plain child."""
    return request.sandbox is not None and request.sandbox.sandboxed
