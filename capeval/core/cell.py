"""Per-cell aggregates: what a verdict reads instead of raw rows.

A cell is one `variantId::caseId` of one side of a comparison. Everything a
verdict needs (repeats, passes, behavior medians, resolved provider/model,
the bait carried by the rows) is recomputed from the repeats themselves,
never taken from a file's stored aggregates, so a hand-edited aggregate can
never drift into a verdict.

Three sources build the same `Cell`: plain rows (`cells_from_rows` here,
the reference), the DuckDB fast path (`capeval.analysis.fastload`) and a
polars frame (`capeval.analysis.cells.cells_from_frame`, for notebooks).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


@dataclass(frozen=True, slots=True)
class BaitDecl:
    """A case's bait: the metric whose median must exceed `threshold` on the baseline."""

    metric: str
    threshold: float

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "threshold": json_number(self.threshold)}


@dataclass(frozen=True, slots=True)
class Cell:
    """One variant x case on one side of a comparison, aggregated from its repeats."""

    resultKey: str
    caseId: str
    variantId: str
    # The judged repeats (outcome passed or failed): what pass rates and medians are over.
    repeats: int
    passCount: int
    # Median per numeric metric over repeats whose behaviors were captured;
    # None when no repeat reported the metric ("no stats").
    medians: Mapping[str, float | None]
    # Distinct (provider, model) pairs the repeats resolved, sorted. More than
    # one means a silent fallback happened inside the cell ("mixed").
    resolved: tuple[tuple[str | None, str | None], ...] = ()
    # The bait the rows carry (JSONL rows record their case's bait).
    bait: BaitDecl | None = None
    # A `bait` the rows carry that is no declaration (no metric name, or a
    # threshold that is not a number), as JSON: the comparison must say it was
    # passed over, or a bait case would gate clean without a word.
    baitUnread: str | None = None
    tier: str | None = None
    title: str | None = None
    # Headline sums for reports, and how many repeats reported each: sides
    # of a comparison often differ in repeats (5 against a baseline of 3), so
    # reports show means per reporting repeat, never the bare sums.
    durationMs: float = 0.0
    turnsUsed: float = 0.0
    tokenInput: float = 0.0
    durationReported: int = 0
    turnsReported: int = 0
    tokenReported: int = 0
    # Repeats whose outcome is `error`: not measured, so in no rate or median.
    errors: int = 0
    # Per-repeat data (judged repeats), present only when loaded for advisory statistics.
    passes: tuple[bool, ...] | None = None
    values: Mapping[str, tuple[float, ...]] | None = field(default=None)

    @property
    def passRate(self) -> float:
        return self.passCount / self.repeats if self.repeats else 0.0

    @property
    def failCount(self) -> int:
        return self.repeats - self.passCount

    @property
    def mixed(self) -> bool:
        return len(self.resolved) > 1


def json_number(value: float | int | None) -> float | int | None:
    """Integral floats as ints, so JSON reads `2` rather than `2.0` (as the TypeScript harness wrote)."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return int(value)
    return value


def format_value(value: float | int | None) -> str:
    """A number for a table: `format_number` without binary floating-point noise.

    The median of 27.9 and 28.3 is 28.099999999999998 in binary floating
    point; tables show 28.1 (12 significant digits are kept, more than any
    metric carries). BAIT FLAG lines keep `format_number`, the spec's wording.
    """
    if isinstance(value, float) and math.isfinite(value):
        value = float(f"{value:.12g}")
    return format_number(value)


def format_number(value: float | int | None) -> str:
    """A number as JavaScript's `String(n)` would print it (the BAIT FLAG wording depends on it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    # Shortest round-trip digits (Python and JavaScript agree on them), laid
    # out with JavaScript's rules: positional from 1e-6 up to 1e21.
    exact = Decimal(repr(abs(value))).normalize()
    digits = "".join(map(str, exact.as_tuple().digits))
    exponent = len(digits) + int(exact.as_tuple().exponent) - 1
    sign = "-" if value < 0 else ""
    if -7 < exponent < 21:
        return sign + format(exact, "f")
    tail = "." + digits[1:] if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{tail}e{'+' if exponent > 0 else '-'}{abs(exponent)}"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer past the float range: no usable number
        return None
    return number if math.isfinite(number) else None


def variant_of(key: str, case_id: str) -> str | None:
    """A cell's variant: its key without the `::<case id>` it ends with (ids may hold '::').

    Both readers take it from the key, so a row whose `variantId` field
    disagrees with its `resultKey` cannot be judged differently by each.
    None when the key does not end with its case id.
    """
    suffix = f"::{case_id}"
    return key[: -len(suffix)] if key.endswith(suffix) and len(key) > len(suffix) else None


def parse_bait(obj: Any) -> BaitDecl | None:
    """A row's `bait` field, or None when absent or not a usable declaration."""
    if not isinstance(obj, Mapping):
        return None
    metric = obj.get("metric")
    threshold = _number(obj.get("threshold"))
    if not isinstance(metric, str) or threshold is None:
        return None
    return BaitDecl(metric, threshold)


def unread_bait(values: Iterable[Any]) -> str | None:
    """The first `bait` value that is present but no declaration, as JSON (None: none)."""
    for value in values:
        if value is not None and parse_bait(value) is None:
            return json.dumps(value, ensure_ascii=False)
    return None


def cells_from_rows(
    rows: Iterable[Mapping[str, Any]], *, keep_values: bool = True
) -> dict[str, Cell]:
    """Aggregate rows into cells keyed by `variantId::caseId`.

    Rows must already be validated (`passed` a bool, `id` and `variantId`
    strings, `behaviors` a mapping or None) and backfilled; the loaders do that.
    """
    # The reference path only: the gate's DuckDB path never needs the row
    # helpers, nor the behavior scanner they import.
    from capeval.core.aggregate import row_result_key

    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row_result_key(row), []).append(row)
    return {key: _cell(key, group, keep_values) for key, group in sorted(groups.items())}


def _cell(key: str, rows: Sequence[Mapping[str, Any]], keep_values: bool) -> Cell:
    from capeval.core.aggregate import judged, median, metric_values

    first = rows[0]
    # As the fast path reads them: DOUBLEs (a rare overflowing integer is no number).
    values = {
        metric: [n for n in map(_number, found) if n is not None]
        for metric, found in metric_values(rows).items()
    }
    measured = [row for row in rows if judged(row)]
    passes = tuple(row.get("passed") is True for row in measured)
    resolved = sorted(
        {(_str(row.get("provider")), _str(row.get("model"))) for row in rows},
        key=lambda pair: (pair[0] or "", pair[1] or ""),
    )
    bait = _newest_bait(rows)
    unread = None if bait is not None else unread_bait(row.get("bait") for row in rows)
    durations = [d for d in (_number(r.get("durationMs")) for r in rows) if d is not None]
    turns_used = [t for t in (_number(r.get("turnsUsed")) for r in rows) if t is not None]
    usages = [r.get("tokenUsage") for r in rows]
    tokens = [
        t
        for t in (_number(u.get("input")) for u in usages if isinstance(u, Mapping))
        if t is not None
    ]
    return Cell(
        resultKey=key,
        caseId=str(first["id"]),
        variantId=variant_of(key, str(first["id"]))
        or _str(first.get("variantId"))
        or key.rsplit("::", 1)[0],
        repeats=len(measured),
        passCount=sum(passes),
        errors=len(rows) - len(measured),
        medians={m: (median(v) if v else None) for m, v in values.items()},
        resolved=tuple(resolved),
        bait=bait,
        baitUnread=unread,
        tier=_str(first.get("tier")),
        title=_str(first.get("title")),
        durationMs=float(sum(durations)),
        turnsUsed=float(sum(turns_used)),
        tokenInput=float(sum(tokens)),
        durationReported=len(durations),
        turnsReported=len(turns_used),
        tokenReported=len(tokens),
        # Sorted: the order repeats finished in must not move a seeded bootstrap.
        passes=tuple(sorted(passes)) if keep_values else None,
        values={m: tuple(sorted(v)) for m, v in values.items()} if keep_values else None,
    )


def _newest_bait(rows: Sequence[Mapping[str, Any]]) -> BaitDecl | None:
    """The bait the cell's most recent run declared (rows of one case may disagree).

    Pooled runs from before and after a case's bait was edited disagree; the
    first row in file order used to win, so `--baseline A --baseline B` and
    `--baseline B --baseline A` could flag differently. The newest run's
    declaration (by `runStartedAt`; ties broken by the declaration) does not
    depend on the order files or rows come in.
    """
    declared = [
        (str(row.get("runStartedAt") or ""), bait.metric, bait.threshold)
        for row in rows
        if (bait := parse_bait(row.get("bait"))) is not None
    ]
    if not declared:
        return None
    _, metric, threshold = max(declared)
    return BaitDecl(metric, threshold)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
