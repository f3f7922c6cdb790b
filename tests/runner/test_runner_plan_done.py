"""What `capeval run --resume S --dry-run` says is done and left of an interrupted run.

The dry run is how a user checks a resume before spending an hour of agent
time on it; nothing executes after it, so its counts are the only place a
wrong "done" would show (a real run reads the stream again under its lock).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.core.row import triple
from capeval.runner.options import RunOptions
from capeval.runner.plan import plan_run
from capeval.runner.run import execute
from tests.runhelpers import capeval, write_case

pytestmark = pytest.mark.slow

CELL = "scripted:oracle"


@pytest.fixture
def interrupted(tmp_path: Path) -> Path:
    """A run of two cases x three repeats that ended with 2 of 6 repeats written, then torn."""
    write_case(tmp_path, "alpha")
    write_case(tmp_path, "beta")
    stream = tmp_path / "rows.jsonl"
    full = capeval(tmp_path, "--repeats", "3", "--jsonl", str(stream), "-q")
    assert full.returncode == 0, full.stderr
    by_key = {
        (row["id"], row["repeat"]): line
        for line in stream.read_text(encoding="utf-8").splitlines()
        for row in [json.loads(line)]
    }
    alpha0, beta2 = by_key["alpha", 0], by_key["beta", 2]
    # The same finished repeat twice (a hand-joined file), then a line torn by a kill.
    torn = by_key["alpha", 1][:40]
    stream.write_text(f"{alpha0}\n{beta2}\n{alpha0}\n{torn}", encoding="utf-8")
    return stream


def test_the_dry_run_counts_each_finished_repeat_once_and_lists_the_rest(
    interrupted: Path,
) -> None:
    proc = capeval(interrupted.parent, "--resume", str(interrupted), "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["total"] == 6 and plan["done"] == 2
    assert [(t["variantId"], t["id"], t["repeat"]) for t in plan["todo"]] == [
        (CELL, "alpha", 1),
        (CELL, "alpha", 2),
        (CELL, "beta", 0),
        (CELL, "beta", 1),
    ]
    assert "rows.jsonl:4: skipped a torn last line" in proc.stderr

    text = capeval(interrupted.parent, "--resume", str(interrupted), "--dry-run")
    assert text.returncode == 0, text.stderr
    assert "= 6 repeats (4 to run," in text.stdout


def test_rows_of_repeats_outside_the_plan_are_not_done(interrupted: Path) -> None:
    # Rows the plan does not want (a repeat past --repeats, a cell not in the
    # matrix) are no part of the run: neither done nor carried into its results.
    lines = interrupted.read_text(encoding="utf-8").splitlines()[:2]
    extra = {**json.loads(lines[0]), "repeat": 3}
    other = {**json.loads(lines[0]), "variantId": "scripted:other"}
    interrupted.write_text(
        "\n".join([*lines, json.dumps(extra), json.dumps(other)]) + "\n", encoding="utf-8"
    )
    options = RunOptions(root=interrupted.parent, resume=interrupted, handle_signals=False)
    plan = plan_run(options)
    assert sorted(triple(r) for r in plan.done) == [(CELL, "alpha", 0), (CELL, "beta", 2)]
    assert plan.to_json()["done"] == 2 and len(plan.todo) == 4

    # The run reads the stream again under its lock; that read keeps them out too.
    outcome = execute(options, plan)
    assert [triple(r) for r in outcome.rows] == [j.triple for j in plan.jobs]
    assert outcome.new_rows == 4 and outcome.exit_code == 0
