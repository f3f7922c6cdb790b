"""What one run must not do to another's outputs, and a plan too big to build.

A row points at its repeat's artifacts folder: a later run (or one started
at the same moment) writing the same folder left the earlier run's rows
pointing at its evidence. And `--repeats` had no bound: the plan built a job
for every repeat up front and grew for minutes before anything ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.config import MAX_TOTAL_REPEATS
from capeval.runner.artifacts import (
    CLAIM_FILE,
    SUMMARY_FILE,
    ArtifactsTaken,
    claim_cells,
    read_claim,
    taken_by_others,
)
from capeval.runner.options import RunError, RunOptions
from capeval.runner.plan import plan_run
from capeval.runner.run import execute
from tests.runhelpers import (
    capeval,
    eventually,
    interrupt_when,
    read_rows,
    shell,
    start_capeval,
    write_case,
    write_done,
)

CELL = "scripted%3Aoracle"


def _summary_text(folder: Path) -> str:
    summary = json.loads((folder / SUMMARY_FILE).read_text())
    return str(summary["turns"][0]["assistantTurn"]["content"][0]["text"])


# -- a reused --artifacts folder --------------------------------------------------


@pytest.mark.slow
def test_a_new_run_into_a_used_artifacts_folder_is_refused_before_it_runs(
    tmp_path: Path,
) -> None:
    write_case(tmp_path, "alpha", trajectories={"oracle": [write_done("from A")]})
    first = capeval(tmp_path, "--case", "alpha", "--jsonl", "A.jsonl", "--artifacts", "shared")
    assert first.returncode == 0, first.stderr
    (row,) = read_rows(tmp_path / "A.jsonl")
    folder = tmp_path / row["artifacts"]
    assert _summary_text(folder) == "from A"

    write_case(tmp_path, "alpha", trajectories={"oracle": [write_done("from B")]})
    for extra in ([], ["--dry-run"]):
        second = capeval(
            tmp_path, "--case", "alpha", "--jsonl", "B.jsonl", "--artifacts", "shared", *extra
        )
        assert second.returncode == 2, second.stderr
        message = second.stderr
        assert f"--artifacts shared: shared/{CELL}/alpha belongs to run {row['runId']}" in message
        assert "(rows in A.jsonl)" in message
        assert "pass another --artifacts folder" in message
        assert f"rm -r shared/{CELL}/alpha" in message
    assert _summary_text(folder) == "from A"  # A's row still points at A's evidence
    assert not (tmp_path / "B.jsonl").exists()

    # The fix the message names works: another folder, or the old evidence removed.
    other = capeval(tmp_path, "--case", "alpha", "--jsonl", "B.jsonl", "--artifacts", "mine", "-q")
    assert other.returncode == 0, other.stderr
    assert read_rows(tmp_path / "B.jsonl")[0]["artifacts"] == f"mine/{CELL}/alpha/0"


@pytest.mark.slow
def test_the_default_folder_of_a_stream_used_before_is_refused_too(tmp_path: Path) -> None:
    # The stream was deleted, its evidence (`<stem>.artifacts`) was not.
    write_case(tmp_path, "alpha")
    assert capeval(tmp_path, "--jsonl", "res/a.jsonl", "-q").returncode == 0
    (tmp_path / "res/a.jsonl").unlink()
    (tmp_path / "res/a.jsonl.plan.json").unlink()
    again = capeval(tmp_path, "--jsonl", "res/a.jsonl", "-q")
    assert again.returncode == 2, again.stderr
    assert "the artifacts folder res/a.artifacts (beside a.jsonl)" in again.stderr
    assert "an earlier run on res/a.jsonl whose rows are no longer there" in again.stderr
    assert "--no-artifacts" in again.stderr
    assert capeval(tmp_path, "--jsonl", "res/a.jsonl", "--no-artifacts", "-q").returncode == 0


@pytest.mark.slow
def test_evidence_no_run_claimed_is_not_replaced(tmp_path: Path) -> None:
    # A folder from before runs claimed theirs (or copied in by hand).
    write_case(tmp_path, "alpha")
    old = tmp_path / "shared" / CELL / "alpha" / "0"
    old.mkdir(parents=True)
    (old / "verify.log").write_text("older evidence\n")
    proc = capeval(tmp_path, "--jsonl", "r.jsonl", "--artifacts", "shared", "-q")
    assert proc.returncode == 2, proc.stderr
    assert f"shared/{CELL}/alpha already holds another run's evidence" in proc.stderr
    assert (old / "verify.log").read_text() == "older evidence\n"
    assert not (old.parent / CLAIM_FILE).exists()  # the refused run claimed nothing


@pytest.mark.slow
def test_resume_replaces_its_own_repeats_but_not_another_runs(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha", trajectories={"oracle": [write_done("from A")]})
    assert capeval(tmp_path, "--jsonl", "A.jsonl", "--artifacts", "shared", "-q").returncode == 0
    folder = tmp_path / "shared" / CELL / "alpha" / "0"
    # Run B kept no evidence; its row is lost, so a resume runs the repeat again.
    assert capeval(tmp_path, "--jsonl", "B.jsonl", "--no-artifacts", "-q").returncode == 0
    (tmp_path / "B.jsonl").write_text("")
    write_case(tmp_path, "alpha", trajectories={"oracle": [write_done("from B")]})
    proc = capeval(tmp_path, "--resume", "B.jsonl", "--artifacts", "shared", "-q")
    assert proc.returncode == 2, proc.stderr
    assert "--artifacts shared: " in proc.stderr and "(rows in A.jsonl)" in proc.stderr
    assert _summary_text(folder) == "from A"
    assert read_rows(tmp_path / "B.jsonl") == []

    # A's own resume may replace the folder of a repeat it must run again.
    (tmp_path / "A.jsonl").write_text("")
    proc = capeval(tmp_path, "--resume", "A.jsonl", "-q")
    assert proc.returncode == 0, proc.stderr
    assert _summary_text(folder) == "from B"


@pytest.mark.slow
def test_of_two_runs_planned_at_once_only_one_writes_the_folder(tmp_path: Path) -> None:
    # Both plan before either claims (the CLI does more between plan and run):
    # the check when planning passes for both, the claim decides.
    write_case(tmp_path, "alpha")
    shared = tmp_path / "shared"
    a = RunOptions(root=tmp_path, jsonl=tmp_path / "A.jsonl", artifacts=shared)
    b = RunOptions(root=tmp_path, jsonl=tmp_path / "B.jsonl", artifacts=shared)
    plan_a, plan_b = plan_run(a), plan_run(b)
    assert execute(a, plan_a).exit_code == 0
    with pytest.raises(RunError, match=f"belongs to run {plan_a.run_id}"):
        execute(b, plan_b)
    assert read_rows(tmp_path / "B.jsonl") == []
    claim = read_claim(shared / CELL / "alpha")
    assert claim is not None and claim["runId"] == plan_a.run_id


@pytest.mark.slow
def test_a_run_in_flight_keeps_its_folder_from_a_second_run(tmp_path: Path) -> None:
    started = tmp_path / "started"
    write_case(tmp_path, "hang", trajectories={"oracle": [shell(f"touch {started}; sleep 60")]})
    first = start_capeval(tmp_path, "--jsonl", "A.jsonl", "--artifacts", "shared", "-q")
    second = None
    try:
        assert eventually(started.exists, within=30), "the first run never started its repeat"
        second = capeval(tmp_path, "--jsonl", "B.jsonl", "--artifacts", "shared", "-q")
    finally:
        interrupt_when(first, lambda: True)
    assert second is not None and second.returncode == 2, second
    assert f"shared/{CELL}/hang belongs to run " in second.stderr
    assert "(rows in A.jsonl)" in second.stderr


@pytest.mark.slow
def test_a_run_stopped_before_its_first_row_does_not_block_its_stream(tmp_path: Path) -> None:
    # Ctrl-C, then the same command again: the stream is empty, so the new run
    # may start on it (as before claims), and takes over the old run's claim.
    started = tmp_path / "started"
    hang = [shell(f"test -e {started} && exit 0; touch {started}; sleep 60"), write_done()]
    write_case(tmp_path, "alpha", trajectories={"oracle": hang})
    first = start_capeval(tmp_path, "--jsonl", "r.jsonl", "-q")
    interrupt_when(first, started.exists)
    assert first.returncode == 130 and read_rows(tmp_path / "r.jsonl") == []
    before = read_claim(tmp_path / "r.artifacts" / CELL / "alpha")
    assert before is not None

    again = capeval(tmp_path, "--jsonl", "r.jsonl", "-q")
    assert again.returncode == 0, again.stderr
    (row,) = read_rows(tmp_path / "r.jsonl")
    after = read_claim(tmp_path / "r.artifacts" / CELL / "alpha")
    assert after == {"runId": row["runId"], "rows": "../../../r.jsonl"} != before


def test_a_claim_is_exclusive_and_all_or_nothing(tmp_path: Path) -> None:
    rows = tmp_path / "a.jsonl"
    made = claim_cells(tmp_path, {("v", "c1"): [0]}, "run-a", rows)
    assert made == [tmp_path / "v" / "c1" / CLAIM_FILE]
    assert claim_cells(tmp_path, {("v", "c1"): [0, 1]}, "run-a", rows) == []  # its own
    with pytest.raises(ArtifactsTaken) as info:
        # c0 is free and claimed first, then given back when c1 is refused.
        claim_cells(tmp_path, {("v", "c0"): [0], ("v", "c1"): [0]}, "run-b", tmp_path / "b")
    (taken,) = info.value.taken
    assert (taken.folder, taken.run_id, taken.rows) == (tmp_path / "v" / "c1", "run-a", rows)
    assert not (tmp_path / "v" / "c0").exists()
    assert taken_by_others(tmp_path, {("v", "c1"): [0]}, "run-a") == []
    assert [t.run_id for t in taken_by_others(tmp_path, {("v", "c1"): [0]}, "x")] == ["run-a"]
    # A claim caught half-written belongs to some run, not to whoever asks next.
    (tmp_path / "v" / "c1" / CLAIM_FILE).write_text("")
    with pytest.raises(ArtifactsTaken):
        claim_cells(tmp_path, {("v", "c1"): [0]}, "run-a", rows)


# -- --repeats bound --------------------------------------------------------------


def test_a_plan_over_the_bound_is_refused_from_python(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    over = MAX_TOTAL_REPEATS // 2 + 1  # two variants: the total is over, each cell is not
    options = RunOptions(
        root=tmp_path,
        jsonl=tmp_path / "r.jsonl",
        matrix=("a=scripted:oracle,b=scripted:oracle",),
        repeats=over,
        dry_run=True,
    )
    with pytest.raises(RunError) as info:
        plan_run(options)
    assert str(info.value).startswith(f"--repeats {over}: 2 variants x 1 case x {over} repeats")
    assert "1,000,000" in str(info.value)
    # At the bound it plans.
    plan = plan_run(RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", repeats=3))
    assert len(plan.jobs) == 3


def test_a_configured_repeats_over_the_bound_names_the_file(tmp_path: Path) -> None:
    # Each key is within its own bound; the plan (2 cases) is not.
    write_case(tmp_path, "alpha")
    write_case(tmp_path, "beta")
    (tmp_path / "capeval.toml").write_text(f"repeats = {MAX_TOTAL_REPEATS // 2 + 1}\n")
    with pytest.raises(RunError, match=r"^capeval\.toml: repeats = 500001: .* = 1000002 repeats"):
        plan_run(RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", dry_run=True))


def test_an_absurd_repeats_flag_is_refused_at_once(tmp_path: Path) -> None:
    # It used to grow to gigabytes for minutes; the timeout fails the test instead.
    write_case(tmp_path, "alpha")
    proc = capeval(tmp_path, "--repeats", "99999999999999999999", "--dry-run", timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("capeval run: --repeats 99999999999999999999: ")
    assert "Traceback" not in proc.stderr


class _CountingList(list):  # type: ignore[type-arg]
    iterations = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        _CountingList.iterations += 1
        return super().__iter__()


def test_todo_is_worked_out_once_until_the_plan_changes(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    plan = plan_run(RunOptions(root=tmp_path, jsonl=tmp_path / "r.jsonl", repeats=3))
    plan.jobs = _CountingList(plan.jobs)
    _CountingList.iterations = 0
    for _ in range(3):
        assert [j.repeat for j in plan.todo] == [0, 1, 2]
    plan.to_json()
    assert _CountingList.iterations == 1
    plan.todo.clear()  # a caller's copy: the plan's own is untouched
    assert len(plan.todo) == 3
    # A row lands: `done` grows in place, and todo follows.
    plan.done.append({"variantId": "scripted:oracle", "id": "alpha", "repeat": 1})
    assert [j.repeat for j in plan.todo] == [0, 2]
    plan.done = []
    assert [j.repeat for j in plan.todo] == [0, 1, 2]
