"""Per-cell aggregates and run totals, always recomputed from the rows.

Pure: no I/O and no polars, so the runner can print its final table and the
readers can recompute what a v3 file claims without pulling in the analysis
stack. A stored aggregate is never trusted (docs/result-formats.md#aggregates-are-recomputed): a
hand-edited number must not be able to drift into a gate verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import isfinite
from typing import Any, TypeGuard

from capeval.core.behaviors import backfill_legacy
from capeval.core.metrics import METRIC_NAMES
from capeval.core.outcome import ERROR, row_outcome

TOKEN_FIELDS: tuple[str, ...] = ("input", "output", "cacheRead", "cacheWrite", "thinking")
SUMMED_FIELDS: tuple[str, ...] = ("durationMs", "turnsUsed", "toolCallCount")


def backfill_behaviors(behaviors: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """Older rows predate `taskToolCallCount`: fill it by the legacy rule (docs/behavior-metrics.md#the-metrics).

    The rule itself lives in `capeval.core.behaviors.backfill_legacy`; this wrapper
    only skips rows that are already up to date, so they are not copied.
    """
    if behaviors is None or behaviors.get("taskToolCallCount") is not None:
        return behaviors
    return backfill_legacy(behaviors)


_NUMBER_TYPES = (int, float)


def _is_number(value: object) -> TypeGuard[float]:
    # Exact types, not isinstance: excludes bool, and is several times faster
    # on the hot path of 200,000-row files. JSON parsing yields only these.
    return type(value) in _NUMBER_TYPES


def median(values: Iterable[float]) -> float:
    """The usual median: the middle value, or the mean of the two middle values.

    An integral mean of two integers is returned as an int so that JSON output
    reads `17`, as the original harness wrote it, rather than `17.0`.
    """
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of no values")
    mid = n // 2
    if n % 2:
        return ordered[mid]
    low, high = ordered[mid - 1], ordered[mid]
    total = low + high
    if isinstance(total, int):
        return total // 2 if total % 2 == 0 else total / 2
    if not isfinite(total):  # two values near the float limit: halve first
        return low / 2 + high / 2
    return total / 2


def row_result_key(row: Mapping[str, Any]) -> str:
    """The row's cell: its stored `resultKey`, else `variantId::id`."""
    key = row.get("resultKey")
    if isinstance(key, str) and key:
        return key
    return f"{row.get('variantId')}::{row.get('id')}"


def judged(row: Mapping[str, Any]) -> bool:
    """Whether a repeat was measured (outcome passed or failed): an `error` one counts for nothing."""
    return row_outcome(row) != ERROR


def metric_values(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Each metric's values in a cell, in row order: what its median is taken over.

    A repeat whose `behaviors` is null (stream not captured) contributes
    nothing: counting it as zeros would make a broken capture look like good
    behavior. Nor does an `error` repeat, whose run the provider or capeval
    cut short. Rows that predate `taskToolCallCount` have it filled. The SQL
    of the same rule is `capeval.analysis.cellsql`.
    """
    values: dict[str, list[float]] = {m: [] for m in METRIC_NAMES}
    for row in rows:
        if not judged(row):
            continue
        behaviors = backfill_behaviors(row.get("behaviors"))
        if not isinstance(behaviors, Mapping):
            continue
        for metric in METRIC_NAMES:
            value = behaviors.get(metric)
            if _is_number(value):
                values[metric].append(value)
    return values


def behavior_stats(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """{metric: {min, median, max}} over the repeats that captured behaviors.

    Metrics absent from every repeat are left out.
    """
    return {
        metric: {"min": min(values), "median": median(values), "max": max(values)}
        for metric, values in metric_values(rows).items()
        if values
    }


def aggregate(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One aggregate per cell (`resultKey`), sorted by `resultKey`.

    `repeats` counts the judged repeats (passed or failed) and `passRate` is
    over them (null when there is none); `errorCount` counts the `error` ones.
    """
    cells: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        cells.setdefault(row_result_key(row), []).append(row)
    out: list[dict[str, Any]] = []
    for key in sorted(cells):
        group = cells[key]
        first = group[0]
        variant = first.get("variantId")
        if not isinstance(variant, str):
            variant = key.rsplit("::", 1)[0]
        measured = [r for r in group if judged(r)]
        passes = sum(1 for r in measured if r.get("passed") is True)
        out.append(
            {
                "resultKey": key,
                "id": first.get("id"),
                "variantId": variant,
                "repeats": len(measured),
                "passCount": passes,
                "passRate": passes / len(measured) if measured else None,
                "errorCount": len(group) - len(measured),
                "behaviorStats": behavior_stats(group),
            }
        )
    return out


def totals(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Sums over every repeat (an `error` one cost time and tokens too); a field a repeat
    did not report counts as 0. `passed`, `failed` and `error` count outcomes."""
    result: dict[str, Any] = {"total": 0, "passed": 0, "failed": 0, "error": 0}
    result.update(dict.fromkeys(SUMMED_FIELDS, 0))
    tokens: dict[str, float] = dict.fromkeys(TOKEN_FIELDS, 0)
    for row in rows:
        result["total"] += 1
        result[row_outcome(row)] += 1
        for field in SUMMED_FIELDS:
            value = row.get(field)
            if _is_number(value):
                result[field] += value
        usage = row.get("tokenUsage") or {}
        for field in TOKEN_FIELDS:
            value = usage.get(field)
            if _is_number(value):
                tokens[field] += value
    result["tokenUsage"] = tokens
    return result
