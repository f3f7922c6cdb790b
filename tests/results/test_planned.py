"""The repeats a stream's plan file names, per cell: what the gate holds a run to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capeval.core.shards import RULE
from capeval.results.planned import planned_repeats, planned_runs


def _plan(stream: Path, **extra: Any) -> Path:
    doc = {"runId": "r", "repeats": 3,
           "resolved": {"variants": [{"id": "v1"}, {"id": "v2"}], "cases": ["a", "b"]}, **extra}  # fmt: skip
    stream.with_name(stream.name + ".plan.json").write_text(json.dumps(doc))
    return stream


def test_every_cell_of_the_plan_with_its_repeats(tmp_path: Path) -> None:
    stream = _plan(tmp_path / "run.jsonl")
    assert planned_repeats(stream) == {"v1::a": 3, "v1::b": 3, "v2::a": 3, "v2::b": 3}


def test_no_plan_or_no_usable_plan_says_nothing(tmp_path: Path) -> None:
    assert planned_repeats(tmp_path / "run.jsonl") is None
    (tmp_path / "bad.jsonl.plan.json").write_text("{not json")
    assert planned_repeats(tmp_path / "bad.jsonl") is None
    (tmp_path / "v3.jsonl.plan.json").write_text(json.dumps({"version": 3, "cases": []}))
    assert planned_repeats(tmp_path / "v3.jsonl") is None


def test_a_shard_plans_its_slice_and_the_slices_make_the_plan(tmp_path: Path) -> None:
    weights = {"a": 5, "b": 1}
    total: dict[str, int] = {}
    for index in (1, 2, 3):
        stream = _plan(
            tmp_path / f"s{index}.jsonl",
            shard=f"{index}/3",
            sharding={"index": index, "count": 3, "rule": RULE, "weights": weights},
        )
        found = planned_repeats(stream)
        assert found is not None and sum(found.values()) < 12
        for key, count in found.items():
            total[key] = total.get(key, 0) + count
    assert total == {"v1::a": 3, "v1::b": 3, "v2::a": 3, "v2::b": 3}


def test_a_shard_cut_by_an_unknown_rule_says_nothing(tmp_path: Path) -> None:
    stream = _plan(tmp_path / "s.jsonl", shard="1/2", sharding={"rule": "other", "weights": {}})
    assert planned_repeats(stream) is None


def _shard(tmp_path: Path, index: int, count: int, run_id: str = "r") -> Path:
    sharding = {"index": index, "count": count, "rule": RULE, "weights": {}, "planDigest": "d"}
    return _plan(tmp_path / f"{run_id}-s{index}.jsonl", runId=run_id,
                 shard=f"{index}/{count}", sharding=sharding)  # fmt: skip


def test_a_shard_given_alone_plans_its_whole_run_and_names_the_shards_not_given(
    tmp_path: Path,
) -> None:
    # One shard of three gated alone would be judged on a third of the run.
    whole = {"v1::a": 3, "v1::b": 3, "v2::a": 3, "v2::b": 3}
    assert planned_runs([_shard(tmp_path, 2, 3)]) == (whole, [("r", "1/3"), ("r", "3/3")])
    every = [_shard(tmp_path, i, 3) for i in (1, 2, 3)]
    assert planned_runs(every) == (whole, [])


def test_a_stream_given_twice_plans_once(tmp_path: Path) -> None:
    stream = _plan(tmp_path / "run.jsonl")
    once = planned_runs([stream])
    assert planned_runs([stream, tmp_path / "." / "run.jsonl"]) == once
    assert once == ({"v1::a": 3, "v1::b": 3, "v2::a": 3, "v2::b": 3}, [])


def test_a_shard_that_owns_no_triple_need_not_be_given(tmp_path: Path) -> None:
    # 12 triples over 13 shards: shard 13 had nothing to run (capeval merge skips it too).
    given = [_shard(tmp_path, i, 13) for i in range(1, 13)]
    assert planned_runs(given)[1] == []
    assert planned_runs(given[1:])[1] == [("r", "1/13")]
