"""Shards of a run (capeval.core.shards): a partition, the same on every machine."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capeval.core.shards import (
    RULE,
    Shard,
    assign,
    case_weights,
    derived_run_id,
    digest,
    parse_shard,
    run_id_problem,
    shard_stream_name,
    slice_of,
)

ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-:=.@/", min_size=1, max_size=12)


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[tuple[str, str, int]], dict[str, int]]:
    variants = draw(st.lists(ids, min_size=1, max_size=4, unique=True))
    cases = draw(st.lists(ids, min_size=1, max_size=12, unique=True))
    repeats = draw(st.integers(min_value=1, max_value=5))
    weighted = draw(st.booleans())
    weights = (
        {c: draw(st.integers(min_value=1, max_value=10**7)) for c in cases if draw(st.booleans())}
        if weighted
        else {}
    )
    triples = [(v, c, r) for v in variants for c in cases for r in range(repeats)]
    return triples, weights


@given(plan=plans(), count=st.integers(min_value=1, max_value=40))
def test_any_count_partitions_the_triples_exactly_once(
    plan: tuple[list[tuple[str, str, int]], dict[str, int]], count: int
) -> None:
    triples, weights = plan
    slices = [slice_of(triples, Shard(i, count), weights) for i in range(1, count + 1)]
    assert sum(len(s) for s in slices) == len(triples)
    assert set().union(*slices) == set(triples)


@given(plan=plans(), count=st.integers(min_value=1, max_value=12), seed=st.integers())
def test_the_split_is_stable_under_reordering(
    plan: tuple[list[tuple[str, str, int]], dict[str, int]], count: int, seed: int
) -> None:
    """Cases (and variants, repeats) listed in another order cut the same shards: the
    case folder's listing order differs between machines and filesystems."""
    triples, weights = plan
    shuffled = list(triples)
    random.Random(seed).shuffle(shuffled)
    reordered_weights = dict(sorted(weights.items(), reverse=True))
    assert assign(shuffled, count, reordered_weights) == assign(triples, count, weights)


@given(plan=plans(), count=st.integers(min_value=1, max_value=12))
def test_without_weights_the_shards_differ_in_size_by_at_most_one(
    plan: tuple[list[tuple[str, str, int]], dict[str, int]], count: int
) -> None:
    triples, _weights = plan
    sizes = [len(slice_of(triples, Shard(i, count))) for i in range(1, count + 1)]
    assert max(sizes) - min(sizes) <= 1


def test_weights_balance_the_shards_durations() -> None:
    """One slow case and many quick ones: the slow case's repeats are spread, and each
    shard's total stays within the heaviest single repeat of the others'."""
    weights = {"slow": 600_000, **{f"quick-{i}": 10_000 for i in range(20)}}
    triples = [("v", c, r) for c in weights for r in range(3)]
    owner = assign(triples, 3, weights)
    loads = [sum(weights[t[1]] for t, i in owner.items() if i == s) for s in (1, 2, 3)]
    assert max(loads) - min(loads) <= max(weights.values())
    assert {owner[("v", "slow", r)] for r in range(3)} == {1, 2, 3}


def test_the_rule_is_pinned() -> None:
    """The split of a fixed plan, worked by hand: heaviest case first, each triple to
    the least loaded shard (the lowest index among equals). A change to the rule must
    change RULE too (shards cut by two rules are never merged as one run)."""
    triples = [(v, c, r) for v in ("old", "new") for c in ("b", "a", "c") for r in range(2)]
    owner = assign(triples, 3, {"a": 5, "b": 1, "c": 3})
    assert RULE == "lpt-case-ms-v1"
    assert owner == {
        ("new", "a", 0): 1,
        ("new", "a", 1): 2,
        ("old", "a", 0): 3,
        ("old", "a", 1): 1,
        ("new", "c", 0): 2,
        ("new", "c", 1): 3,
        ("old", "c", 0): 2,
        ("old", "c", 1): 3,
        ("new", "b", 0): 1,
        ("new", "b", 1): 1,
        ("old", "b", 0): 2,
        ("old", "b", 1): 3,
    }


def test_round_robin_deals_in_case_then_variant_then_repeat_order() -> None:
    triples = [(v, c, r) for v in ("y", "x") for c in ("b", "a") for r in range(2)]
    owner = assign(triples, 3)
    dealt = sorted(owner, key=lambda t: (t[1], t[0], t[2]))
    assert [owner[t] for t in dealt] == [1, 2, 3, 1, 2, 3, 1, 2]


@pytest.mark.parametrize(
    ("text", "shard"), [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)), (" 3 / 3 ", Shard(3, 3))]
)
def test_parse_shard(text: str, shard: Shard) -> None:
    assert parse_shard(text) == shard
    assert str(shard) == text.replace(" ", "")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("0/3", "shards count from 1"),
        ("4/3", "I must be from 1 to N"),
        ("1/0", "N must be from 1"),
        ("2", "not I/N"),
        ("a/b", "not I/N"),
        ("1/20000", "N must be from 1 to 10,000"),
    ],
)
def test_parse_shard_refuses(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_shard(text)


def test_case_weights_are_recent_medians_and_fill_the_unknown() -> None:
    durations = {"a": [100.0, 300.0, 200.0], "b": [1000.0, 3000.0], "gone": [5.0]}
    assert case_weights(durations, ["a", "b", "new"]) == {"a": 200, "b": 2000, "new": 1100}
    assert case_weights({}, ["a"]) == {}
    assert case_weights({"a": [float("nan"), -1.0]}, ["a"]) == {}
    assert case_weights({"a": [0.2]}, ["a"]) == {"a": 1}  # never 0


def test_digest_is_canonical() -> None:
    assert digest({"b": [1, 2], "a": "x"}) == digest({"a": "x", "b": [1, 2]})
    assert digest({"a": 1}) != digest({"a": 2})
    assert derived_run_id("0123456789abcdef") == "plan-0123456789ab"
    assert run_id_problem(derived_run_id(digest({}))) is None


@pytest.mark.parametrize("run_id", ["", "-x", "a b", "a/b", "x" * 101, "é"])
def test_run_ids_that_cannot_name_files_are_refused(run_id: str) -> None:
    assert run_id_problem(run_id) is not None


def test_shard_stream_name() -> None:
    assert shard_stream_name("gh-12", Shard(2, 3)) == "gh-12.shard-2-of-3.jsonl"
