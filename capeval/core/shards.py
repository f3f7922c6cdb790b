"""Shards of a run: which (variant, case, repeat) triples shard I of N runs.

`capeval run --shard I/N` on N machines (CI matrix jobs, Kubernetes pods)
must split one plan into N disjoint slices that together hold every triple,
with nothing shared between the machines but the checkout. So the rule is a
pure function of the plan's triples, N and the cases' weights, and depends on
nothing a machine or a Python version could change (no `hash()`, no set or
dict iteration order):

1. The triples are ordered by weight, heaviest first, then by case id,
   variant id and repeat (code-point order of the strings).
2. Each goes, in that order, to the shard with the least total weight so far
   (the lowest shard index among equals): the greedy "longest processing time
   first" rule.

With equal weights step 2 deals the triples round-robin, so the shards'
sizes differ by at most one. The weights are whole milliseconds: the cases'
recent median durations from history when a plan has them (`case_weights`),
stored in the shard's plan so that a resume, and `capeval merge`, use the
very weights the shards were cut with.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Named in each shard's plan: a later capeval that cuts shards differently
# must not merge (or resume) shards cut by this rule as if they were its own.
RULE = "lpt-case-ms-v1"
MAX_SHARDS = 10_000
# How many of a case's latest repeats its weight is the median of.
RECENT_REPEATS = 20
# A run id names files (`<run-id>.jsonl`) and travels through CI variables.
RUN_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"

Triple = tuple[str, str, int]  # (variantId, caseId, repeat), as `capeval.core.row.triple`


@dataclass(frozen=True, order=True)
class Shard:
    """Shard `index` of `count`, 1-based as written (`--shard 2/3`)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """`I/N` with 1 <= I <= N; raises ValueError saying what to write."""
    found = re.fullmatch(r"\s*(\d{1,6})\s*/\s*(\d{1,6})\s*", text)
    if found is None:
        raise ValueError(f"{text!r} is not I/N (shard I of N, e.g. 2/3)")
    index, count = int(found.group(1)), int(found.group(2))
    if not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"{text!r}: N must be from 1 to {MAX_SHARDS:,}")
    if not 1 <= index <= count:
        raise ValueError(f"{text!r}: I must be from 1 to N ({count}); shards count from 1")
    return Shard(index, count)


def run_id_problem(run_id: str) -> str | None:
    """Why `run_id` cannot name a run, or None."""
    if re.fullmatch(RUN_ID_PATTERN, run_id) is None:
        return (
            f"{run_id!r} must be 1 to 100 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit (it names the run's files)"
        )
    return None


def assign(
    triples: Iterable[Triple], count: int, weights: Mapping[str, int] | None = None
) -> dict[Triple, int]:
    """The shard (1-based) of every triple; see the module docstring for the rule.

    `weights` maps case ids to whole milliseconds; a case it does not name
    weighs 1 (so no weights at all is round-robin).
    """
    if count < 1:
        raise ValueError("a run has at least one shard")
    known = weights or {}

    def weight(t: Triple) -> int:
        return max(1, int(known.get(t[1], 1)))

    order = sorted(set(triples), key=lambda t: (-weight(t), t[1], t[0], t[2]))
    loads = [(0, index) for index in range(count)]  # a heap: (weight so far, shard)
    out: dict[Triple, int] = {}
    for t in order:
        load, index = heapq.heappop(loads)
        out[t] = index + 1
        heapq.heappush(loads, (load + weight(t), index))
    return out


def slice_of(
    triples: Iterable[Triple], shard: Shard, weights: Mapping[str, int] | None = None
) -> set[Triple]:
    """The triples shard `shard` runs."""
    return {t for t, i in assign(triples, shard.count, weights).items() if i == shard.index}


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def case_weights(
    durations: Mapping[str, Sequence[float]], case_ids: Sequence[str]
) -> dict[str, int]:
    """Each of `case_ids`' weight in whole ms: the median of its recent durations.

    `durations` maps case ids to the `durationMs` of their latest repeats
    (`capeval.analysis.durations` reads them from history). A case with none
    weighs the median of the cases that have some. {} when no case has any:
    the shards are then cut round-robin.
    """
    wanted = set(case_ids)
    medians: dict[str, float] = {}
    for case, values in durations.items():
        usable = [float(v) for v in values if _is_duration(v)]
        if case in wanted and usable:
            medians[case] = _median(usable)
    if not medians:
        return {}
    typical = _median(list(medians.values()))
    return {case: max(1, round(medians.get(case, typical))) for case in sorted(wanted)}


def _is_duration(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def digest(doc: Any) -> str:
    """A hex SHA-256 of `doc` as canonical JSON (sorted keys, no spaces, ASCII)."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def derived_run_id(plan_digest: str) -> str:
    """The run id N shards of one plan agree on when no `--run-id` is given."""
    return f"plan-{plan_digest[:12]}"


def shard_stream_name(run_id: str, shard: Shard) -> str:
    """A shard's default row stream name, `<run-id>.shard-<I>-of-<N>.jsonl`."""
    return f"{run_id}.shard-{shard.index}-of-{shard.count}.jsonl"
