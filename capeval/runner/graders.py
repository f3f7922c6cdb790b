"""Grader honesty (`capeval validate --graders`): does each grader tell done from not done?

A grader that passes on the untouched fixture passes an agent that does
nothing; one that fails after the oracle trajectory fails every agent. Either
makes the case's pass rate meaningless, so both are checked the way a real
repeat runs: a fresh committed workdir, the HTTP fixture when the case needs
one, the oracle played by the `scripted` agent through its subprocess, and the
grader run as `bash <verify>` in the workdir.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from capeval.core.problems import Problem

if TYPE_CHECKING:
    from capeval.core.case import Case
    from capeval.runner.httpfixture import HttpFixture

ORACLE = "oracle"
OUTPUT_TAIL_CHARS = 300


def check_graders(
    root: Path,
    cases: list[Case],
    *,
    trajectory: str = ORACLE,
    verify_timeout_s: float = 120.0,
    agent_timeout_s: float = 300.0,
    max_turns: int | None = None,
) -> list[Problem]:
    """Every grader-honesty problem of `cases`; empty when all graders are honest.

    Per case: the grader must fail on the untouched fixture, the `trajectory`
    run must succeed within the case's turn budget (`max_turns`, the
    configuration's override, when set, as in a run) and `requireBehaviors`,
    and the grader must then pass.
    """
    problems: list[Problem] = []
    for case in cases:
        problems += check_case(
            root,
            case,
            trajectory=trajectory,
            verify_timeout_s=verify_timeout_s,
            agent_timeout_s=agent_timeout_s,
            max_turns=max_turns,
        )
    return problems


def check_case(
    root: Path,
    case: Case,
    *,
    trajectory: str = ORACLE,
    verify_timeout_s: float = 120.0,
    agent_timeout_s: float = 300.0,
    max_turns: int | None = None,
) -> list[Problem]:
    from capeval.agents.trajectory import oracle_files
    from capeval.runner.workdir import WorkdirError
    from capeval.workspace import rel

    case_file = rel(case.file, root)
    if trajectory == ORACLE:
        played = oracle_files(case.dir)
    else:
        played = [p for p in (case.trajectory_path(trajectory),) if p.is_file()]
    if not played:
        traj_file = rel(case.trajectory_path(trajectory), root)
        return [Problem(traj_file, "", missing_oracle_message(trajectory))]
    problems: list[Problem] = []
    try:
        with _workdir(root, case) as workdir, _http(case) as http:
            code, _ = _grade(case, workdir, http, verify_timeout_s)
            if code == 0:
                problems.append(
                    Problem(
                        case_file,
                        "verify",
                        f"{case.verify} passes on the untouched fixture; it must fail until the "
                        "task is done, or it passes an agent that does nothing",
                    )
                )
        for path in played:
            with _workdir(root, case) as workdir, _http(case) as http:
                problems += _check_oracle(
                    case,
                    workdir,
                    http,
                    trajectory,
                    path,
                    rel(path, root),
                    case_file,
                    verify_timeout_s,
                    agent_timeout_s,
                    max_turns if max_turns is not None else case.maxTurns,
                )
    except WorkdirError as exc:
        problems.append(Problem(case_file, "fixture", str(exc)))
    return problems


def missing_oracle_message(trajectory: str = ORACLE) -> str:
    """What a case without the trajectory `--graders` plays lacks, and what it is for."""
    if trajectory != ORACLE:
        return (
            f"missing: the grader check plays a trajectory named {trajectory!r} that solves "
            "the case (see docs/cases.md#oracles)"
        )
    return (
        "missing: no oracle; add trajectories/oracle.json or a shell script "
        "solution/solve.sh that solves the task. The grader check plays it to prove the "
        "grader passes once the task is done (see docs/cases.md#oracles)"
    )


def _check_oracle(
    case: Case,
    workdir: Path,
    http: HttpFixture | None,
    trajectory: str,
    path: Path,
    traj_file: str,
    case_file: str,
    verify_timeout_s: float,
    agent_timeout_s: float,
    budget: int | None,
) -> list[Problem]:
    from capeval.agents.base import AgentRequest
    from capeval.agents.scripted import ScriptedAdapter
    from capeval.core.agentconfig import AgentConfig

    url = http.url if http is not None else None
    with tempfile.TemporaryDirectory(prefix="capeval-capture-") as capture:
        request = AgentRequest(
            workdir=workdir,
            prompt=case.render_prompt(url),
            provider="scripted",
            model=trajectory,
            case_dir=case.dir,
            capture_dir=Path(capture),
            timeout_s=agent_timeout_s,
            max_turns=budget,
            env={"EVAL_HTTP_URL": url} if url else {},
            http_url=url,
        )
        agent = AgentConfig(name="scripted", type="scripted")
        result = ScriptedAdapter(agent, play=path).run(request)
    if result.status != "done" or result.exitCode != 0:
        detail = f": {result.error}" if result.error else ""
        return [
            Problem(
                traj_file,
                "",
                f"the {trajectory} run did not succeed (status {result.status}, "
                f"exit {result.exitCode}){detail}",
            )
        ]
    problems: list[Problem] = []
    if budget is not None and (result.turnsUsed is None or result.turnsUsed > budget):
        whose = "case's maxTurns" if budget == case.maxTurns else "configured max_turns"
        problems.append(
            Problem(
                traj_file,
                "turns",
                f"uses {result.turnsUsed} turns, over the {whose} {budget}; "
                "shorten the trajectory or raise the budget",
            )
        )
    if case.requireBehaviors:
        from capeval.core.behaviors import derive_behaviors

        behaviors = derive_behaviors(result.summary) if result.summary is not None else None
        for req in case.requireBehaviors:
            if not req.holds(behaviors):
                got = behaviors.get(req.metric) if behaviors else None
                problems.append(
                    Problem(
                        traj_file,
                        "turns",
                        f"breaks the case's requireBehaviors {req.describe()} (got {got})",
                    )
                )
    kind = "script" if path.suffix == ".sh" else "trajectory"
    code, output = _grade(case, workdir, http, verify_timeout_s)
    if code != 0:
        problems.append(
            Problem(
                case_file,
                "verify",
                f"{case.verify} fails (exit {code}) after the {trajectory} {kind} solved the "
                f"task; fix the grader or {traj_file}. Grader output: {output}",
            )
        )
    return problems


def _grade(
    case: Case, workdir: Path, http: HttpFixture | None, timeout_s: float
) -> tuple[int, str]:
    """Run the grader as a repeat does; returns (exit code, tail of its output)."""
    from capeval.proc.process import run_process
    from capeval.proc.reaper import remove_tree
    from capeval.runner.workdir import own_repo_env

    # A repeat gives its grader a private, empty $TMPDIR; a grader relying on
    # it (`set -u`, `mktemp` then `ls $TMPDIR`) must be judged the same way.
    verify_tmp = Path(tempfile.mkdtemp(prefix="capeval-verify-tmp-"))
    env = {**own_repo_env(), "TMPDIR": str(verify_tmp)}
    if http is not None:
        env["EVAL_HTTP_URL"] = http.url
        env["EVAL_HTTP_TOKEN"] = http.token
    try:
        proc = run_process(
            ["bash", str(case.verify_path)], cwd=workdir, env=env, timeout_s=timeout_s
        )
    finally:
        remove_tree(verify_tmp)
    output = (proc.stdout + proc.stderr).decode("utf-8", errors="replace").strip()
    return proc.exit_code, output[-OUTPUT_TAIL_CHARS:]


@contextmanager
def _workdir(root: Path, case: Case) -> Iterator[Path]:
    from capeval.proc.reaper import remove_tree
    from capeval.runner.workdir import WorkdirError, prepare_workdir

    try:
        workdir = prepare_workdir(root, case)
    except OSError as exc:
        # A fixture file that cannot be copied (unreadable, or a full disk) is
        # a problem to report, like every other one, not a traceback.
        raise WorkdirError(f"case {case.id}: the workdir could not be made: {exc}") from None
    try:
        yield workdir
    finally:
        remove_tree(workdir)


def _http(case: Case) -> HttpFixture | nullcontext[None]:
    if not case.httpFixture:
        return nullcontext()
    from capeval.runner.httpfixture import HttpFixture

    return HttpFixture(site=case.pages_path)
