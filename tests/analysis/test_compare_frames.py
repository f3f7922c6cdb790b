"""Advisory statistics as typed columns of `comparison_frame` and `behavior_frame`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from capeval.analysis import stats
from capeval.analysis.compare import behavior_frame, compare_cells, comparison_frame
from capeval.core.cell import cells_from_rows
from tests.rowfactory import gate_row as row

ADVISORY_CELL_COLUMNS = [
    "baselineWilsonLow",
    "baselineWilsonHigh",
    "candidateWilsonLow",
    "candidateWilsonHigh",
    "passRateDifference",
    "passRateDifferenceLow",
    "passRateDifferenceHigh",
    "exactTest",
    "exactTestPValue",
    "flakyBaseline",
    "baselinePassK",
    "candidatePassK",
]
ADVISORY_BEHAVIOR_COLUMNS = [
    "baselineMedianLow",
    "baselineMedianHigh",
    "candidateMedianLow",
    "candidateMedianHigh",
    "medianDifferenceLow",
    "medianDifferenceHigh",
]


def compare(base: list[dict[str, Any]], cand: list[dict[str, Any]], **kw: Any) -> Any:
    return compare_cells(cells_from_rows(base), cells_from_rows(cand), **kw)


def sample(advisory: bool) -> Any:
    """a: 1/3 -> 3/3 (improved, flaky baseline, repeated searches fall); b: 2/2 both sides."""
    base = [row("a", r == 0, repeat=r, repeatedSearchCount=9 + r) for r in range(3)]
    cand = [row("a", True, repeat=r, repeatedSearchCount=r) for r in range(3)]
    base += [row("b", True, repeat=r) for r in range(2)]
    cand += [row("b", True, repeat=r) for r in range(2)]
    return compare(base, cand, advisory=advisory)


def test_comparison_frame_carries_the_cells_advisory_statistics() -> None:
    comparison = sample(advisory=True)
    frame = comparison_frame(comparison)
    a = frame.filter(caseId="a").row(0, named=True)
    assert (a["baselineWilsonLow"], a["baselineWilsonHigh"]) == stats.wilson(1, 3)
    assert (a["candidateWilsonLow"], a["candidateWilsonHigh"]) == stats.wilson(3, 3)
    assert a["passRateDifference"] == pytest.approx(2 / 3)
    assert (a["passRateDifferenceLow"], a["passRateDifferenceHigh"]) == (
        stats.difference_interval((1, 3), (3, 3))
    )
    test = stats.exact_test((1, 3), (3, 3))
    assert (a["exactTest"], a["exactTestPValue"]) == (test["test"], test["pValue"])
    assert a["flakyBaseline"] is True
    assert a["baselinePassK"] == [
        {"k": k, "passAtK": stats.pass_at_k(3, 1, k), "passHatK": stats.pass_hat_k(3, 1, k)}
        for k in (1, 2, 3)
    ]
    # An unchanged cell has intervals but no test and no difference: null, not 0.
    b = frame.filter(caseId="b").row(0, named=True)
    assert (b["candidateWilsonLow"], b["candidateWilsonHigh"]) == stats.wilson(2, 2)
    assert b["flakyBaseline"] is False
    assert b["exactTest"] is None and b["passRateDifference"] is None


def test_advisory_columns_are_typed_and_null_when_statistics_were_off() -> None:
    on, off = comparison_frame(sample(advisory=True)), comparison_frame(sample(advisory=False))
    assert on.schema == off.schema
    assert off.select(ADVISORY_CELL_COLUMNS).null_count().row(0) == (2,) * 12
    assert off.drop(ADVISORY_CELL_COLUMNS).equals(on.drop(ADVISORY_CELL_COLUMNS))
    assert on.schema["exactTestPValue"] == pl.Float64 and on.schema["flakyBaseline"] == pl.Boolean
    # Frames of both kinds stack, as a notebook gathering runs would do.
    assert pl.concat([on, off]).height == 4
    b_on, b_off = behavior_frame(sample(advisory=True)), behavior_frame(sample(advisory=False))
    assert b_on.schema == b_off.schema
    assert b_off.select(ADVISORY_BEHAVIOR_COLUMNS).null_count().row(0) == (b_off.height,) * 6
    # An empty comparison keeps the schema too.
    assert comparison_frame(compare([], [])).schema == on.schema
    assert behavior_frame(compare([], [])).schema == b_on.schema


def test_pass_k_explodes_to_one_row_per_cell_and_k() -> None:
    frame = comparison_frame(sample(advisory=True))
    long = frame.explode("candidatePassK").unnest("candidatePassK")
    assert long.select("caseId", "k", "passHatK").rows() == [
        ("a", 1, 1.0),
        ("a", 2, 1.0),
        ("a", 3, 1.0),
        ("b", 1, 1.0),
        ("b", 2, 1.0),
    ]


def test_behavior_frame_carries_median_intervals_and_the_difference() -> None:
    comparison = sample(advisory=True)
    searches = behavior_frame(comparison).filter(caseId="a", metric="repeatedSearchCount")
    r = searches.row(0, named=True)
    assert (r["baselineMedian"], r["candidateMedian"], r["verdict"]) == (10, 1, "improve")
    assert r["medianDifference"] == -9
    ci = comparison.cells[0].advisory["behaviors"]["repeatedSearchCount"]
    assert [r["baselineMedianLow"], r["baselineMedianHigh"]] == ci["baselineCI"]
    assert [r["candidateMedianLow"], r["candidateMedianHigh"]] == ci["candidateCI"]
    assert [r["medianDifferenceLow"], r["medianDifferenceHigh"]] == ci["differenceCI"]
    assert r["medianDifferenceLow"] <= -9 <= r["medianDifferenceHigh"]
    # Without statistics the exact difference stays (it is no statistic).
    off = behavior_frame(sample(advisory=False)).filter(caseId="a", metric="repeatedSearchCount")
    assert off["medianDifference"].item() == -9 and off["medianDifferenceLow"].item() is None


def test_frames_carry_the_advisory_statistics_of_the_real_files(real_results: Path) -> None:
    from capeval.analysis.compare import compare_frames
    from capeval.analysis.frame import load_frame

    comparison = compare_frames(
        load_frame(real_results / "baseline-0286-grok.json"),
        load_frame(real_results / "after-0286-grok.json"),
        advisory=True,
        allow_provider_fallback=True,
    )
    cells = comparison_frame(comparison)
    jwt = cells.filter(caseId="complex-jwt").row(0, named=True)
    assert (jwt["status"], jwt["flakyBaseline"], jwt["exactTest"]) == ("improved", True, "barnard")
    assert jwt["exactTestPValue"] == pytest.approx(0.1549, abs=1e-4)
    # The improvement's interval reaches below zero: 1/3 -> 3/3 is weak evidence.
    assert jwt["passRateDifferenceLow"] < 0 < jwt["passRateDifferenceHigh"]
    assert (
        cells.filter(pl.col("flakyBaseline"))["resultKey"].to_list()
        == (comparison.advisory["flakyBaselineCells"])
    )
    assert cells["candidateWilsonLow"].null_count() == 0
    assert cells.filter(pl.col("exactTest").is_not_null()).height == 1
    regress = behavior_frame(comparison).filter(verdict="regress").row(0, named=True)
    assert (regress["caseId"], regress["metric"]) == ("web-bait", "longestToolOnlyStreak")
    # Its interval spans zero: the advisory says the regression may be noise.
    assert regress["medianDifferenceLow"] < 0 < regress["medianDifferenceHigh"]
