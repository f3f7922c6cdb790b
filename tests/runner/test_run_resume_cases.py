"""A resume runs the cases of the run it finishes, whatever the cases folder holds now."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from capeval.runner.options import RunError, RunOptions
from capeval.runner.plan import plan_run
from capeval.runner.run import execute
from tests.runhelpers import write_case


def _interrupted_run(root: Path) -> Path:
    """A finished two-repeat run cut back to its first row, as a kill leaves it."""
    write_case(root, "alpha")
    stream = root / "rows.jsonl"
    first = execute(RunOptions(root=root, jsonl=stream, repeats=2, handle_signals=False))
    assert first.exit_code == 0
    stream.write_text(stream.read_text().splitlines(keepends=True)[0])
    return stream


def test_a_case_added_broken_since_the_run_started_does_not_block_its_resume(
    tmp_path: Path,
) -> None:
    # The resume validated every case in the folder, so a case someone began
    # writing while a long run was interrupted refused the run's own resume
    # ("invalid JSON"), though the case is no part of that run.
    stream = _interrupted_run(tmp_path)
    broken = tmp_path / "evals/capability/cases/beta"
    broken.mkdir(parents=True)
    (broken / "case.json").write_text("{")

    plan = plan_run(RunOptions(resume=stream, handle_signals=False))
    assert [c.id for c in plan.cases] == ["alpha"]
    assert [j.triple for j in plan.todo] == [("scripted:oracle", "alpha", 1)]


def test_a_case_of_the_run_that_is_gone_is_named_on_resume(tmp_path: Path) -> None:
    stream = _interrupted_run(tmp_path)
    shutil.rmtree(tmp_path / "evals/capability/cases/alpha")
    write_case(tmp_path, "beta")
    with pytest.raises(RunError) as info:
        plan_run(RunOptions(resume=stream, handle_signals=False))
    assert "case 'alpha' of this run is no longer in the workspace" in str(info.value)


def test_a_case_of_the_run_broken_since_is_still_reported(tmp_path: Path) -> None:
    from capeval.core.problems import ProblemsError

    stream = _interrupted_run(tmp_path)
    (tmp_path / "evals/capability/cases/alpha/case.json").write_text("{")
    with pytest.raises(ProblemsError) as info:
        plan_run(RunOptions(resume=stream, handle_signals=False))
    assert [p.file for p in info.value.problems] == ["evals/capability/cases/alpha/case.json"]


def test_a_stream_joined_from_two_runs_is_refused(tmp_path: Path) -> None:
    # The other run's rows counted as this run's finished repeats: resuming
    # ran nothing, and the gate judged another run's repeats as this one's.
    import json

    stream = _interrupted_run(tmp_path)
    other = tmp_path / "other.jsonl"
    assert (
        execute(RunOptions(root=tmp_path, jsonl=other, repeats=2, handle_signals=False)).exit_code
        == 0
    )
    foreign = json.loads(other.read_text().splitlines()[1])
    with stream.open("a") as handle:
        handle.write(json.dumps(foreign) + "\n")
    own = json.loads(stream.read_text().splitlines()[0])["runId"]
    with pytest.raises(RunError) as info:
        plan_run(RunOptions(resume=stream, handle_signals=False))
    message = str(info.value)
    assert (
        f"--resume {stream}: it holds rows of 2 runs (runId {own}, and {foreign['runId']})"
        in message
    )
    assert "a file of their own" in message


def test_rows_another_run_wrote_between_planning_and_running_are_refused(
    tmp_path: Path,
) -> None:
    # The resume reads the stream again under its lock; rows of another run
    # that landed after planning counted as this run's finished repeats.
    import json

    stream = _interrupted_run(tmp_path)
    other = tmp_path / "other.jsonl"
    execute(RunOptions(root=tmp_path, jsonl=other, repeats=2, handle_signals=False))
    plan = plan_run(RunOptions(resume=stream, handle_signals=False))
    assert [j.triple for j in plan.todo] == [("scripted:oracle", "alpha", 1)]
    foreign = json.loads(other.read_text().splitlines()[1])  # repeat 1, the one to do
    with stream.open("a") as handle:
        handle.write(json.dumps(foreign) + "\n")
    with pytest.raises(RunError, match="it holds rows of 2 runs"):
        execute(RunOptions(resume=stream, handle_signals=False), plan)
    assert len(stream.read_text().splitlines()) == 2  # nothing run, nothing written


def test_rows_without_a_run_id_do_not_count_as_another_run(tmp_path: Path) -> None:
    import json

    stream = _interrupted_run(tmp_path)
    before = [j.triple for j in plan_run(RunOptions(resume=stream, handle_signals=False)).todo]
    row = json.loads(stream.read_text())
    row.pop("runId")
    stream.write_text(stream.read_text() + json.dumps(row) + "\n")
    plan = plan_run(RunOptions(resume=stream, handle_signals=False))
    assert [j.triple for j in plan.todo] == before == [("scripted:oracle", "alpha", 1)]
