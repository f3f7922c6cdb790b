"""The repeats a stream's plan file names, per cell: what the gate holds a run to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capeval.core.shards import RULE
from capeval.results.planned import planned_repeats


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
