"""What a run planned: the repeats per cell its plan file (`<stream>.plan.json`) names.

`capeval run` writes the plan beside its stream before the first repeat, so
a stream with fewer rows than its plan is an unfinished run (stopped,
crashed, or still running). The gate reads the plan to refuse judging such a
run as if it were whole (docs/gating.md#outcomes). A plan that is missing,
unreadable or not a plan says nothing: the stream is then judged on its rows,
as before plans existed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from capeval.core.row import result_key
from capeval.results.errors import JSON_ERRORS
from capeval.results.formats import LARGEST_PLAN, PLAN, looks_like_plan


def plan_beside(stream: str | Path) -> Path:
    """Where `capeval run` keeps the plan of the stream `stream`."""
    stream = Path(stream)
    return stream.with_name(stream.name + PLAN.suffixes[0])


def _read_plan(stream: str | Path) -> tuple[dict[str, object], list[str], list[str], int] | None:
    """(the plan doc, its variant ids, its case ids, its repeats); None without a usable plan."""
    path = plan_beside(stream)
    try:
        if not path.is_file() or path.stat().st_size > LARGEST_PLAN:
            return None
        doc = json.loads(path.read_bytes())
    except (OSError, *JSON_ERRORS):
        return None
    if not looks_like_plan(doc):
        return None
    resolved = doc.get("resolved")
    repeats = doc.get("repeats")
    if not isinstance(resolved, dict) or not isinstance(repeats, int) or isinstance(repeats, bool):
        return None
    variants = resolved.get("variants")
    cases = resolved.get("cases")
    if not isinstance(variants, list) or not isinstance(cases, list):
        return None
    ids = [v.get("id") for v in variants if isinstance(v, dict)]
    names = [i for i in ids if isinstance(i, str)]
    if len(names) != len(variants) or not all(isinstance(c, str) for c in cases):
        return None
    return doc, names, [str(c) for c in cases], repeats


def planned_repeats(stream: str | Path) -> dict[str, int] | None:
    """{resultKey: planned repeats} from the plan beside `stream`; None without a usable one.

    The cells are the plan's resolved variants times its resolved cases, each
    with the plan's `repeats`; a shard's plan (`capeval run --shard I/N`) names
    only the repeats of its slice.
    """
    read = _read_plan(stream)
    if read is None:
        return None
    doc, names, cases, repeats = read
    if doc.get("shard") is None:
        return {result_key(v, c): repeats for v in names for c in cases}
    # A shard's stream holds its slice of the plan, cut by the rule its plan names.
    from capeval.core.shards import RULE, parse_shard, slice_of

    sharding = doc.get("sharding")
    if not isinstance(sharding, dict) or sharding.get("rule") != RULE:
        return None
    try:
        shard = parse_shard(str(doc["shard"]))
    except ValueError:
        return None
    weights = sharding.get("weights")
    triples = [(v, c, r) for v in names for c in cases for r in range(repeats)]
    out: dict[str, int] = {}
    for v, c, _ in slice_of(triples, shard, weights if isinstance(weights, dict) else None):
        out[result_key(v, c)] = out.get(result_key(v, c), 0) + 1
    return out


def planned_runs(
    streams: Iterable[str | Path],
) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """({resultKey: planned repeats} over the runs `streams` belong to, the shards not given).

    A stream given twice plans once. A shard's stream stands for its whole
    run: the gate reads shard files as parts of one run, so a run of N
    shards of which fewer are given plans every repeat of the run, and the
    shards not given are named, as (run id, `I/N`); else one
    shard would gate clean on a third of the run.
    """
    from capeval.core.shards import RULE, assign, parse_shard

    planned: dict[str, int] = {}
    seen: set[Path] = set()
    # (run id, plan digest, N) -> (the whole run's cells, the shards owning a triple,
    # the shards given)
    runs: dict[tuple[str, str, int], tuple[dict[str, int], set[int], set[int]]] = {}

    def add(cells: Mapping[str, int]) -> None:
        for key, count in cells.items():
            planned[key] = planned.get(key, 0) + count

    for stream in streams:
        where = Path(stream).resolve()
        if where in seen:
            continue
        seen.add(where)
        read = _read_plan(stream)
        if read is None:
            continue
        doc, names, cases, repeats = read
        sharding = doc.get("sharding")
        try:
            shard = None if doc.get("shard") is None else parse_shard(str(doc["shard"]))
        except ValueError:
            shard = None
        if shard is None or not isinstance(sharding, dict) or sharding.get("rule") != RULE:
            add(planned_repeats(stream) or {})
            continue
        group = (str(doc.get("runId")), str(sharding.get("planDigest")), shard.count)
        if group not in runs:
            triples = [(v, c, r) for v in names for c in cases for r in range(repeats)]
            weights = sharding.get("weights")
            # Which shard runs each triple: a shard that owns none need not be given.
            cut = assign(triples, shard.count, weights if isinstance(weights, dict) else None)
            whole = {result_key(v, c): repeats for v in names for c in cases}
            runs[group] = (whole, set(cut.values()), set())
        runs[group][2].add(shard.index)
    missing: list[tuple[str, str]] = []
    for (run_id, _, count), (whole, owners, given) in runs.items():
        add(whole)
        missing += [(run_id, f"{i}/{count}") for i in sorted(owners - given)]
    return planned, missing
