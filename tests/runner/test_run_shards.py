"""`capeval run --shard I/N` and `--run-id`: a plan's slices, their plans and rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.core.row import triple
from capeval.core.shards import Shard, slice_of
from capeval.runner.options import RunError, RunOptions
from capeval.runner.plan import plan_run
from capeval.runner.run import execute
from tests.runhelpers import read_rows, write_case

MATRIX = ("a=scripted:oracle", "b=scripted:oracle")


def _workspace(root: Path) -> None:
    for case in ("alpha", "beta", "gamma"):
        write_case(root, case)


def _options(root: Path, **changes: object) -> RunOptions:
    fields: dict[str, object] = {
        "root": root,
        "matrix": MATRIX,
        "repeats": 2,
        "handle_signals": False,
        **changes,
    }
    return RunOptions(**fields)  # type: ignore[arg-type]


def test_n_shards_run_every_triple_once_under_one_derived_run_id(tmp_path: Path) -> None:
    _workspace(tmp_path)
    everything = plan_run(_options(tmp_path, dry_run=True))
    outcomes = [execute(_options(tmp_path, shard=f"{i}/3")) for i in (1, 2, 3)]
    run_ids = {o.plan.run_id for o in outcomes}
    assert len(run_ids) == 1 and next(iter(run_ids)).startswith("plan-")
    held = [triple(r) for o in outcomes for r in read_rows(o.jsonl_path)]
    assert sorted(held) == sorted(j.triple for j in everything.jobs)
    for index, outcome in enumerate(outcomes, start=1):
        assert outcome.jsonl_path.name == f"{outcome.plan.run_id}.shard-{index}-of-3.jsonl"
        rows = read_rows(outcome.jsonl_path)
        assert {r["runId"] for r in rows} == run_ids
        assert {r["provenance"]["shard"] for r in rows} == {f"{index}/3"}
        assert {r["provenance"]["executor"] for r in rows} == {"local"}
        plan = json.loads(
            outcome.jsonl_path.with_name(outcome.jsonl_path.name + ".plan.json").read_text()
        )
        assert plan["shard"] == f"{index}/3"
        assert plan["sharding"]["index"] == index and plan["sharding"]["count"] == 3
        assert plan["sharding"]["planned"] == 12
        assert len(rows) == 4  # 12 triples, round-robin (no history): 4 each


def test_the_derived_run_id_is_the_plans(tmp_path: Path) -> None:
    """Shards of one plan agree on it; another plan (repeats, weights, the shard count)
    gets another, so its shards cannot be merged with these by accident."""
    _workspace(tmp_path)

    def run_id(**changes: object) -> str:
        return plan_run(_options(tmp_path, dry_run=True, **changes)).run_id

    one = run_id(shard="1/3")
    assert run_id(shard="3/3") == one
    assert run_id(shard="1/3", repeats=3) != one
    assert run_id(shard="1/2") != one
    assert run_id(shard="1/3", shard_durations={"alpha": [5000.0]}) != one
    assert run_id(shard="1/3", run_id="nightly-7") == "nightly-7"
    assert plan_run(_options(tmp_path, dry_run=True)).run_id != one  # not sharded: a new id


def test_history_weighs_the_cases_and_the_plan_keeps_the_weights(tmp_path: Path) -> None:
    _workspace(tmp_path)
    durations = {"alpha": [9000.0, 11000.0], "beta": [1000.0]}
    plan = plan_run(_options(tmp_path, dry_run=True, shard="2/3", shard_durations=durations))
    weights = plan.shape["sharding"]["weights"]
    assert weights == {"alpha": 10000, "beta": 1000, "gamma": 5500}
    triples = [(v, c, r) for v in ("a", "b") for c in ("alpha", "beta", "gamma") for r in (0, 1)]
    assert {j.triple for j in plan.jobs} == slice_of(triples, Shard(2, 3), weights)


def test_a_resumed_shard_runs_its_missing_triples_with_the_stored_weights(tmp_path: Path) -> None:
    _workspace(tmp_path)
    durations = {"alpha": [9000.0], "beta": [1000.0], "gamma": [3000.0]}
    first = execute(_options(tmp_path, shard="1/2", shard_durations=durations))
    stream = first.jsonl_path
    lines = stream.read_text().splitlines(keepends=True)
    stream.write_text("".join(lines[:-2]))
    # Today's history would cut another split: the resume keeps the shard's own.
    resumed = execute(_options(tmp_path, resume=stream, shard_durations={"beta": [1.0]}))
    assert resumed.plan.run_id == first.plan.run_id
    assert resumed.new_rows == 2
    rows = read_rows(stream)
    assert sorted(triple(r) for r in rows) == sorted(j.triple for j in first.plan.jobs)
    assert len(rows) == len(first.plan.jobs)


def test_a_shard_flag_given_again_on_resume_must_be_the_plans(tmp_path: Path) -> None:
    _workspace(tmp_path)
    first = execute(_options(tmp_path, shard="1/2"))
    with pytest.raises(RunError, match="--shard 2/2 differs from the run's plan"):
        plan_run(_options(tmp_path, resume=first.jsonl_path, shard="2/2"))


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"shard": "0/2"}, "--shard '0/2': I must be from 1 to N"),
        ({"shard": "two"}, "--shard 'two' is not I/N"),
        ({"run_id": "a/b"}, "--run-id 'a/b' must be 1 to 100 letters"),
    ],
)
def test_bad_shard_and_run_id_flags_are_refused(
    tmp_path: Path, changes: dict[str, object], words: str
) -> None:
    _workspace(tmp_path)
    with pytest.raises(RunError, match=words.replace("(", r"\(").replace(")", r"\)")):
        plan_run(_options(tmp_path, **changes))


def test_resume_refuses_another_run_id(tmp_path: Path) -> None:
    _workspace(tmp_path)
    first = execute(_options(tmp_path, run_id="mine", cases=("alpha",)))
    assert first.plan.run_id == "mine"
    assert {r["runId"] for r in read_rows(first.jsonl_path)} == {"mine"}
    with pytest.raises(RunError, match="--run-id other differs from the run id"):
        plan_run(_options(tmp_path, resume=first.jsonl_path, run_id="other"))
    again = plan_run(_options(tmp_path, resume=first.jsonl_path, run_id="mine"))
    assert again.run_id == "mine"


def test_a_shard_with_more_shards_than_triples_runs_nothing(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    outcome = execute(_options(tmp_path, matrix=(), repeats=1, shard="2/2"))
    assert outcome.plan.jobs == [] and outcome.exit_code == 0
    assert read_rows(outcome.jsonl_path) == []
