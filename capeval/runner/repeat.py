"""One repeat, end to end (docs/running.md#one-repeat): workdir, agent, grader, verdict, row.

Every repeat gets its own temp directory holding the workdir and, beside it,
the capture directory, so nothing the agent or grader can see leaks into the
measurement and nothing one repeat does can touch another. The agent and the
grader each get a `$TMPDIR` inside it too: temp files one repeat's agent
leaves behind cannot be read by the next repeat or by the grader, and are
deleted with the repeat (opencode, for one, unpacks a 5 MiB library into
`$TMPDIR` on every run and never removes it). Whatever happens
(timeouts, an adapter that raises, Ctrl-C), the HTTP fixture is stopped, the
repeat's process groups are killed and the temp directory is removed. Before
that, when the run keeps artifacts, the repeat's evidence (capture files,
grader output, run summary) is copied out (`capeval.runner.artifacts`) and
the row's `artifacts` field points at it.

The agent and the grader each run in the repeat's sandbox
(`capeval.isolation`, docs/isolation.md): with `bwrap` or `docker` the
agent sees its workdir, temp dir, capture dir and a home of its own, never
the workspace, the results or another repeat; the grader runs from a copy
of the case folder taken before the agent started, with the workdir's git
configuration as capeval made it. Both get an environment built from an
allow-list, whatever the backend.

A repeat interrupted by a shutdown produces no row at all: `--resume` then
runs it again, which is better than a row that records an interruption as a
failure of the agent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from capeval.agents.base import Adapter, AgentRequest, AgentResult
from capeval.core.agentconfig import AgentConfig
from capeval.core.case import Case
from capeval.core.isolation import Isolation
from capeval.core.matrix import Variant
from capeval.core.outcome import ERROR, ERROR_KINDS, FAILED, PASSED
from capeval.core.passrule import decide, effective_budget, is_over_budget, provider_mismatch
from capeval.core.redact import redact, redact_text, secret_values
from capeval.core.row import IDENTITY_FIELDS, Row, result_key
from capeval.isolation.backends import make_sandbox
from capeval.isolation.bridge import HttpBridge
from capeval.isolation.environment import grader_environment
from capeval.isolation.limits import LimitError
from capeval.isolation.sandbox import Confinement, Sandbox
from capeval.proc import process, reaper
from capeval.runner.artifacts import (
    ArtifactBudget,
    relative_to_rows,
    repeat_dir,
    save_repeat_artifacts,
    verify_log,
)
from capeval.runner.httpfixture import HttpFixture
from capeval.runner.workdir import (
    WorkdirCache,
    WorkdirError,
    grader_git_env,
    prepare_workdir,
    restore_git_config,
    saved_git_config,
)

VERIFY_KILL_GRACE_S = 5.0
# Past the agent timeout, the adapter gets this long to stop its own process
# (SIGTERM, then SIGKILL) before the runner kills the repeat's groups itself.
WATCHDOG_MARGIN_S = VERIFY_KILL_GRACE_S + 5.0
PREVIEW_CHARS = 400


class RepeatCancelled(Exception):
    """The run is shutting down; this repeat's result must not be recorded."""


@dataclass(frozen=True)
class RepeatSettings:
    """What is the same for every repeat of a run."""

    root: Path
    agent_timeout_s: float = 1200.0
    verify_timeout_s: float = 120.0
    max_turns: int | None = None
    skip_permissions: bool = True
    allow_provider_fallback: bool = False
    verify_kill_grace_s: float = VERIFY_KILL_GRACE_S
    tmp_parent: Path | None = None
    workdirs: WorkdirCache | None = None  # per-run committed fixture templates
    context: Mapping[str, Any] = field(default_factory=dict)  # run context fields of the row
    artifacts_dir: Path | None = None  # where each repeat's evidence goes; None keeps none
    rows_dir: Path | None = None  # the row stream's folder: row `artifacts` is relative to it
    artifact_budget: ArtifactBudget | None = None  # what the whole run may still keep
    # What a sandbox masks (the workspace, results, baseline, the row stream's and
    # artifacts' folders), and what of it must never be shown again, not even read-only.
    hidden: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()
    # A repeat whose outcome is `error` runs again up to `retries` more times, the
    # first wait `retry_wait_s` (docs/running.md#retries; capeval.runner.retry).
    retries: int = 2
    retry_wait_s: float = 10.0


@dataclass(frozen=True)
class RepeatJob:
    case: Case
    variant: Variant
    repeat: int
    agent: AgentConfig
    agent_version: str | None = None
    isolation: Isolation = field(default_factory=Isolation)
    # Attempts already made for this repeat: a `--retry-errors` resume runs a
    # repeat again whose last row (an `error`) counted these.
    prior_attempts: int = 0

    @property
    def triple(self) -> tuple[str, str, int]:
        return (self.variant.id, self.case.id, self.repeat)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _private_dir(base: Path, name: str) -> Path:
    path = base / name
    path.mkdir(mode=0o700)
    return path


def run_repeat(
    job: RepeatJob, adapter: Adapter, settings: RepeatSettings, *, attempt: int = 1
) -> Row:
    """Run one attempt of a repeat and return its row (redacted). Raises RepeatCancelled
    on shutdown.

    `attempt` counts from 1 over every attempt the repeat was given (a retry of an
    `error`, a `--retry-errors` resume); the row records it as `attempts`, and
    the repeat's artifacts folder keeps the earlier attempts' evidence.
    """
    started_at = now_iso()
    t0 = time.monotonic()
    case = job.case
    try:
        base = Path(tempfile.mkdtemp(prefix=f"capeval-{case.id}-", dir=settings.tmp_parent))
    except OSError as exc:  # a full $TMPDIR: this repeat's failure, not a traceback
        if process.is_shutting_down():
            raise RepeatCancelled from exc
        return _setup_failed_row(job, settings, started_at, t0, f"no temp folder: {exc}", attempt)
    workdir, capture = base / "work", base / "capture"
    fixture: HttpFixture | None = None
    secrets: list[str] = []
    artifacts: tuple[str | None, str | None] = (None, None)
    iso = job.isolation
    socket_dir: Path | None = None
    try:
        with process.process_scope(f"{job.variant.id}::{case.id}#{job.repeat}") as scope:
            try:
                capture.mkdir()
                prepare_workdir(settings.root, case, dest=workdir, cache=settings.workdirs)
                agent_tmp, verify_tmp = (
                    _private_dir(base, "agent-tmp"),
                    _private_dir(base, "verify-tmp"),
                )
                agent_home, verify_home = (
                    _private_dir(base, "home"),
                    _private_dir(base, "verify-home"),
                )
                # Taken before the agent starts, out of its sight: the grader runs this copy.
                case_copy = _copy_case(case, base / "case")
                git_config = saved_git_config(workdir)
                _copy_home_dirs(iso.home_dirs, agent_home)
            except (WorkdirError, OSError) as exc:
                if process.is_shutting_down():  # Ctrl-C also reaches our own git calls
                    raise RepeatCancelled from exc
                return _setup_failed_row(job, settings, started_at, t0, str(exc), attempt)

            agent_env = {"TMPDIR": str(agent_tmp)}
            grader_env = {
                **grader_environment(
                    env_pass=iso.env_pass,
                    credentials=getattr(adapter, "env_needs", ()),
                    home=verify_home,
                ),
                **grader_git_env(workdir),
                "TMPDIR": str(verify_tmp),
            }
            bridge: HttpBridge | None = None
            if case.httpFixture:
                socket: Path | None = None
                if iso.sandboxed and iso.network != "shared":
                    socket, socket_dir = _socket_path(base)
                fixture = HttpFixture(site=case.pages_path, unix_socket=socket).start()
                bridge = HttpBridge(socket, fixture.port) if socket is not None else None
                agent_env["EVAL_HTTP_URL"] = fixture.url
                grader_env["EVAL_HTTP_URL"] = fixture.url
                grader_env["EVAL_HTTP_TOKEN"] = fixture.token
            # git's GIT_CONFIG_KEY_<n> names a setting, not a secret.
            graders = {k: v for k, v in grader_env.items() if not k.startswith("GIT_CONFIG_")}
            secrets = secret_values(os.environ, job.agent.env, graders)

            name = f"{case.id[:40]}-{job.repeat}"
            run_tmp = (settings.tmp_parent,) if settings.tmp_parent else ()
            hidden = (*settings.hidden, *run_tmp)
            protected = (*settings.protected, *run_tmp)
            agent_box = make_sandbox(
                iso,
                Confinement(
                    name=f"{name}-agent",
                    writable=(workdir, capture, agent_tmp, agent_home),
                    hidden=hidden,
                    protected=protected,
                    http=bridge,
                ),
            )
            request = AgentRequest(
                workdir=workdir,
                prompt=case.render_prompt(fixture.url if fixture else None),
                provider=job.variant.provider,
                model=job.variant.model,
                case_dir=case.dir,
                capture_dir=capture,
                timeout_s=settings.agent_timeout_s,
                max_turns=effective_budget(case.maxTurns, settings.max_turns),
                skip_permissions=settings.skip_permissions,
                env=agent_env,
                http_url=fixture.url if fixture else None,
                home=agent_home,
                sandbox=agent_box,
                env_pass=iso.env_pass,
            )
            result = _run_agent(adapter, request, scope, settings.agent_timeout_s)
            if process.is_shutting_down():
                raise RepeatCancelled

            # The agent may have rewritten .git/config (a core.fsmonitor or a
            # filter runs when the grader calls git): the grader gets capeval's.
            restore_git_config(workdir, git_config)
            grader_box = make_sandbox(
                iso,
                Confinement(
                    name=f"{name}-grader",
                    writable=(workdir, verify_tmp, verify_home),
                    readable=(case_copy,),
                    hidden=hidden,
                    protected=protected,
                    http=bridge,
                ),
            )
            verify_argv = ["bash", str(case_copy / case.verify)]
            graded, grader_broke = _grade(grader_box, verify_argv, workdir, grader_env, settings)
            if grader_broke and result.errorKind is None:
                result.errorKind = "capeval"  # the grader's sandbox failed: nothing was judged
            if process.is_shutting_down():
                raise RepeatCancelled
            artifacts = _keep_artifacts(
                job, settings, capture, result, graded, verify_argv, secrets, attempt
            )
    finally:
        if fixture is not None:
            fixture.stop()
        reaper.remove_tree(base)
        if socket_dir is not None:
            reaper.remove_tree(socket_dir)

    row = _row(job, settings, result, graded, started_at, t0, artifacts)
    row["attempts"] = attempt
    return _redacted(row, job, secrets)


def _grade(
    sandbox: Sandbox,
    argv: list[str],
    workdir: Path,
    env: Mapping[str, str],
    settings: RepeatSettings,
) -> tuple[process.ProcessResult, bool]:
    """The grader's run in its sandbox, and whether its sandbox could not be set up
    (the grade then fails, and the repeat measured nothing)."""
    try:
        graded = sandbox.run(
            argv,
            cwd=workdir,
            env=env,
            timeout_s=settings.verify_timeout_s,
            kill_grace_s=settings.verify_kill_grace_s,
        )
    except process.ProcessCancelled as exc:
        raise RepeatCancelled from exc
    except LimitError as exc:
        message = f"capeval: the grader's sandbox: {exc}\n".encode()
        broken = process.ProcessResult(
            exit_code=126, timed_out=False, duration_ms=0.0, stdout=b"", stderr=message
        )
        return broken, True
    return graded, False


def _copy_case(case: Case, dest: Path) -> Path:
    """The case folder as it is now, for the grader: what the agent does later cannot change it."""
    shutil.copytree(case.dir, dest, symlinks=True)
    return dest


def _copy_home_dirs(entries: tuple[str, ...], home: Path) -> None:
    """Copies of the agent's `home_dirs` (from the user's home) in the repeat's home.

    Copied, never bound: what the agent changes there (a login refreshed, a
    history written) dies with the repeat. An entry the user does not have is
    left out.
    """
    from capeval.core.isolation import home_relative

    user_home = os.environ.get("HOME")
    if not entries or not user_home:
        return
    for entry in entries:
        rel = home_relative(entry)
        src, dest = Path(user_home, rel), home.joinpath(*rel.parts)
        if not src.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            if src.is_dir():
                shutil.copytree(src, dest, symlinks=True, ignore_dangling_symlinks=True)
            else:
                shutil.copy2(src, dest)
        except (shutil.Error, OSError) as exc:
            raise OSError(
                f"home_dirs {entry!r}: cannot copy it into the sandbox home: {exc}"
            ) from None


def _socket_path(base: Path) -> tuple[Path, Path | None]:
    """Where the HTTP fixture's Unix socket goes: in the repeat's folder when the path
    is short enough for a socket (107 bytes), else in a short folder of its own."""
    path = base / "http.sock"
    if len(os.fsencode(path)) < 100:
        return path, None
    folder = Path(tempfile.mkdtemp(prefix="capeval-http-", dir="/tmp"))
    return folder / "http.sock", folder


def _keep_artifacts(
    job: RepeatJob,
    settings: RepeatSettings,
    capture: Path,
    result: AgentResult,
    graded: process.ProcessResult,
    verify_argv: list[str],
    secrets: list[str],
    attempt: int = 1,
) -> tuple[str | None, str | None]:
    """(the row's `artifacts` path, a note when they could not be saved).

    A full disk or a permission problem costs the evidence, never the row.
    A later attempt keeps the earlier one's folder inside its own.
    """
    if settings.artifacts_dir is None:
        return None, None
    dest = repeat_dir(settings.artifacts_dir, job.variant.id, job.case.id, job.repeat)
    shown = relative_to_rows(dest, settings.rows_dir or settings.artifacts_dir.parent)
    log = verify_log(
        [*verify_argv[:1], job.case.verify],
        graded.exit_code,
        graded.duration_ms,
        graded.stdout,
        graded.stderr,
    )
    try:
        save_repeat_artifacts(
            dest,
            capture_dir=capture,
            verify=log,
            summary=result.summary.to_json() if result.summary is not None else None,
            secrets=secrets,
            budget=settings.artifact_budget,
            earlier=attempt - 1 if attempt > 1 else None,
        )
    except OSError as exc:
        return None, f"artifacts not saved to {shown}: {type(exc).__name__}: {exc.strerror or exc}"
    return shown, None


def _run_agent(
    adapter: Adapter, request: AgentRequest, scope: process.ProcessScope, timeout_s: float
) -> AgentResult:
    """The adapter's run, with a watchdog in case it does not honour its timeout."""
    fired = threading.Event()

    def expire() -> None:
        fired.set()
        scope.cancel("agent timeout")

    watchdog = threading.Timer(timeout_s + WATCHDOG_MARGIN_S, expire)
    watchdog.daemon = True
    t0 = time.monotonic()
    watchdog.start()
    try:
        result = adapter.run(request)
    except process.ProcessCancelled as exc:
        if process.is_shutting_down():
            raise RepeatCancelled from exc
        result = AgentResult(exitCode=None, status="timeout", error=str(exc))
    except Exception as exc:  # an adapter bug must cost one repeat, not the run
        result = AgentResult(
            exitCode=None,
            status="failed",
            error=f"adapter {type(exc).__name__}: {exc}",
            errorKind="capeval",  # capeval failed, not the agent: nothing was measured
        )
    finally:
        watchdog.cancel()
    if result.durationMs is None:
        result.durationMs = (time.monotonic() - t0) * 1000.0
    if fired.is_set():
        result.status = "timeout"
        result.error = result.error or f"agent timed out after {timeout_s:g} s"
    if result.status == "timeout":
        # The agent ran out of its time: judged (failed), whatever broke meanwhile.
        result.errorKind = result.providerStatus = None
    # Rejoin the scope: a timeout cancel must not stop the grader from running.
    scope.reopen()
    return result


def _behaviors(result: AgentResult) -> tuple[dict[str, Any] | None, str | None]:
    # No model turn (no login, the API unreachable): there was no behavior to
    # measure, and zeros would pull the cell's medians down (a bait would seem
    # to stop reproducing on a baseline, a candidate would seem to improve).
    if result.summary is None or not result.summary.turns:
        return None, None
    try:
        from capeval.core.behaviors import derive_behaviors

        return dict(derive_behaviors(result.summary)), None
    except Exception as exc:  # a metrics bug must show up, not become zeros
        return None, f"behaviors not derived: {type(exc).__name__}: {exc}"


def _row(
    job: RepeatJob,
    settings: RepeatSettings,
    result: AgentResult,
    graded: process.ProcessResult,
    started_at: str,
    t0: float,
    artifacts: tuple[str | None, str | None] = (None, None),
) -> Row:
    case, variant = job.case, job.variant
    behaviors, behaviors_error = _behaviors(result)
    budget = effective_budget(case.maxTurns, settings.max_turns)
    over = is_over_budget(budget, result.turnsUsed)
    mismatch = provider_mismatch(variant.provider, variant.model, result.provider, result.model)
    verdict = decide(
        agent_exit_code=result.exitCode,
        verify_exit_code=graded.exit_code,
        over_budget=over,
        budget=budget,
        turns_used=result.turnsUsed,
        requirements=case.requireBehaviors,
        behaviors=behaviors,
        provider_error=None if settings.allow_provider_fallback else mismatch,
        agent_error=result.error,
        agent_status=result.status,
    )
    errors = list(verdict.reasons)
    if result.error and result.exitCode == 0 and result.status in (None, "done"):
        # The pass rule reads the adapter's diagnosis only for a failed exit; a
        # run that exited 0 with an unusable or missing summary left no word
        # of it in the row (behaviors null, error null).
        errors.append(f"agent: {result.error}")
    if verdict.passed and mismatch:
        errors.append(f"accepted with --allow-provider-fallback: {mismatch}")
    if behaviors_error:
        errors.append(behaviors_error)
    if not verdict.passed and graded.exit_code not in (0, None):
        tail = _tail(graded.stdout + graded.stderr)
        if tail:
            errors.append(f"grader output: {tail}")
    artifacts_path, artifacts_error = artifacts
    if artifacts_error:
        errors.append(artifacts_error)
    outcome = repeat_outcome(verdict.passed, result.errorKind)
    if outcome == ERROR:
        # Said first: whatever else failed, this is why the repeat measured nothing.
        status = f" {result.providerStatus}" if result.providerStatus is not None else ""
        errors.insert(
            0, f"not measured ({result.errorKind}{status}): {ERROR_KINDS[str(result.errorKind)]}"
        )
    return _assemble(
        job,
        settings,
        started_at=started_at,
        t0=t0,
        provider=result.provider or variant.provider,
        model=result.model or variant.model,
        passed=outcome == PASSED,
        outcome=outcome,
        errorKind=result.errorKind if outcome == ERROR else None,
        providerStatus=result.providerStatus,
        agentExitCode=result.exitCode,
        verifyExitCode=graded.exit_code,
        agentDurationMs=_ms(result.durationMs),
        verifyDurationMs=_ms(graded.duration_ms),
        status=result.status,
        sessionId=result.sessionId,
        turnsUsed=result.turnsUsed,
        toolCallCount=result.toolCallCount,
        tokenUsage=result.tokenUsage.to_json() if result.tokenUsage else None,
        costUsd=result.costUsd,
        maxTurns=budget,
        overBudget=over,
        error="; ".join(errors) or None,
        behaviors=behaviors,
        textPreview=(result.textPreview or "")[:PREVIEW_CHARS],
        agentVersion=result.agentVersion or job.agent_version,
        artifacts=artifacts_path,
    )


def _setup_failed_row(
    job: RepeatJob,
    settings: RepeatSettings,
    started_at: str,
    t0: float,
    error: str,
    attempt: int = 1,
) -> Row:
    """A repeat whose workdir could not be made: failed, and redacted like any row
    (the error quotes paths and git's words, which a secret can be part of)."""
    budget = effective_budget(job.case.maxTurns, settings.max_turns)
    row = _assemble(
        job,
        settings,
        started_at=started_at,
        t0=t0,
        provider=job.variant.provider,
        model=job.variant.model,
        passed=False,
        outcome=ERROR,
        errorKind="capeval",
        providerStatus=None,
        agentExitCode=None,
        verifyExitCode=None,
        agentDurationMs=None,
        verifyDurationMs=None,
        status="failed",
        sessionId=None,
        turnsUsed=None,
        toolCallCount=None,
        tokenUsage=None,
        maxTurns=budget,
        # No turn count was reported: under a budget that fails closed, as
        # for any repeat (the row fails anyway; the field must not say otherwise).
        overBudget=is_over_budget(budget, None),
        error=f"not measured (capeval): workdir not prepared: {error}",
        behaviors=None,
        textPreview="",
        agentVersion=job.agent_version,
    )
    row["attempts"] = attempt
    return _redacted(row, job, secret_values(os.environ, job.agent.env))


# What an agent reports about itself (its provider, model and version) is
# agent text: a secret in it is cut as anywhere else, except where it equals
# what capeval asked for, since a key whose value is also a provider's name
# (OPENAI_API_KEY=ollama) must not rewrite the row's identity.
AGENT_REPORTED = ("provider", "model", "agentVersion")


def _redacted(row: Row, job: RepeatJob, secrets: list[str]) -> Row:
    out: Row = redact(row, secrets, keep=IDENTITY_FIELDS)
    requested = {"provider": job.variant.provider, "model": job.variant.model}
    for name in AGENT_REPORTED:
        value = out.get(name)
        if isinstance(value, str) and value != requested.get(name):
            out[name] = redact_text(value, secrets)
    return out


def _assemble(
    job: RepeatJob,
    settings: RepeatSettings,
    *,
    started_at: str,
    t0: float,
    agentVersion: str | None,
    artifacts: str | None = None,
    **fields: Any,
) -> Row:
    """Every field of capeval.core.row, in its order, plus artifacts and the repeat's start/end times."""
    case, variant = job.case, job.variant
    row: Row = {
        "resultKey": result_key(variant.id, case.id),
        "id": case.id,
        "tier": case.tier,
        "title": case.title,
        "variantId": variant.id,
        "provider": fields["provider"],
        "model": fields["model"],
        "passed": fields["passed"],
        "outcome": fields["outcome"],
        "agentExitCode": fields["agentExitCode"],
        "verifyExitCode": fields["verifyExitCode"],
        "durationMs": _ms((time.monotonic() - t0) * 1000.0),
        "agentDurationMs": fields["agentDurationMs"],
        "verifyDurationMs": fields["verifyDurationMs"],
        "status": fields["status"],
        "sessionId": fields["sessionId"],
        "turnsUsed": fields["turnsUsed"],
        "toolCallCount": fields["toolCallCount"],
        "tokenUsage": fields["tokenUsage"],
        "costUsd": fields.get("costUsd"),
        "maxTurns": fields["maxTurns"],
        "overBudget": fields["overBudget"],
        "skipPermissions": settings.skip_permissions,
        "error": fields["error"],
        "errorKind": fields["errorKind"],
        "providerStatus": fields["providerStatus"],
        "repeat": job.repeat,
        "attempts": 1,  # the retry loop (capeval.runner.retry) counts the others
        "behaviors": fields["behaviors"],
        "textPreview": fields["textPreview"],
        "runId": settings.context.get("runId"),
        "runStartedAt": settings.context.get("runStartedAt"),
        "requestedProvider": variant.provider,
        "requestedModel": variant.model,
        "agent": job.agent.name,
        "agentType": job.agent.type,
        "agentVersion": agentVersion,
        "isolation": job.isolation.backend,
        "capevalVersion": settings.context.get("capevalVersion"),
        "gitCommit": settings.context.get("gitCommit"),
        "gitDirty": settings.context.get("gitDirty"),
        "bait": case.bait.to_json() if case.bait else None,
        "artifacts": artifacts,
        "startedAt": started_at,
        "finishedAt": now_iso(),
    }
    return row


def repeat_outcome(passed: bool, error_kind: str | None) -> str:
    """passed, failed, or error when the run measured nothing (docs/agents.md#outcomes)."""
    if error_kind is not None:
        return ERROR
    return PASSED if passed else FAILED


def _ms(value: float | None) -> int | None:
    return None if value is None else round(value)


def _tail(data: bytes, limit: int = 300) -> str:
    text = data.decode("utf-8", errors="replace").strip()
    return text if len(text) <= limit else "..." + text[-limit:]
