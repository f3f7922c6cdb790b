"""`capeval validate`: everything checked before any agent starts, as data.

Above the workspace loader because some checks need the agents' and the
runner's knowledge: whether every trajectory a configured cell plays exists
and parses, and (with `--graders`) whether each grader tells the oracle's
result from the untouched fixture, which takes real repeats.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from capeval.agents.trajectory import (
    SOLVE_SCRIPT,
    TrajectoryError,
    load_played,
    load_trajectory,
    oracle_files,
)
from capeval.config import Config, load_config, matrix_problems, tiers_despite
from capeval.core.case import ORACLE_TRAJECTORY, Case
from capeval.core.matrix import parse_cell, played_trajectory
from capeval.core.problems import Problem, ProblemsError
from capeval.runner.graders import check_graders
from capeval.runner.options import DEFAULT_AGENT, DEFAULT_SCRIPTED_MODEL
from capeval.workspace import (
    CASE_FILE,
    CASES_SUBDIR,
    CaseCheck,
    case_dirs,
    cases_dir,
    check_cases,
    find_root,
    rel,
)


def validate_workspace(
    root: Path | None = None,
    *,
    config_path: Path | None = None,
    ids: Sequence[str] | None = None,
    graders: bool = False,
    start: Path | None = None,
) -> CaseCheck:
    """Everything `capeval validate` checks, as data: root, configuration, cases
    and optionally grader honesty. Never raises for bad input.

    A case without an oracle is a problem only where something plays the
    oracle (a scripted cell of the configured run, or `graders`); otherwise
    it is one of the result's `notes`.
    """
    try:
        found = find_root(start=start, explicit=root)
    except ProblemsError as exc:
        return CaseCheck(problems=exc.problems)
    try:
        config = load_config(found, config_path)
    except ProblemsError as exc:
        # Still check the cases, so one run shows everything, tiers included
        # when the configuration's `tiers` can be told despite its other problems.
        tiers = tiers_despite(found, config_path, exc.problems)
        result = check_cases(found, None, ids, check_tiers=bool(tiers), tiers=tiers)
        result.problems[:0] = exc.problems
        # Which agents the run plays cannot be told: the oracle stays required.
        result.problems += trajectory_problems(found, _checked_dirs(found, ids))
        return result
    result = check_cases(found, config, ids)
    result.problems[:0] = matrix_problems(config, found)
    # Of invalid cases too: "every problem at once", not one more round per fix.
    dirs = _checked_dirs(found, ids)
    played = played_trajectories(config)
    needed_by = "capeval validate --graders" if graders else played.get(ORACLE_TRAJECTORY)
    result.problems += trajectory_problems(found, dirs, needed_by, result.notes)
    result.problems += configured_trajectory_problems(found, config, dirs, played)
    if result.ok and not result.cases:
        # "ok: 0 cases" passed a CI check of a workspace whose cases were never
        # added (or sit in a misspelt folder), while `capeval run` refuses it.
        result.problems.append(
            Problem(
                rel(cases_dir(found), found),
                "",
                f"holds no case; add one as {CASES_SUBDIR.as_posix()}/<id>/{CASE_FILE} "
                "(capeval run has nothing to run)",
            )
        )
    if graders and result.cases:
        # The grader check reports an unplayable or missing oracle too, in its
        # own words: keep one problem per message, and one per whole file.
        shown = {str(p) for p in result.problems}
        whole = {p.file for p in result.problems if not p.field}
        found_problems = grader_problems(found, result.cases, config)
        result.problems += [
            p
            for p in found_problems
            if str(p) not in shown and not (not p.field and p.file in whole)
        ]
    return result


def _checked_dirs(root: Path, ids: Sequence[str] | None) -> list[Path]:
    """The case directories `check_cases` looked at that hold a case.json."""
    base = cases_dir(root)
    if not base.is_dir():
        return []
    return [d for d in case_dirs(base) if (not ids or d.name in ids) and (d / CASE_FILE).is_file()]


ORACLE_NEEDED_BY_DEFAULT = "capeval run (by default)"
ORACLE_NOTE = (
    "no oracle (trajectories/oracle.json or solution/solve.sh); the configured run does not "
    "need one. An oracle is a reference solution: capeval validate --graders plays it to "
    "prove the grader passes once the task is done, and the scripted agent plays it "
    "(docs/cases.md#oracles)"
)


def trajectory_problems(
    root: Path,
    case_dirs: Sequence[Path],
    needed_by: str | None = ORACLE_NEEDED_BY_DEFAULT,
    notes: list[Problem] | None = None,
) -> list[Problem]:
    """Per case: its oracle where `needed_by` plays it, and every trajectory it
    ships (and its shell oracle) playable.

    A case without an oracle is a problem when `needed_by` names what plays
    it, else a note appended to `notes`. Loading demands neither (a run of a
    real agent plays none), so `capeval validate` is where they are checked: a
    broken trajectory would otherwise surface as a failed repeat (a
    regression, to the gate).
    """
    out: list[Problem] = []
    for case_dir in case_dirs:
        if not oracle_files(case_dir):
            if needed_by is None:
                if notes is not None:
                    notes.append(Problem(rel(case_dir, root), "", ORACLE_NOTE))
            else:
                oracle = case_dir / "trajectories" / f"{ORACLE_TRAJECTORY}.json"
                out.append(
                    Problem(
                        rel(oracle, root),
                        "",
                        f"missing; {needed_by} plays it with the scripted agent. An oracle is "
                        "a reference solution: add this file, or a shell script "
                        "solution/solve.sh that solves the task (docs/cases.md#oracles)",
                    )
                )
        for path in sorted((case_dir / "trajectories").glob("*.json")):
            try:
                load_trajectory(path, file=rel(path, root))
            except TrajectoryError as exc:
                out += exc.problems
        script = case_dir / SOLVE_SCRIPT
        if script.is_file():
            try:
                load_played(script, name=ORACLE_TRAJECTORY, file=rel(script, root))
            except TrajectoryError as exc:
                out += exc.problems
    return out


def played_trajectories(config: Config) -> dict[str, str]:
    """The trajectories the configured run plays with a scripted agent, each with
    the words naming the cell that plays it (first one wins).

    Without a matrix or provider/model, the run's default cell: the default
    agent's trajectory (`scripted:oracle` with the built-in default). Cells
    that `--provider`/`--model` must complete, or that name an unknown agent,
    are left to `matrix_problems`.
    """
    default = config.agent or DEFAULT_AGENT
    cells: list[str] = list(config.matrix)
    if not cells and config.provider and config.model:
        cells = [f"{config.provider}:{config.model}"]
    wanted: dict[str, str] = {}
    if not cells:
        agent = config.agents.get(default)
        if agent is not None and agent.type == "scripted":
            default_name = agent.trajectory or DEFAULT_SCRIPTED_MODEL
            wanted[default_name] = f"capeval run's default cell 'scripted:{default_name}'"
        return wanted
    for cell in cells:
        try:
            variant = parse_cell(
                cell, provider=config.provider, model=config.model, default_agent=default
            )
        except ValueError:
            continue
        name = played_trajectory(variant, config.agents)
        if name is not None:
            wanted.setdefault(name, f"the configured matrix cell {cell!r}")
    return wanted


def configured_trajectory_problems(
    root: Path,
    config: Config,
    case_dirs: Sequence[Path],
    played: dict[str, str] | None = None,
) -> list[Problem]:
    """Trajectories the configured matrix's scripted cells play but a case lacks.

    `capeval run` refuses such a run before any agent starts ("no trajectory
    to play"); validate said ok. The oracle is checked on its own.
    """
    out: list[Problem] = []
    for name, cell in (played_trajectories(config) if played is None else played).items():
        if name == ORACLE_TRAJECTORY:
            continue  # every case's oracle is checked on its own
        for case_dir in case_dirs:
            path = case_dir / "trajectories" / f"{name}.json"
            if not path.is_file():
                out.append(
                    Problem(
                        rel(path, root),
                        "",
                        f"missing; {cell} plays it with a scripted agent (capeval run refuses "
                        "to start without it); add one, or change the matrix",
                    )
                )
    return out


def grader_problems(root: Path, cases: list[Case], config: Config | None = None) -> list[Problem]:
    """Grader honesty (oracle passes, untouched fixture fails), from the runner.

    Under the configured timeouts and turn budget, as a run grades: with the
    defaults, a grader that needs longer than 2 minutes (and is configured for
    it) was reported as failing after the oracle (exit 124), and one too slow
    for a shorter configured timeout (or an oracle over the configured
    `max_turns`) passed here but failed every repeat.
    """
    if config is None:
        return list(check_graders(root, cases))
    return list(
        check_graders(
            root,
            cases,
            verify_timeout_s=config.verify_timeout_s,
            agent_timeout_s=config.agent_timeout_s,
            max_turns=config.max_turns,
        )
    )
