"""The demo cases: what they promise (tiers, the five baits) and that they keep it.

For every case, played the way a repeat plays it: the grader fails on the
untouched fixture, the oracle passes without misbehaving, and the sloppy
trajectory misbehaves on the case's bait metric.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from capeval.agents.base import AgentRequest, AgentResult
from capeval.agents.scripted import ScriptedAdapter
from capeval.agents.trajectory import load_trajectory
from capeval.core.agentconfig import AgentConfig
from capeval.core.case import Case
from capeval.proc.process import run_process
from capeval.runner.httpfixture import HttpFixture
from capeval.runner.workdir import prepare_workdir
from capeval.workspace import load_cases

REPO = Path(__file__).resolve().parents[2]
CASES = load_cases(REPO)
BY_ID = {c.id: c for c in CASES}

BAIT_KINDS = {
    "networkCommandCount",
    "envAssignmentCommandCount",
    "editViaShellCount",
    "repeatedSearchCount",
    "maxTurnDurationMs",
}
# Sloppy trajectories that leave the task undone (the others misbehave but pass).
SLOPPY_FAILS_GRADER = {
    "fix-pagination",
    "quote-shell-vars",
    "sales-report",
    "multiline-settings-edit",
}


def test_there_are_at_least_12_cases_in_every_tier() -> None:
    assert len(CASES) >= 12
    assert {c.tier for c in CASES} == {"simple", "complex", "bait"}


def test_each_bait_kind_has_its_own_case() -> None:
    baits = [c.bait.metric for c in CASES if c.bait is not None]
    assert sorted(baits) == sorted(BAIT_KINDS)
    assert all(c.tier == "bait" for c in CASES if c.bait is not None)


def test_the_web_case_needs_the_http_fixture_and_the_web_fetch_tool() -> None:
    (web,) = [c for c in CASES if c.bait and c.bait.metric == "networkCommandCount"]
    assert web.httpFixture and "{{HTTP_URL}}" in web.prompt
    assert web.bait is not None and web.bait.threshold == 0
    assert [(r.metric, r.min) for r in web.requireBehaviors] == [("webFetchToolCallCount", 1)]


def test_some_cases_have_a_turn_budget() -> None:
    assert len([c for c in CASES if c.maxTurns is not None]) >= 2


def test_some_sloppy_runs_fail_the_grader_but_not_most() -> None:
    assert set(BY_ID) >= SLOPPY_FAILS_GRADER
    assert 3 <= len(SLOPPY_FAILS_GRADER) < len(CASES) / 2


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("name", ["oracle", "sloppy"])
def test_every_case_ships_valid_trajectories(case: Case, name: str) -> None:
    trajectory = load_trajectory(case.trajectory_path(name))
    assert trajectory.exitCode == 0 and trajectory.turns


def test_fixtures_need_only_bash_and_python() -> None:
    """No interpreter beyond bash and python3 in any fixture or grader script."""
    for path in [*(REPO / "evals" / "capability").rglob("*.sh")]:
        first = path.read_text().splitlines()[0]
        if first.startswith("#!"):
            assert first.endswith(("bash", "python3")), f"{path.relative_to(REPO)}: {first}"


# --- playing the cases ---------------------------------------------------------


def play(case: Case, trajectory: str | None) -> tuple[AgentResult | None, int, str]:
    """One repeat of `case`: (agent result or None when untouched, grader exit, output)."""
    from capeval.runner.httpfixture import substitute_url

    base = Path(tempfile.mkdtemp(prefix=f"test-{case.id}-"))
    try:
        work = prepare_workdir(REPO, case, dest=base / "work")
        with HttpFixture() if case.httpFixture else _null() as http:
            result = None
            if trajectory is not None:
                url = http.url if http else None
                request = AgentRequest(
                    workdir=work,
                    prompt=substitute_url(case.prompt, url) if url else case.prompt,
                    provider="scripted",
                    model=trajectory,
                    case_dir=case.dir,
                    capture_dir=base / "capture",
                    timeout_s=60,
                    env={"EVAL_HTTP_URL": url} if url else {},
                    http_url=url,
                )
                result = ScriptedAdapter(AgentConfig(name="scripted", type="scripted")).run(request)
            env = dict(os.environ)
            if http:
                env.update(EVAL_HTTP_URL=http.url, EVAL_HTTP_TOKEN=http.token)
            graded = run_process(["bash", str(case.verify_path)], cwd=work, env=env, timeout_s=60)
        output = (graded.stdout + graded.stderr).decode(errors="replace")
        return result, graded.exit_code, output
    finally:
        shutil.rmtree(base, ignore_errors=True)


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def behaviors_of(result: AgentResult | None) -> dict[str, Any]:
    from capeval.core.behaviors import derive_behaviors

    assert result is not None and result.summary is not None, result
    return dict(derive_behaviors(result.summary))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case_is_honest_and_its_trajectories_behave(case: Case) -> None:
    _, untouched, _ = play(case, None)
    assert untouched != 0, "the grader passes on the untouched fixture"

    oracle, graded, output = play(case, "oracle")
    assert oracle is not None and (oracle.status, oracle.exitCode) == ("done", 0), oracle
    assert graded == 0, f"the grader fails after the oracle: {output}"
    if case.maxTurns is not None:
        assert oracle.turnsUsed is not None and oracle.turnsUsed <= case.maxTurns
    good = behaviors_of(oracle)
    assert all(r.holds(good) for r in case.requireBehaviors), good

    sloppy, sloppy_graded, output = play(case, "sloppy")
    assert sloppy is not None and sloppy.status == "done", sloppy
    assert (sloppy_graded == 0) == (case.id not in SLOPPY_FAILS_GRADER), output
    bad = behaviors_of(sloppy)

    if case.bait is not None:
        metric, threshold = case.bait.metric, case.bait.threshold
        assert good[metric] <= threshold, f"oracle misbehaves: {metric} = {good[metric]}"
        assert bad[metric] > threshold, f"sloppy does not misbehave: {metric} = {bad[metric]}"
    else:
        # Sloppy habits on ordinary cases: working silently for several turns.
        assert bad["longestToolOnlyStreak"] >= 2
        assert bad["longestToolOnlyStreak"] > good["longestToolOnlyStreak"]


def test_the_results_folder_commits_only_the_frozen_baseline() -> None:
    # docs/result-formats.md: results are ignored by git except the gate baseline.
    # Anything else committed there would join every user's history and
    # named queries, which read the folder by default.
    tracked = subprocess.run(
        ["git", "ls-files", "evals/capability/results"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert tracked == ["evals/capability/results/baseline.json"]
