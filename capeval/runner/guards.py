"""Refusals before any agent starts: every input that would fail every repeat.

A run that cannot produce a usable row (an agent binary that is not there,
an output path that cannot be written, a stream that already holds another
run, a baseline about to be overwritten) is refused here with the fix,
instead of spending an hour of agent time on rows the gate would reject.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capeval.core.agentconfig import AgentConfig
from capeval.core.case import Case
from capeval.core.matrix import Variant, played_trajectory
from capeval.results.formats import holds_rows, is_plan
from capeval.runner.artifacts import Taken
from capeval.runner.options import RunError, RunOptions, pick, plan_path
from capeval.runner.planfile import PLAN_SUFFIX
from capeval.runner.repeat import RepeatJob


def refuse_used_stream(jsonl: Path) -> None:
    if jsonl.is_file() and jsonl.stat().st_size > 0:
        raise RunError(
            f"--jsonl {jsonl}: already holds rows; pass --resume {jsonl} to finish that run, "
            "or choose a new path (rows of two runs in one stream could collide)"
        )


def cells(jobs: Sequence[RepeatJob]) -> dict[tuple[str, str], list[int]]:
    """(variant id, case id) -> the repeats the jobs write there."""
    cells: dict[tuple[str, str], list[int]] = {}
    for job in jobs:
        cells.setdefault((job.variant.id, job.case.id), []).append(job.repeat)
    return cells


def taken_message(
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


def missing_binaries(agents: dict[str, AgentConfig]) -> str | None:
    """Agents whose executable is not there, said as one error (None: all found).

    Otherwise every repeat of them fails with "not found" in its row's `error`
    alone: the screen shows a run of failures, and the gate a regression.
    """
    from capeval.agents.check import binary_of
    from capeval.agents.cliadapter import resolve_binary, unresolved_reason

    missing: list[str] = []
    tables: list[str] = []
    for name, agent in sorted(agents.items()):
        binary = binary_of(agent)
        # A command template may build its binary's path from a placeholder.
        if not binary or "{" in binary or resolve_binary(binary) is not None:
            continue
        missing.append(f"{binary!r} (agent {name!r}) {unresolved_reason(binary)}")
        tables.append(f"[agents.{name}]")
    if not missing:
        return None
    return (
        f"{'; '.join(missing)}; install it, or set `command` in {' / '.join(tables)} of "
        "capeval.toml (`capeval agents list` shows what each agent runs)"
    )


def refuse_bad_timeouts(options: RunOptions, config: Any, root: Path) -> None:
    """A timeout of `nan` timed every agent out before it started (every repeat a
    failure, read as a regression), and `inf` or an astronomical one crashed the
    run with a timer overflow: refuse them, naming where they were set."""
    from capeval.config import SECONDS_RULE, is_timeout

    for flag, given, key, configured in (
        ("--agent-timeout", options.agent_timeout_s, "timeouts.agent", config.agent_timeout_s),
        ("--verify-timeout", options.verify_timeout_s, "timeouts.verify", config.verify_timeout_s),
    ):
        value = pick(given, configured)
        if is_timeout(value):
            continue
        where = flag if given is not None else config_key(config, root, key)
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


def refuse_unwritable_outputs(
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
    return plan_path(path).is_file() or holds_rows(path)


def _is_a_runs_plan(path: Path) -> bool:
    """Whether `path` is (or would be) some run's stored plan.

    By name beside an existing stream, or by content (a plan moved or copied
    away from its stream is still one).
    """
    stem = path.name[: -len(PLAN_SUFFIX)]
    if path.name.endswith(PLAN_SUFFIX) and stem and path.with_name(stem).is_file():
        return True
    return is_plan(path)


def refuse_replacing_the_baseline(options: RunOptions, baseline: Path | None, key: str) -> None:
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


def config_file(config: Any, root: Path) -> tuple[str, str]:
    """(the configuration file as a user would name it, the key prefix inside it)."""
    source: Path | None = config.source
    if source is None:
        return "capeval.toml", ""
    try:
        name = source.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        name = str(source)
    return name, "tool.capeval." if source.name == "pyproject.toml" else ""


def config_key(config: Any, root: Path, key: str) -> str:
    """Where a configured value is set, e.g. `capeval.toml: matrix` or
    `pyproject.toml: tool.capeval.matrix`, so an error points at the line to edit."""
    name, prefix = config_file(config, root)
    return f"{name}: {prefix}{key}"


def refuse_missing_trajectories(
    variants: list[Variant], cases: list[Case], agents: dict[str, AgentConfig], root: Path
) -> None:
    """A scripted cell whose trajectory a case lacks would fail every repeat of it.

    Those failures would read as regressions at the gate, so the run is refused
    before any agent starts, naming the file to add. So is a trajectory that
    is there but cannot be played (bad JSON, a mistyped field): every repeat
    of it would fail the same way.
    """
    from capeval.agents.trajectory import ORACLE, TrajectoryError, load_played, played_file

    missing: list[str] = []
    broken: dict[Path, str] = {}
    for v in variants:
        name = played_trajectory(v, agents)
        if name is None:
            continue
        for case in cases:
            path = played_file(case.dir, name)
            shown = os.path.relpath(path, root) if path.is_relative_to(root) else str(path)
            if not path.is_file():
                alt = " or solution/solve.sh" if name == ORACLE else ""
                missing.append(f"{shown}{alt} (case {case.id!r}, variant {v.id})")
            elif path not in broken:
                try:
                    load_played(path, name=name, file=shown)
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


def refuse_broken_commands(agents: dict[str, AgentConfig], *, ask_permissions: bool) -> None:
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


def refuse_unrunnable_isolation(
    jobs: Sequence[RepeatJob], *, skip_permissions: bool, dry_run: bool, host_checks: bool = True
) -> list[str]:
    """Refuse an isolation that cannot run (anywhere, or on this host); the warnings a
    dry run prints instead of the host's refusals (docs/isolation.md). Without
    `host_checks` (repeats that run on other machines) only the first."""
    from capeval.core.isolation import isolation_problem
    from capeval.isolation.host import host_problem

    warnings: list[str] = []
    seen: set[tuple[str, object]] = set()
    for job in jobs:
        name, iso = job.agent.name, job.isolation
        if (name, iso) in seen:
            continue
        seen.add((name, iso))
        problem = isolation_problem(iso)
        if problem:
            raise RunError(f"agent {name!r}: {problem}")
        if not host_checks:
            continue
        # What depends on this host (root, bwrap, a daemon) is a dry run's warning.
        problem = _unsandboxed_root_claude(job.agent, iso.sandboxed, skip_permissions)
        host = host_problem(iso)
        problem = problem or (f"agent {name!r}: {host}" if host else None)
        if problem and dry_run:
            warnings.append(f"{problem}; a real run would refuse to start")
        elif problem:
            raise RunError(f"{problem}; nothing was run")
    return warnings


def _unsandboxed_root_claude(agent: AgentConfig, sandboxed: bool, skip: bool) -> str | None:
    """Claude Code refuses --dangerously-skip-permissions as root outside a sandbox, and
    capeval does not claim one (IS_SANDBOX) where there is none: every repeat would fail."""
    from capeval.agents.cliadapter import is_root

    if agent.type != "claude-code" or sandboxed or not skip or not is_root():
        return None
    if "IS_SANDBOX" in agent.env:
        return None  # the user says this machine is itself a throwaway sandbox
    return (
        f"agent {agent.name!r}: Claude Code refuses --dangerously-skip-permissions as root "
        'outside a sandbox: set isolation = "bwrap" or "docker" (docs/isolation.md), run '
        "capeval as another user, pass --ask-permissions, or, if this machine is itself a "
        f'throwaway container, say so with env = {{ IS_SANDBOX = "1" }} in [agents.{agent.name}]'
    )


def sandbox_paths(
    root: Path,
    results: Path,
    jsonl: Path,
    artifacts: Path | None,
    baseline: Path | None,
    out: Path | None,
) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(hidden, protected): what a sandbox masks, and what it never shows again.

    The workspace is masked whole (cases, graders, fixtures, baseline,
    results); the results, the stream's and the artifacts' folders, a
    baseline and an `--out` folder wherever they are. Of those, all but the
    workspace root are protected: a binary or a Python under the workspace
    (a `.venv`) may be shown again read-only, the cases never.
    """
    from capeval.workspace import cases_dir

    outputs = [results, jsonl.parent]
    if artifacts is not None:
        outputs.append(artifacts)
    if out is not None:
        outputs.append(out.parent)
    protected = [cases_dir(root), *outputs]
    if baseline is not None:
        protected.append(baseline)
    absolute = [Path(os.path.abspath(p)) for p in protected]
    hidden = [Path(os.path.abspath(root)), *absolute]
    return tuple(dict.fromkeys(hidden)), tuple(dict.fromkeys(absolute))
