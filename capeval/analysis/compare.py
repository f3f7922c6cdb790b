"""Comparisons for people and notebooks: verdicts with advisory statistics, and as frames.

The verdicts themselves are the pure core's (`capeval.core.verdict`);
`compare_cells` adds the advisory statistics beside them when asked (they
never change a verdict), and the frame functions lay a comparison out for
polars. Polars and scipy are imported inside the functions that need them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from capeval.core.cell import Cell
from capeval.core.verdict import Comparison, judge_cells


def compare_cells(
    baseline: Mapping[str, Cell],
    candidate: Mapping[str, Cell],
    *,
    advisory: bool = False,
    seed: int = 0,
    **rules: Any,
) -> Comparison:
    """`capeval.core.verdict.judge_cells`, with the advisory statistics when `advisory`.

    `rules` are `judge_cells`'s keywords (bait declarations, the bait
    policy, provider fallback, the error rate allowed).
    """
    comparison = judge_cells(baseline, candidate, **rules)
    if advisory:
        add_advisory(comparison, seed=seed)
    return comparison


def add_advisory(comparison: Comparison, *, seed: int = 0) -> None:
    """Put the advisory statistics beside the verdicts (they never change one)."""
    from capeval.analysis import stats

    per_cell, comparison.advisory = stats.advisory(comparison.cells, seed=seed)
    for cell, advisory in zip(comparison.cells, per_cell, strict=True):
        cell.advisory = advisory


# -- frames (notebooks) -----------------------------------------------------


def compare_frames(baseline: Any, candidate: Any, **options: Any) -> Comparison:
    """`compare_cells` over two one-row-per-repeat polars frames (`capeval.analysis.frame.load_frame`)."""
    from capeval.analysis.cells import cells_from_frame

    return compare_cells(cells_from_frame(baseline), cells_from_frame(candidate), **options)


def _bounds(interval: Sequence[float] | None) -> tuple[float | None, float | None]:
    """An advisory interval (`[low, high]` or None) as two nullable numbers."""
    return (interval[0], interval[1]) if interval else (None, None)


def _pass_k(side: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
    """A side's pass@k and pass^k (keyed by k as text in the JSON) as one list entry per k."""
    if not side:
        return None
    at, hat = side.get("passAtK") or {}, side.get("passHatK") or {}
    return [{"k": int(k), "passAtK": at[k], "passHatK": hat.get(k)} for k in sorted(at, key=int)]


def comparison_frame(comparison: Comparison) -> Any:
    """One row per cell: status, pass counts and rates, bait status, behavior verdict counts,
    then the advisory statistics of `compare_cells(..., advisory=True)`.

    The advisory columns are always there, typed, and null where nothing was
    computed: the comparison was made without `advisory` (run
    `add_advisory(comparison)` to add it afterwards), the
    side is absent, or the statistic is undefined for the cell. A stable
    schema lets a notebook select, filter, plot and `pl.concat` frames the same
    way whether or not statistics were on; a null never passes for a number.
    They mirror each cell's `advisory` dict (the same numbers as `--json`):

    - `baselineWilsonLow`/`baselineWilsonHigh`, `candidateWilsonLow`/
      `candidateWilsonHigh`: Wilson 95% interval of each side's pass rate.
    - `passRateDifference` (candidate minus baseline), `passRateDifferenceLow`/
      `passRateDifferenceHigh` (Newcombe interval), `exactTest` (`barnard`,
      or `fisher` for large cells) and `exactTestPValue` (two-sided): only for
      `improved` and `regressed` cells, null for unchanged ones.
    - `flakyBaseline`: the baseline passed some but not all repeats
      (null without a baseline side).
    - `baselinePassK`/`candidatePassK`: pass@k and pass^k as a list of
      `{k, passAtK, passHatK}`, one per k (every k up to the repeats, a ladder
      beyond ten), whose k differ from cell to cell, hence a list, not columns;
      `frame.explode("candidatePassK").unnest("candidatePassK")` gives one row
      per cell and k.
    """
    import polars as pl

    records = []
    for cell in comparison.cells:
        b, c = cell.baseline, cell.candidate
        adv = cell.advisory or {}
        base_adv, cand_adv = adv.get("baseline"), adv.get("candidate")
        test = adv.get("exactTest") or {}
        b_low, b_high = _bounds(base_adv.get("wilson") if base_adv else None)
        c_low, c_high = _bounds(cand_adv.get("wilson") if cand_adv else None)
        d_low, d_high = _bounds(test.get("differenceCI"))
        records.append(
            {
                "resultKey": cell.resultKey,
                "caseId": cell.caseId,
                "variantId": cell.variantId,
                "status": cell.status,
                "baselineRepeats": b.repeats if b else None,
                "baselinePassCount": b.passCount if b else None,
                "baselinePassRate": b.passRate if b else None,
                "candidateRepeats": c.repeats if c else None,
                "candidatePassCount": c.passCount if c else None,
                "candidatePassRate": c.passRate if c else None,
                "behaviorImproved": sum(1 for v in cell.behaviors if v.verdict == "improve"),
                "behaviorRegressed": sum(1 for v in cell.behaviors if v.verdict == "regress"),
                "baitMetric": cell.bait.metric if cell.bait else None,
                "baitFlag": cell.bait.flag if cell.bait else None,
                "baselineWilsonLow": b_low,
                "baselineWilsonHigh": b_high,
                "candidateWilsonLow": c_low,
                "candidateWilsonHigh": c_high,
                "passRateDifference": test.get("difference"),
                "passRateDifferenceLow": d_low,
                "passRateDifferenceHigh": d_high,
                "exactTest": test.get("test"),
                "exactTestPValue": test.get("pValue"),
                "flakyBaseline": adv.get("flakyBaseline"),
                "baselinePassK": _pass_k(base_adv),
                "candidatePassK": _pass_k(cand_adv),
            }
        )
    pass_k = pl.List(pl.Struct({"k": pl.Int64, "passAtK": pl.Float64, "passHatK": pl.Float64}))
    return pl.DataFrame(
        records,
        schema={
            "resultKey": pl.String,
            "caseId": pl.String,
            "variantId": pl.String,
            "status": pl.String,
            "baselineRepeats": pl.Int64,
            "baselinePassCount": pl.Int64,
            "baselinePassRate": pl.Float64,
            "candidateRepeats": pl.Int64,
            "candidatePassCount": pl.Int64,
            "candidatePassRate": pl.Float64,
            "behaviorImproved": pl.Int64,
            "behaviorRegressed": pl.Int64,
            "baitMetric": pl.String,
            "baitFlag": pl.Boolean,
            "baselineWilsonLow": pl.Float64,
            "baselineWilsonHigh": pl.Float64,
            "candidateWilsonLow": pl.Float64,
            "candidateWilsonHigh": pl.Float64,
            "passRateDifference": pl.Float64,
            "passRateDifferenceLow": pl.Float64,
            "passRateDifferenceHigh": pl.Float64,
            "exactTest": pl.String,
            "exactTestPValue": pl.Float64,
            "flakyBaseline": pl.Boolean,
            "baselinePassK": pass_k,
            "candidatePassK": pass_k,
        },
    )


def behavior_frame(comparison: Comparison) -> Any:
    """One row per cell and compared metric: medians and verdict (long format, easy to pivot),
    then `medianDifference` (candidate minus baseline) and the advisory intervals.

    `baselineMedianLow`/`baselineMedianHigh`, `candidateMedianLow`/
    `candidateMedianHigh` bound each side's median and `medianDifferenceLow`/
    `medianDifferenceHigh` their difference (95%, percentile bootstrap up to
    50 repeats, exact order statistics and MOVER above). As in
    `comparison_frame` they are always present and null when not computed: the
    comparison was made without `advisory`, a side kept no values
    (`with_values`), or has fewer than two, so a notebook's code does not
    depend on whether statistics were on.
    """
    import polars as pl

    records = []
    for cell in comparison.cells:
        intervals = (cell.advisory or {}).get("behaviors") or {}
        for b in cell.behaviors:
            ci = intervals.get(b.metric) or {}
            b_low, b_high = _bounds(ci.get("baselineCI"))
            c_low, c_high = _bounds(ci.get("candidateCI"))
            d_low, d_high = _bounds(ci.get("differenceCI"))
            records.append(
                {
                    "resultKey": cell.resultKey,
                    "caseId": cell.caseId,
                    "variantId": cell.variantId,
                    **b.to_json(),
                    "baselineMedianLow": b_low,
                    "baselineMedianHigh": b_high,
                    "candidateMedianLow": c_low,
                    "candidateMedianHigh": c_high,
                    "medianDifferenceLow": d_low,
                    "medianDifferenceHigh": d_high,
                }
            )
    frame = pl.DataFrame(
        records,
        schema={
            "resultKey": pl.String,
            "caseId": pl.String,
            "variantId": pl.String,
            "metric": pl.String,
            "baselineMedian": pl.Float64,
            "candidateMedian": pl.Float64,
            "verdict": pl.String,
            "baselineMedianLow": pl.Float64,
            "baselineMedianHigh": pl.Float64,
            "candidateMedianLow": pl.Float64,
            "candidateMedianHigh": pl.Float64,
            "medianDifferenceLow": pl.Float64,
            "medianDifferenceHigh": pl.Float64,
        },
    )
    difference = (pl.col("candidateMedian") - pl.col("baselineMedian")).alias("medianDifference")
    return frame.select(
        *frame.columns[: frame.columns.index("verdict") + 1],
        difference,
        *frame.columns[frame.columns.index("verdict") + 1 :],
    )


__all__ = ["add_advisory", "behavior_frame", "compare_cells", "compare_frames", "comparison_frame"]
