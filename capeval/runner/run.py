"""A whole run: variants x cases x repeats, rows streamed to JSON Lines as they end.

`plan_run` resolves options, configuration and the workspace into the exact
list of repeats (pure apart from reading the workspace); `execute` runs them
on a thread pool. Repeats are independent, so they run concurrently, but
rows go through one writer, each made durable before the next is accepted:
a crash loses at most the repeats in flight, and `--resume` runs exactly the
(variant, case, repeat) triples the stream does not hold yet.

The stream's run shape (matrix, cases, repeats, ...) is kept beside it in
`<stream>.plan.json`, so `capeval run --resume PATH` needs no other flags.
Each repeat's evidence goes to `<stream stem>.artifacts/` beside the stream
unless `artifacts` says otherwise (`capeval.runner.artifacts`).
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval import __version__
from capeval.agents.base import Adapter, AgentConfig
from capeval.case import Case
from capeval.config import MAX_TOTAL_REPEATS
from capeval.results.errors import ResultFileError
from capeval.row import Row, triple
from capeval.runner import process, reaper
from capeval.runner.artifacts import (
    ArtifactsTaken,
    Taken,
    claim_cells,
    default_artifacts_dir,
    release_claims,
    taken_by_others,
)
from capeval.runner.httpfixture import HttpFixture
from capeval.runner.matrix import Variant, parse_matrix, played_trajectory
from capeval.runner.planfile import (
    PLAN_SUFFIX,
    SHAPE_FIELDS,
    SHAPE_FLAGS,
    looks_like_plan,
    plan_problem,
)
from capeval.runner.repeat import RepeatCancelled, RepeatJob, RepeatSettings, now_iso, run_repeat
from capeval.runner.workdir import WorkdirCache

if TYPE_CHECKING:
    from capeval.results.jsonl import JsonlWriter

DEFAULT_AGENT = "scripted"
DEFAULT_SCRIPTED_MODEL = "oracle"


class RunError(ValueError):
    """Bad options or a workspace that cannot run; the message says what to fix."""


@dataclass
class RunOptions:
    """`capeval run`'s flags. None means "not given": config, then defaults apply."""

    root: Path | None = None
    config: Path | None = None
    cases: tuple[str, ...] = ()
    tiers: tuple[str, ...] = ()
    provider: str | None = None
    model: str | None = None
    matrix: tuple[str, ...] = ()
    agent: str | None = None
    repeats: int | None = None
    concurrency: int | None = None
    max_turns: int | None = None
    agent_timeout_s: float | None = None
    verify_timeout_s: float | None = None
    ask_permissions: bool | None = None
    allow_provider_fallback: bool | None = None
    dry_run: bool = False
    jsonl: Path | None = None
    resume: Path | None = None
    out: Path | None = None
    tmp_dir: Path | None = None
    # Where each repeat's evidence goes: None "not given" (resume: as stored,
    # else on), True beside the stream, False none, a Path that folder.
    artifacts: Path | bool | None = None
    on_row: Callable[[Row, int, int], None] | None = None  # (row, done, total)
    handle_signals: bool = True


@dataclass
class RunPlan:
    root: Path
    run_id: str
    started_at: str
    jsonl_path: Path
    variants: list[Variant]
    cases: list[Case]
    agents: dict[str, AgentConfig]  # by name, those the variants use
    repeats: int
    concurrency: int
    settings: RepeatSettings
    jobs: list[RepeatJob]  # every repeat of the run, in order
    done: list[Row] = field(default_factory=list)  # rows already in the stream (resume)
    shape: dict[str, Any] = field(default_factory=dict)
    adapters: dict[str, Adapter] = field(default_factory=dict)
    # What reading the resumed stream skipped (a torn last line), for the user.
    warnings: list[str] = field(default_factory=list)
    # `todo` as last worked out, with the lists it came from (held, so their ids stay theirs).
    _todo: tuple[list[RepeatJob], list[Row], int, int, list[RepeatJob]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def todo(self) -> list[RepeatJob]:
        """The jobs whose rows are not in `done`, in plan order.

        Worked out again only when `jobs` or `done` changed (replaced, or grown):
        it is asked for several times per run, and each time was a pass over
        every repeat of the plan.
        """
        memo = self._todo
        if (
            memo is None
            or memo[0] is not self.jobs
            or memo[1] is not self.done
            or memo[2] != len(self.jobs)
            or memo[3] != len(self.done)
        ):
            finished = {triple(r) for r in self.done}
            todo = [j for j in self.jobs if j.triple not in finished]
            memo = self._todo = (self.jobs, self.done, len(self.jobs), len(self.done), todo)
        return list(memo[4])

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "jsonl": str(self.jsonl_path),
            "variants": [{**v.to_json(), "agent": v.agent} for v in self.variants],
            "cases": [c.id for c in self.cases],
            "repeats": self.repeats,
            "concurrency": self.concurrency,
            "artifacts": None
            if self.settings.artifacts_dir is None
            else str(self.settings.artifacts_dir),
            "total": len(self.jobs),
            "done": len(self.jobs) - len(self.todo),
            "todo": [
                {"variantId": v, "id": c, "repeat": r} for v, c, r in (j.triple for j in self.todo)
            ],
        }


@dataclass
class RunOutcome:
    plan: RunPlan
    rows: list[Row]  # every row of the stream for this plan: earlier (resume) and new
    jsonl_path: Path
    exit_code: int
    interrupted: str | None = None  # the signal name when stopped early

    @property
    def new_rows(self) -> int:
        return len(self.rows) - len(self.plan.done)


def new_run_id(now: datetime | None = None) -> str:
    """Sortable by start time, unique enough for concurrent runs: 20261130T164500Z-1a2b3c."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def plan_path(jsonl: Path) -> Path:
    return jsonl.with_name(jsonl.name + PLAN_SUFFIX)


def _refuse_used_stream(jsonl: Path) -> None:
    if jsonl.is_file() and jsonl.stat().st_size > 0:
        raise RunError(
            f"--jsonl {jsonl}: already holds rows; pass --resume {jsonl} to finish that run, "
            "or choose a new path (rows of two runs in one stream could collide)"
        )


def plan_run(options: RunOptions) -> RunPlan:
    """Resolve everything a run needs; raises RunError/ProblemsError before anything runs."""
    from capeval.config import load_config
    from capeval.gitinfo import git_info
    from capeval.workspace import find_root, load_cases

    done: list[Row] = []
    skipped: list[str] = []
    run_id, started_at = new_run_id(), now_iso()
    if options.resume is not None:
        # First: a stream or plan that cannot be resumed is the error to show,
        # not the workspace lookup that a broken plan's `root` would misdirect.
        options, done, run_id, started_at, skipped = _resume(options)
    explicit = options.root
    if explicit is None and options.resume is not None:
        explicit = _stored_root(Path(options.resume))  # resumable from anywhere
    root = find_root(explicit=explicit)
    config_file = options.config
    if config_file is None and options.resume is not None:
        config_file = _stored_config(Path(options.resume))  # the run's own --config
    config = load_config(root, config_file)
    jsonl = options.resume or options.jsonl or config.results_dir / f"{run_id}.jsonl"
    if options.resume is None:
        _refuse_used_stream(Path(jsonl))

    frozen = stored_resolution(options.resume) if options.resume is not None else None
    cases = load_cases(root, config, _case_ids_to_load(options, frozen, root))
    if frozen is not None:
        cases = _cases_of_the_run(cases, frozen, Path(options.resume))  # type: ignore[arg-type]
    if options.tiers:
        unknown = [t for t in options.tiers if t not in config.tiers]
        if unknown:
            raise RunError(
                f"--tier {unknown[0]}: unknown tier; expected one of: {', '.join(config.tiers)}"
            )
        cases = [c for c in cases if c.tier in options.tiers]
    if not cases:
        raise RunError(
            "no cases selected: check --case/--tier, or add cases under evals/capability/cases"
        )

    default_agent = options.agent or config.agent or DEFAULT_AGENT
    agents = dict(config.agents)
    if default_agent not in agents:
        raise RunError(_unknown_agent(default_agent, agents, "--agent", config, root))
    variants = [
        replace(v, agent=v.agent or default_agent)
        for v in _variants(options, config, default_agent, agents, root)
    ]
    # Cells that came from the configuration are fixed there, not on the command line.
    cells_from = "" if options.matrix else f"{_config_key(config, root, 'matrix')}: "
    used: dict[str, AgentConfig] = {}
    for v in variants:
        name = v.agent or default_agent
        if name not in agents:
            hint = (
                f"; if '@{name}' is part of the model name, name the agent after it "
                f"({v.provider}:{v.model}@{name}@<agent>)"
            )
            where = f"{cells_from}variant {v.id}"
            raise RunError(_unknown_agent(name, agents, where, config, root) + hint)
        used[name] = agents[name]

    _refuse_bad_timeouts(options, config, root)
    repeats = options.repeats if options.repeats is not None else config.repeats
    concurrency = options.concurrency if options.concurrency is not None else config.concurrency
    if repeats < 1 or concurrency < 1:
        raise RunError("--repeats and --concurrency must be at least 1")
    total = len(variants) * len(cases) * repeats
    if total > MAX_TOTAL_REPEATS:
        where = (
            f"--repeats {repeats}"
            if options.repeats is not None
            else f"{_config_key(config, root, 'repeats')} = {repeats}"
        )
        raise RunError(
            f"{where}: {counted(len(variants), 'variant')} x {counted(len(cases), 'case')} x "
            f"{counted(repeats, 'repeat')} = {total} repeats, more than the "
            f"{MAX_TOTAL_REPEATS:,} one run may plan; pass a smaller --repeats (or fewer "
            "cases or variants)"
        )
    git = git_info(root)
    jsonl = Path(jsonl)
    artifacts_dir = resolve_artifacts_dir(options.artifacts, jsonl)
    _refuse_unwritable_outputs(options, _config_key(config, root, "results"), jsonl, artifacts_dir)
    _refuse_replacing_the_baseline(options, config.baseline, _config_key(config, root, "baseline"))
    settings = RepeatSettings(
        root=root,
        agent_timeout_s=_pick(options.agent_timeout_s, config.agent_timeout_s),
        verify_timeout_s=_pick(options.verify_timeout_s, config.verify_timeout_s),
        max_turns=_pick(options.max_turns, config.max_turns),
        skip_permissions=not bool(options.ask_permissions),
        allow_provider_fallback=bool(options.allow_provider_fallback),
        tmp_parent=options.tmp_dir,
        artifacts_dir=artifacts_dir,
        rows_dir=jsonl.parent,
        context={
            "runId": run_id,
            "runStartedAt": started_at,
            "capevalVersion": __version__,
            "gitCommit": git.commit,
            "gitDirty": git.dirty,
        },
    )
    jobs = [
        RepeatJob(case=c, variant=v, repeat=r, agent=used[v.agent or default_agent])
        for v in variants
        for c in cases
        for r in range(repeats)
    ]
    _refuse_missing_trajectories(variants, cases, used, root)
    _refuse_broken_commands(used, ask_permissions=not settings.skip_permissions)
    wanted = {j.triple for j in jobs}
    shape = {name: _jsonable(getattr(options, name)) for name in SHAPE_FIELDS}
    shape["repeats"] = repeats
    shape["runId"], shape["runStartedAt"] = run_id, started_at
    shape["artifacts"] = _stored_artifacts(artifacts_dir, jsonl)
    shape["resolved"] = _resolution(variants, cases, used, settings)
    # Relative to the stream's folder, like `artifacts`, so the two can move together.
    shape["root"] = Path(os.path.relpath(root, jsonl.resolve().parent)).as_posix()
    if config_file is not None:
        # Not a shape field (it is read before the stored plan), but a resume
        # without it read capeval.toml and refused the run as "changed".
        config_at = config_file if config_file.is_absolute() else Path.cwd() / config_file
        shape["config"] = Path(os.path.relpath(config_at, jsonl.resolve().parent)).as_posix()
    if frozen is not None:
        _refuse_changed_plan(frozen, shape["resolved"], Path(options.resume))  # type: ignore[arg-type]
    plan = RunPlan(
        root=root,
        run_id=run_id,
        started_at=started_at,
        jsonl_path=jsonl,
        variants=variants,
        cases=cases,
        agents=used,
        repeats=repeats,
        concurrency=concurrency,
        settings=settings,
        jobs=jobs,
        done=[r for r in done if triple(r) in wanted],
        shape=shape,
        warnings=skipped,
    )
    if artifacts_dir is not None:
        # A claim by a run of this very stream is left to `execute`: that run may
        # still be writing it (the stream's lock then says so), or have stopped
        # before its first repeat ended (nothing to lose: its claim is taken over).
        taken = [
            t
            for t in taken_by_others(artifacts_dir, _cells(plan.todo), run_id)
            if not t.of_stream(jsonl)
        ]
        if taken:
            raise RunError(_taken_message(taken, options, artifacts_dir, jsonl))
    missing = _missing_binaries({j.agent.name: j.agent for j in plan.todo})
    if missing and options.dry_run:
        plan.warnings.append(f"{missing}; a real run would refuse to start")
    elif missing:
        raise RunError(f"{missing}; nothing was run")
    return plan


def counted(n: int, noun: str) -> str:
    """`1 case`, `2 cases`: how the runner and its command count things."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _cells(jobs: Sequence[RepeatJob]) -> dict[tuple[str, str], list[int]]:
    """(variant id, case id) -> the repeats the jobs write there."""
    cells: dict[tuple[str, str], list[int]] = {}
    for job in jobs:
        cells.setdefault((job.variant.id, job.case.id), []).append(job.repeat)
    return cells


def _taken_message(
    taken: Sequence[Taken], options: RunOptions, artifacts_dir: Path, jsonl: Path
) -> str:
    """Why the run's artifacts folder is refused, naming the folders and the fix.

    Replacing another run's evidence left that run's rows pointing at this
    run's files, with nothing to say so.
    """
    if isinstance(options.artifacts, Path):
        where = f"--artifacts {artifacts_dir}"
    else:
        where = f"the artifacts folder {artifacts_dir} (beside {jsonl.name})"

    def whose(t: Taken) -> str:
        if t.run_id is None:
            return f"{t.folder} already holds another run's evidence"
        if t.of_stream(jsonl):
            return (
                f"{t.folder} holds the evidence of run {t.run_id}, an earlier run on "
                f"{jsonl} whose rows are no longer there (moved or deleted)"
            )
        rows = f" (rows in {t.rows})" if t.rows is not None else ""
        return f"{t.folder} belongs to run {t.run_id}{rows}"

    shown = "; ".join(whose(t) for t in taken[:3])
    more = f"; and {len(taken) - 3} more" if len(taken) > 3 else ""
    folders = shlex.join(str(t.folder) for t in taken[:3]) + (" ..." if len(taken) > 3 else "")
    return (
        f"{where}: {shown}{more}; this run would replace that evidence and leave the "
        "other run's rows pointing at it: pass another --artifacts folder (or "
        f"--no-artifacts), or remove the old evidence (rm -r {folders}); nothing was run"
    )


def _missing_binaries(agents: dict[str, AgentConfig]) -> str | None:
    """Agents whose executable is not there, said as one error (None: all found).

    Otherwise every repeat of them fails with "not found" in its row's `error`
    alone: the screen shows a run of failures, and the gate a regression.
    """
    from capeval.agents.check import binary_of
    from capeval.agents.cliadapter import resolve_binary

    missing: list[str] = []
    tables: list[str] = []
    for name, agent in sorted(agents.items()):
        binary = binary_of(agent)
        # A command template may build its binary's path from a placeholder.
        if not binary or "{" in binary or resolve_binary(binary) is not None:
            continue
        missing.append(f"{binary!r} (agent {name!r})")
        tables.append(f"[agents.{name}]")
    if not missing:
        return None
    return (
        f"not found on PATH or not executable: {', '.join(missing)}; install it, or set "
        f"`command` in {' / '.join(tables)} of capeval.toml (`capeval agents list` shows "
        "what each agent runs)"
    )


def _refuse_bad_timeouts(options: RunOptions, config: Any, root: Path) -> None:
    """A timeout of `nan` timed every agent out before it started (every repeat a
    failure, read as a regression), and `inf` or an astronomical one crashed the
    run with a timer overflow: refuse them, naming where they were set."""
    from capeval.config import SECONDS_RULE, is_timeout

    for flag, given, key, configured in (
        ("--agent-timeout", options.agent_timeout_s, "timeouts.agent", config.agent_timeout_s),
        ("--verify-timeout", options.verify_timeout_s, "timeouts.verify", config.verify_timeout_s),
    ):
        value = _pick(given, configured)
        if is_timeout(value):
            continue
        where = flag if given is not None else _config_key(config, root, key)
        raise RunError(f"{where} {value}: expected {SECONDS_RULE}")


def _unwritable(path: Path) -> str | None:
    """Why `path` (a folder or file to be) could not be created, or None.

    Checked before any agent starts and without creating anything (a dry run
    writes nothing): the nearest existing ancestor must be a writable folder.
    Otherwise the row stream failed when first opened, and `--out` only after
    the whole run, each as a traceback.
    """
    for ancestor in (path, *path.parents):
        if ancestor.exists() or ancestor.is_symlink():
            if not ancestor.is_dir():
                return f"{ancestor} is not a folder"
            if not os.access(ancestor, os.W_OK | os.X_OK):
                return f"{ancestor} is not writable"
            return None
    return None


def _refuse_unwritable_outputs(
    options: RunOptions, results_key: str, jsonl: Path, artifacts_dir: Path | None
) -> None:
    why = _unwritable(jsonl.parent)
    if why is not None:
        if options.resume is not None:
            where = f"--resume {jsonl}"
        elif options.jsonl is not None:
            where = f"--jsonl {jsonl}"
        else:
            where = f"{results_key}: {jsonl.parent}"
        raise RunError(
            f"{where}: cannot write the row stream there: {why}; pass --jsonl with a "
            "writable path" + ("" if options.jsonl or options.resume else ", or fix `results`")
        )
    if artifacts_dir is not None:
        why = _unwritable(artifacts_dir)
        if why is not None:
            raise RunError(
                f"--artifacts {artifacts_dir}: cannot keep each repeat's evidence there: {why}; "
                "pass --artifacts with a writable folder, or --no-artifacts"
            )
    if options.out is not None:
        out = Path(options.out)
        why = f"{out} is a folder" if out.is_dir() else _unwritable(out.parent)
        if out.resolve() in (jsonl.resolve(), plan_path(jsonl).resolve()):
            # The export replaced the row stream (or its plan) at the end of the
            # run: a v3 file that --resume refuses and later runs cannot append to.
            raise RunError(
                f"--out {out}: is the run's row stream (or its plan); the v3 file would "
                "replace it; pass --out with another path, e.g. one ending in .json"
            )
        if out.resolve() != jsonl.resolve() and _holds_row_stream(out):
            # Re-running with one --out replaces the last export, as intended;
            # replacing another run's row stream lost its rows for good (its
            # plan and artifacts were left pointing at nothing).
            raise RunError(
                f"--out {out}: holds another run's row stream (JSON Lines rows); the v3 "
                "export would replace it and lose those rows; pass --out another path, "
                "e.g. one ending in .json"
            )
        if _is_a_runs_plan(out):
            # The export replaced that run's plan: its --resume then crashed
            # (or ran today's defaults into its rows).
            raise RunError(
                f"--out {out}: is another run's plan (<stream>{PLAN_SUFFIX}, which "
                "--resume reads); the v3 export would replace it; pass --out another path, "
                "e.g. one ending in .json"
            )
        if why is not None:
            raise RunError(
                f"--out {out}: cannot write the results file there: {why}; pass --out with "
                "a writable file path"
            )


def _holds_row_stream(path: Path) -> bool:
    """Whether `path` is a run's row stream: a plan beside it, or a row first.

    A v3 export (one JSON document, pretty-printed or not) is neither, so it
    may be replaced; so may an empty file or one that is not a result file.
    """
    from capeval.results.jsonl import first_line_is_row

    return plan_path(path).is_file() or first_line_is_row(path)


def _is_a_runs_plan(path: Path) -> bool:
    """Whether `path` is (or would be) some run's stored plan.

    By name beside an existing stream, or by content (a plan moved or copied
    away from its stream is still one). A v3 export has a `version` and no
    `runId`, so an earlier export may still be replaced.
    """
    stem = path.name[: -len(PLAN_SUFFIX)]
    if path.name.endswith(PLAN_SUFFIX) and stem and path.with_name(stem).is_file():
        return True
    try:
        if not path.is_file() or path.stat().st_size > _LARGEST_PLAN:
            return False
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return looks_like_plan(doc)


# A plan holds a run's flags and case ids: far below this; a bigger file is no plan.
_LARGEST_PLAN = 4 * 1024 * 1024


def _refuse_replacing_the_baseline(options: RunOptions, baseline: Path | None, key: str) -> None:
    """`--out` must not be the configured frozen baseline.

    The export replaced it after the run, without what `capeval baseline
    freeze` checks (every bait still reproduces, no cell dropped): one
    `--case` run left a baseline of one case, and every later gate judged
    against that.
    """
    if options.out is None or baseline is None:
        return
    if Path(options.out).resolve() == baseline.resolve():
        raise RunError(
            f"--out {options.out}: is the frozen baseline ({key}); a run's export would "
            "replace it unchecked: pass --out another path, or re-record it with "
            "capeval baseline freeze"
        )


def _config_file(config: Any, root: Path) -> tuple[str, str]:
    """(the configuration file as a user would name it, the key prefix inside it)."""
    source: Path | None = config.source
    if source is None:
        return "capeval.toml", ""
    try:
        name = source.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        name = str(source)
    return name, "tool.capeval." if source.name == "pyproject.toml" else ""


def _config_key(config: Any, root: Path, key: str) -> str:
    """Where a configured value is set, e.g. `capeval.toml: matrix` or
    `pyproject.toml: tool.capeval.matrix`, so an error points at the line to edit."""
    name, prefix = _config_file(config, root)
    return f"{name}: {prefix}{key}"


def _refuse_missing_trajectories(
    variants: list[Variant], cases: list[Case], agents: dict[str, AgentConfig], root: Path
) -> None:
    """A scripted cell whose trajectory a case lacks would fail every repeat of it.

    Those failures would read as regressions at the gate, so the run is refused
    before any agent starts, naming the file to add. So is a trajectory that
    is there but cannot be played (bad JSON, a mistyped field): every repeat
    of it would fail the same way.
    """
    from capeval.agents.trajectory import TrajectoryError, load_trajectory

    missing: list[str] = []
    broken: dict[Path, str] = {}
    for v in variants:
        name = played_trajectory(v, agents)
        if name is None:
            continue
        for case in cases:
            path = case.trajectory_path(name)
            shown = os.path.relpath(path, root) if path.is_relative_to(root) else str(path)
            if not path.is_file():
                missing.append(f"{shown} (case {case.id!r}, variant {v.id})")
            elif path not in broken:
                try:
                    load_trajectory(path, name=name, file=shown)
                    broken[path] = ""
                except TrajectoryError as exc:
                    broken[path] = str(exc)
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise RunError(
            f"no trajectory to play: {'; '.join(missing[:3])}{more}; add the file, or leave "
            "those cases (--case/--tier) or variants out of the run"
        )
    unplayable = [text for text in broken.values() if text]
    if unplayable:
        raise RunError(
            "trajectory cannot be played (capeval validate shows every problem):\n"
            + "\n".join(unplayable)
        )


def _refuse_broken_commands(agents: dict[str, AgentConfig], *, ask_permissions: bool) -> None:
    """A command agent whose template does not split or whose hook path escapes
    the workdir fails every repeat, and one that cannot drop its permission
    flags would run unprompted under --ask-permissions: refuse the run before
    any agent starts."""
    from capeval.agents.command import (
        CommandTemplateError,
        hook_path,
        permission_problem,
        render_command,
    )

    for name, agent in sorted(agents.items()):
        if agent.type != "command":
            continue
        try:
            if not agent.command:
                raise CommandTemplateError("no `command` template")
            render_command(agent.command, dict.fromkeys(("workdir", "prompt"), "x"))
            hook_path(Path("/workdir"), agent.hook)
        except CommandTemplateError as exc:
            raise RunError(f"agent {name!r}: {exc}") from None
        problem = permission_problem(agent) if ask_permissions else None
        if problem:
            raise RunError(problem)


def _resolution(
    variants: list[Variant],
    cases: list[Case],
    agents: dict[str, AgentConfig],
    settings: RepeatSettings,
) -> dict[str, Any]:
    """What the run's flags resolved to through capeval.toml and the cases folder.

    The flags alone do not pin a run: an unflagged run takes its matrix, agents,
    timeouts and cases from the workspace, which may change before a resume.
    """
    return {
        "variants": [
            {
                "id": v.id,
                "provider": v.provider,
                "model": v.model,
                "agent": v.agent,
                "agentType": agents[v.agent].type if v.agent in agents else None,
                "agentTrajectory": agents[v.agent].trajectory if v.agent in agents else None,
            }
            for v in variants
        ],
        "cases": [c.id for c in cases],
        "agentTimeoutS": settings.agent_timeout_s,
        "verifyTimeoutS": settings.verify_timeout_s,
        "maxTurns": settings.max_turns,
    }


def _stored_path(stream: Path, key: str) -> Path | None:
    """A path a stream's plan recorded (relative to the stream's folder), or None."""
    try:
        stored = json.loads(plan_path(stream).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    rel = stored.get(key) if isinstance(stored, dict) else None
    if not isinstance(rel, str) or not rel:
        return None
    return (stream.resolve().parent / rel).resolve()


def _stored_config(stream: Path) -> Path | None:
    """The `--config` file a stream's run was started with, when its plan says."""
    return _stored_path(stream, "config")


def _stored_root(stream: Path) -> Path | None:
    """The workspace a stream's run used, when its plan says and it still is one."""
    from capeval.workspace import is_workspace

    root = _stored_path(stream, "root")
    return root if root is not None and is_workspace(root) else None


def stored_resolution(stream: Path | str) -> dict[str, Any] | None:
    """The resolution a stream's plan recorded, or None for plans that predate it."""
    meta = plan_path(Path(stream))
    try:
        stored = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    resolved = stored.get("resolved") if isinstance(stored, dict) else None
    return resolved if isinstance(resolved, dict) else None


def _case_ids_to_load(
    options: RunOptions, frozen: dict[str, Any] | None, root: Path
) -> list[str] | None:
    """The case ids to validate and load; None: every case in the folder.

    A resume loads only its run's cases: a case added since (perhaps still
    being written, so invalid) is no part of the run and must not refuse it.
    """
    from capeval.workspace import cases_dir

    ids = frozen.get("cases") if frozen is not None else None
    if options.cases or not isinstance(ids, list) or not ids:
        return list(options.cases) or None
    gone = [i for i in ids if not (isinstance(i, str) and (cases_dir(root) / i).is_dir())]
    if gone:
        raise RunError(_gone_case(gone[0], Path(options.resume)))  # type: ignore[arg-type]
    return [str(i) for i in ids]


def _gone_case(case_id: Any, stream: Path) -> str:
    return (
        f"--resume {stream}: case {case_id!r} of this run is no longer in the workspace "
        "(or no longer selected); restore it, or start a new run"
    )


def _cases_of_the_run(cases: list[Case], frozen: dict[str, Any], stream: Path) -> list[Case]:
    """A resume finishes the run that was started: cases added since stay out of it."""
    ids = frozen.get("cases")
    if not isinstance(ids, list):
        return cases
    by_id = {c.id: c for c in cases}
    gone = [i for i in ids if i not in by_id]
    if gone:
        raise RunError(_gone_case(gone[0], stream))
    return [by_id[i] for i in ids]


def _refuse_changed_plan(frozen: dict[str, Any], now: dict[str, Any], stream: Path) -> None:
    """Rows of one run must come from one plan: a changed config would mix two in a stream."""
    for field_name in ("variants", "agentTimeoutS", "verifyTimeoutS", "maxTurns"):
        if field_name in frozen and frozen[field_name] != now[field_name]:
            raise RunError(
                f"--resume {stream}: since the run started, its "
                f"{_describe_change(field_name, frozen, now)} (capeval.toml or the cases "
                "changed); restore the "
                "configuration to finish this run, or start a new run"
            )


def _describe_change(field_name: str, frozen: dict[str, Any], now: dict[str, Any]) -> str:
    if field_name != "variants":
        return f"{field_name} changed from {frozen[field_name]!r} to {now[field_name]!r}"
    before = {v.get("id"): v for v in frozen["variants"] if isinstance(v, dict)}
    after = {v["id"]: v for v in now["variants"]}
    for vid, then in before.items():
        if vid not in after:
            return f"variant {vid!r} is gone (now: {', '.join(map(repr, after)) or 'none'})"
        for key in ("provider", "model", "agent", "agentType", "agentTrajectory"):
            if then.get(key) != after[vid].get(key):
                return (
                    f"variant {vid!r} {key} changed from {then.get(key)!r} "
                    f"to {after[vid].get(key)!r}"
                )
    extra = sorted(set(after) - set(before))
    return f"matrix changed (new variant {extra[0]!r})" if extra else "matrix changed"


def resolve_artifacts_dir(choice: Path | bool | None, jsonl: Path) -> Path | None:
    """The folder for each repeat's evidence, or None when the run keeps none."""
    if choice is False:
        return None
    if choice is None or choice is True:
        return default_artifacts_dir(jsonl)
    return Path(choice)


def _stored_artifacts(artifacts_dir: Path | None, jsonl: Path) -> str | bool:
    """The plan's record of the choice: relative to the stream's folder, so both can move."""
    if artifacts_dir is None:
        return False
    return Path(os.path.relpath(artifacts_dir, jsonl.parent)).as_posix()


def _unknown_agent(
    name: str, agents: dict[str, AgentConfig], where: str, config: Any, root: Path
) -> str:
    file, prefix = _config_file(config, root)
    return (
        f"{where}: unknown agent {name!r}; expected one of: {', '.join(sorted(agents))}, "
        f"or add an [{prefix}agents.{name}] table to {file}"
    )


def _pick(given: Any, configured: Any) -> Any:
    return given if given is not None else configured


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _variants(
    options: RunOptions,
    config: Any,
    default_agent: str,
    agents: dict[str, AgentConfig],
    root: Path,
) -> list[Variant]:
    provider = options.provider or config.provider
    model = options.model or config.model
    cells: Sequence[str] = options.matrix or config.matrix
    if not options.matrix and options.provider and options.model:
        cells = ()  # both flags name one cell, whatever capeval.toml's matrix says
    if not cells and not (provider and model):
        agent = agents.get(default_agent)
        if agent is not None and agent.type == "scripted":
            # The embedded default: play the oracle trajectory of every case.
            provider = provider or "scripted"
            model = model or agent.trajectory or DEFAULT_SCRIPTED_MODEL
        else:
            raise RunError(
                f"agent {default_agent!r} needs a model: pass --matrix provider:model, or "
                "--provider and --model, or set matrix in capeval.toml"
            )
    try:
        variants = parse_matrix(cells, provider=provider, model=model, default_agent=None)
    except ValueError as exc:
        where = "" if options.matrix or not cells else f"{_config_key(config, root, 'matrix')}: "
        raise RunError(f"{where}{exc}") from None
    # A flag that no cell took would be ignored in silence, and the run would
    # measure some other provider/model than the one asked for.
    source = "--matrix" if options.matrix else f"the matrix ({_config_key(config, root, 'matrix')})"
    for flag, value, side in (
        ("--provider", options.provider, "provider"),
        ("--model", options.model, "model"),
    ):
        if cells and value and all(getattr(v, side) != value for v in variants):
            raise RunError(
                f"{flag} {value} is used by no cell: every cell of {source} names its own "
                f"{side} ({', '.join(v.id for v in variants)}); pass --provider and --model "
                "together for that one cell, or name it in --matrix"
            )
    return variants


def _resume(options: RunOptions) -> tuple[RunOptions, list[Row], str, str, list[str]]:
    """Options filled from the stream's stored plan, its rows, its run id, and what
    reading it skipped."""
    from capeval.results.jsonl import read_jsonl

    path = Path(options.resume)  # type: ignore[arg-type]
    if not path.is_file():
        raise RunError(
            f"--resume {path}: no such file; pass the .jsonl stream of the run to finish"
        )
    if _is_v3(path):
        raise RunError(
            f"--resume {path}: this is a v3 results file (written by --out); --resume takes "
            "the run's .jsonl row stream, which holds every finished repeat"
        )
    rows, skipped = read_jsonl(path)
    stored: dict[str, Any] = {}
    meta = plan_path(path)
    given_shape = any(getattr(options, name) not in (None, ()) for name in SHAPE_FIELDS)
    if rows and not meta.is_file() and not given_shape:
        # Today's defaults would be some other run: other cases, repeats or
        # variants appended to this one's rows, and nothing would say so.
        raise RunError(
            f"--resume {path}: its plan {meta.name} is missing, so which repeats the run "
            "wanted is unknown; put it back beside the stream, or pass the run's flags "
            "again (--case, --tier, --matrix, --repeats, ...)"
        )
    if meta.is_file():
        stored = _read_plan(meta, path, holds_rows=bool(rows))
    _refuse_changed_flags(options, stored, path, meta)
    updates: dict[str, Any] = {}
    for name in SHAPE_FIELDS:
        given = getattr(options, name)
        if name in stored and (given is None or given == ()):
            value = stored[name]
            updates[name] = tuple(value) if isinstance(value, list) else value
    if options.artifacts is None and "artifacts" in stored:
        kept = stored["artifacts"]
        if kept is False:
            updates["artifacts"] = False
        elif isinstance(kept, str) and kept:
            updates["artifacts"] = path.parent / kept
    options = replace(options, **updates)
    run_id = stored.get("runId") or next((r["runId"] for r in rows if r.get("runId")), None)
    _refuse_other_runs(rows, run_id, path)
    started = stored.get("runStartedAt") or next(
        (r["runStartedAt"] for r in rows if r.get("runStartedAt")), None
    )
    return options, rows, run_id or new_run_id(), started or now_iso(), skipped


def _read_plan(meta: Path, stream: Path, *, holds_rows: bool) -> dict[str, Any]:
    """The stream's stored plan, refused unless it has the shape `write_plan` writes
    (`capeval.runner.planfile` says which and why)."""
    fix = f"delete {meta} and pass the run's flags again (--case, --tier, --matrix, --repeats, ...)"
    try:
        stored = json.loads(meta.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:
        problem: str | None = f"not valid JSON ({exc})"
    except OSError as exc:
        problem = f"cannot be read ({exc.strerror or exc})"
    else:
        problem = plan_problem(stored, holds_rows=holds_rows)
    if problem is not None:
        raise RunError(f"--resume {stream}: its plan {meta}: {problem}; {fix}")
    return dict(stored)


def _refuse_other_runs(rows: list[Row], run_id: str | None, stream: Path) -> None:
    """A stream joined by hand from two runs must not be resumed as one.

    The other run's rows would count as this run's finished repeats (a repeat
    it never ran, passed or failed as another agent or commit did), and the
    gate would then judge them as this run.
    """
    others = sorted({str(r["runId"]) for r in rows if r.get("runId")} - {run_id})
    if others:
        raise RunError(
            f"--resume {stream}: it holds rows of {len(others) + 1} runs (runId {run_id}, "
            f"and {', '.join(others)}), so which of this run's repeats are done is unknown; "
            "move the other run's rows (their runId says which) to a file of their own and "
            "resume again"
        )


def _refuse_changed_flags(
    options: RunOptions, stored: dict[str, Any], stream: Path, meta: Path
) -> None:
    """A flag given again on --resume must say what the stored plan says.

    Otherwise it quietly replaced the plan: `--repeats 1` on a run of 2 left
    the stream's second repeats out of the table, the exit code and `--out`
    (a failure there no longer failed the run), and `--tier` did the same to
    whole cases; the rewritten plan then forgot them for every later resume.
    """
    for name in SHAPE_FIELDS:
        given = getattr(options, name)
        if given is None or given == () or name not in stored:
            continue
        then, now = stored[name], _jsonable(given)
        if name in ("cases", "tiers") and isinstance(then, list):
            same = sorted(map(str, then)) == sorted(map(str, now))
        else:
            same = then == now
        if not same:
            flag = SHAPE_FLAGS[name]
            was = "not given" if then in (None, []) else repr(then)
            raise RunError(
                f"--resume {stream}: {_shown_flag(flag, now)} differs from the run's plan "
                f"({meta}: {was}); drop {flag} to finish the run as it was started, "
                "or start a new run on another --jsonl"
            )


def _shown_flag(flag: str, value: Any) -> str:
    if value is True:
        return flag
    return " ".join(f"{flag} {v}" for v in value) if isinstance(value, list) else f"{flag} {value}"


def _is_v3(path: Path) -> bool:
    from capeval.results.errors import ResultFileError
    from capeval.results.load import detect_format

    try:
        return detect_format(path) == "v3"
    except ResultFileError:
        return False  # reading it as a stream names the problem


def write_plan(plan: RunPlan) -> None:
    path = plan_path(plan.jsonl_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(plan.shape, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@contextmanager
def _stop_on_signals(stop: threading.Event, got: list[str], enabled: bool) -> Iterator[None]:
    """SIGINT/SIGTERM: stop every process group and HTTP server, keep finished rows."""
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        got.append(signal.Signals(signum).name)
        stop.set()
        process.shutdown(f"run interrupted by {signal.Signals(signum).name}")
        HttpFixture.stop_all()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _adapters(plan: RunPlan) -> dict[str, Adapter]:
    from capeval.agents.registry import make_adapter

    adapters: dict[str, Adapter] = {}
    for name, config in plan.agents.items():
        try:
            adapters[name] = make_adapter(config)
        except ValueError as exc:
            raise RunError(f"agent {name}: {exc}") from None
    return adapters


def _versions(adapters: Mapping[str, Adapter], handle_signals: bool) -> dict[str, str | None] | str:
    """Each agent's version, or the name of the signal that stopped the asking.

    `--version` of a wrapper that never answers runs for its whole timeout: a
    SIGTERM then must stop it (and what it started) as it stops a repeat.
    """
    stop = threading.Event()
    got: list[str] = []
    versions: dict[str, str | None] = {}
    with _stop_on_signals(stop, got, handle_signals):
        for name, adapter in adapters.items():
            if stop.is_set():
                break
            try:
                versions[name] = adapter.version()
            except Exception:  # a version probe must not stop the run
                versions[name] = None
    return got[0] if got else versions


def execute(options: RunOptions, plan: RunPlan | None = None) -> RunOutcome:
    """Run every missing repeat of the plan; rows are durable as each repeat ends."""
    plan = plan or plan_run(options)
    rows: list[Row] = list(plan.done)
    todo = plan.todo
    if options.dry_run:
        return RunOutcome(plan, rows, plan.jsonl_path, 0)
    plan.adapters = _adapters(plan)

    from capeval.results.jsonl import JsonlWriter, StreamBusy

    # The stream's lock is taken before the plan is written, and the "holds
    # rows" check is made again under it: two runs started on one --jsonl at
    # the same moment both passed the first check.
    try:
        writer = JsonlWriter(plan.jsonl_path)
    except StreamBusy as exc:
        raise RunError(str(exc)) from None
    with writer:
        if options.resume is None:
            _refuse_used_stream(plan.jsonl_path)
        else:
            # The stream was read when planning, before this lock: the run that
            # held it may have finished repeats since (a --resume started while
            # it was still ending). Running them again would duplicate rows.
            from capeval.results.jsonl import read_jsonl

            wanted = {j.triple for j in plan.jobs}
            grown = read_jsonl(plan.jsonl_path)[0]
            # Rows a new run wrote meanwhile (its --jsonl this stream) are not this run's.
            _refuse_other_runs(grown, plan.run_id, plan.jsonl_path)
            plan.done = [r for r in grown if triple(r) in wanted]
            rows[:] = plan.done
            finished = {triple(r) for r in plan.done}
            todo = [j for j in todo if j.triple not in finished]
        claims = _claim_artifacts(options, plan, todo)
        try:
            write_plan(plan)
        except OSError as exc:
            release_claims(claims)
            raise RunError(
                f"{plan_path(plan.jsonl_path)}: cannot write the run's plan: "
                f"{exc.strerror or exc}; free space or pass --jsonl with a writable path"
            ) from None
        process.reset_shutdown()
        # Every temp dir of the run lives in one, so that a reaper told of that
        # one dir removes them all if this process is killed (capeval.runner.reaper).
        with reaper.running(), ExitStack() as stack:
            # Asked inside the reaper's watch and after the plan is stored: a
            # run stopped or killed here leaves no probe running and resumes.
            versions = _versions(plan.adapters, options.handle_signals)
            if isinstance(versions, str):
                process.reset_shutdown()
                return RunOutcome(
                    plan, rows, plan.jsonl_path, 130 if versions == "SIGINT" else 143, versions
                )
            todo = [replace(j, agent_version=versions.get(j.agent.name)) for j in todo]
            try:
                run_tmp = stack.enter_context(reaper.temp_dir("capeval-run-", options.tmp_dir))
                workdirs = stack.enter_context(WorkdirCache(run_tmp))
            except OSError as exc:  # a full or read-only $TMPDIR: said before any agent
                where = options.tmp_dir or tempfile.gettempdir()
                raise RunError(
                    f"cannot make the run's temp folder in {where}: {exc.strerror or exc}; "
                    "free space there, or point TMPDIR at a writable folder; nothing was run"
                ) from None
            plan.settings = replace(plan.settings, workdirs=workdirs, tmp_parent=run_tmp)
            return _execute(options, plan, todo, rows, writer)


def _claim_artifacts(options: RunOptions, plan: RunPlan, todo: list[RepeatJob]) -> list[Path]:
    """Claim the artifacts folders of the repeats to run, under the stream's lock.

    `plan_run` checked them, but without a lock: a run started at the same
    moment on the same --artifacts passed that check too.
    """
    root = plan.settings.artifacts_dir
    if root is None or not todo:
        return []
    try:
        return claim_cells(root, _cells(todo), plan.run_id, plan.jsonl_path, stream_locked=True)
    except ArtifactsTaken as exc:
        raise RunError(_taken_message(exc.taken, options, root, plan.jsonl_path)) from None
    except OSError as exc:
        raise RunError(
            f"--artifacts {root}: cannot keep each repeat's evidence there: "
            f"{exc.strerror or exc}; pass --artifacts with a writable folder, or --no-artifacts"
        ) from None


def _execute(
    options: RunOptions,
    plan: RunPlan,
    todo: list[RepeatJob],
    rows: list[Row],
    writer: JsonlWriter,
) -> RunOutcome:
    stop = threading.Event()
    got: list[str] = []
    lock = threading.Lock()
    total = len(plan.jobs)

    def one(job: RepeatJob) -> Row | None:
        if stop.is_set():
            return None
        try:
            row = run_repeat(job, plan.adapters[job.agent.name], plan.settings)
        except RepeatCancelled:
            return None
        with lock:  # the single writer: durable row, then progress
            writer.write(row)
            rows.append(row)
            if options.on_row is not None:
                options.on_row(row, len(rows), total)
        return row

    with _stop_on_signals(stop, got, options.handle_signals):
        pool = ThreadPoolExecutor(max_workers=plan.concurrency, thread_name_prefix="repeat")
        try:
            pending: set[Future[Row | None]] = {pool.submit(one, j) for j in todo}
            while pending and not stop.is_set():
                finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for fut in finished:
                    fut.result()  # a runner bug surfaces here, not silently
        except ResultFileError as exc:  # the stream refused a row (a full disk)
            stop.set()
            process.shutdown("row stream not writable")
            HttpFixture.stop_all()
            raise RunError(
                f"{exc}; {len(rows)} finished repeats are kept: free space, then finish the "
                f"run with: capeval run --resume {plan.jsonl_path}"
                + (f" --out {options.out}" if options.out is not None else "")
            ) from None
        except BaseException:
            stop.set()
            process.shutdown("run aborted")
            HttpFixture.stop_all()
            raise
        finally:
            if stop.is_set():
                process.shutdown("run interrupted")
                HttpFixture.stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
    process.reset_shutdown()

    if got:
        return RunOutcome(plan, rows, plan.jsonl_path, 130 if got[0] == "SIGINT" else 143, got[0])
    if options.out is not None:
        from capeval.results.v3 import write_v3

        try:
            write_v3(
                options.out,
                _ordered(rows, plan),
                started_at=plan.started_at,
                finished_at=now_iso(),
                provider=plan.variants[0].provider if len(plan.variants) == 1 else None,
                model=plan.variants[0].model if len(plan.variants) == 1 else None,
                repeats=plan.repeats,
                variants=[v.to_json() for v in plan.variants],
            )
        except OSError as exc:  # checked before the run, but a disk can fill up since
            raise RunError(
                f"--out {options.out}: cannot write the results file: {exc.strerror or exc}; "
                f"every row is in {plan.jsonl_path}: write it again with: capeval run "
                f"--resume {plan.jsonl_path} --out PATH"
            ) from None
    exit_code = 0 if all(r.get("passed") is True for r in rows) else 1
    return RunOutcome(plan, _ordered(rows, plan), plan.jsonl_path, exit_code)


def _ordered(rows: list[Row], plan: RunPlan) -> list[Row]:
    """Rows in plan order (variant, case, repeat), whatever order they finished in."""
    index = {j.triple: i for i, j in enumerate(plan.jobs)}
    return sorted(rows, key=lambda r: index.get(triple(r), len(index)))
