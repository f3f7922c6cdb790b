"""What another run writes between planning and taking the stream's lock.

`plan_run` reads a resumed stream without its lock (a dry run must not take
it), and the CLI does more before `execute` locks it (the baseline is read,
every agent's version probed: seconds with real CLIs). A run still ending in
that window, or one started on the same --jsonl, writes rows the plan never
saw. These tests put such rows there at exactly that point, with the real
writer and the scripted agent, so the interleaving is fixed, not timed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.results.jsonl import JsonlWriter
from capeval.runner.options import RunError, RunOptions, plan_path
from capeval.runner.plan import plan_run
from capeval.runner.run import execute
from tests.runhelpers import capeval, write_case

pytestmark = pytest.mark.slow

CELL = "scripted:oracle"


def _two_repeats(root: Path, stream: Path) -> list[str]:
    """The lines of a finished run of one case with two repeats, in stream order."""
    write_case(root, "alpha")
    done = capeval(root, "--repeats", "2", "--jsonl", str(stream), "-q")
    assert done.returncode == 0, done.stderr
    lines = stream.read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["repeat"] for line in lines) == [0, 1]
    return lines


def test_a_repeat_finished_after_the_resume_read_the_stream_is_not_run_again(
    tmp_path: Path,
) -> None:
    stream = tmp_path / "rows.jsonl"
    lines = _two_repeats(tmp_path, stream)
    first, last = sorted(lines, key=lambda line: json.loads(line)["repeat"])
    # The stream as `--resume` finds it while the run is still ending: repeat 1 in flight.
    stream.write_text(first + "\n", encoding="utf-8")
    options = RunOptions(root=tmp_path, resume=stream, handle_signals=False)
    plan = plan_run(options)
    assert [j.triple for j in plan.todo] == [(CELL, "alpha", 1)]

    # That run ends: its last row, written under its own lock, then released.
    with JsonlWriter(stream) as other:
        other.write(json.loads(last))

    outcome = execute(options, plan)
    assert stream.read_text(encoding="utf-8").splitlines() == [first, last]  # no second repeat 1
    assert outcome.new_rows == 0 and len(outcome.rows) == 2
    assert outcome.exit_code == 0


def test_a_run_that_wrote_to_the_stream_after_planning_is_refused(tmp_path: Path) -> None:
    other_stream = tmp_path / "other.jsonl"
    [row, *_] = _two_repeats(tmp_path, other_stream)
    stream = tmp_path / "rows.jsonl"
    options = RunOptions(root=tmp_path, jsonl=stream, handle_signals=False)
    plan = plan_run(options)  # the stream does not exist yet: nothing to refuse
    assert len(plan.todo) == 1

    # Another run started on the same --jsonl gets the lock first and writes a row.
    with JsonlWriter(stream) as other:
        other.write(json.loads(row))

    with pytest.raises(RunError, match="already holds rows; pass --resume"):
        execute(options, plan)
    assert stream.read_text(encoding="utf-8").splitlines() == [row]
    assert not plan_path(stream).exists()  # the other run's plan is not this one's
