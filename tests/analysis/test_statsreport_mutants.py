"""Advisory statistics and reports: the numbers and renderings a breaking change would move.

Each test pins a rule that an earlier test suite let slip: the sign of a
difference, which side an interval belongs to, which cells get an exact test,
what the report tables print.
"""

from __future__ import annotations

import json
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from capeval.analysis import stats
from capeval.analysis.cells import Cell, cells_from_rows
from capeval.analysis.compare import Comparison, compare_cells
from capeval.analysis.report import render, render_refusal, render_text
from tests.rowfactory import gate_row as row


def _cell(case: str, passes: int, repeats: int, **metrics: Any) -> Cell:
    rows = [row(case, r < passes, repeat=r, **metrics) for r in range(repeats)]
    return cells_from_rows(rows)[f"v1::{case}"]


# -- stats ---------------------------------------------------------------------


def test_wilson_interval_of_no_pass_or_all_passes_reaches_the_rate_exactly() -> None:
    # Unclamped, 0 of 3 read [5.6e-17, ...] and 10 of 10 [..., 0.9999999999999999]
    # in `--json`: an interval that excludes the observed rate.
    for n in range(1, 60):
        assert stats.wilson(0, n)[0] == 0.0  # type: ignore[index]
        assert stats.wilson(n, n)[1] == 1.0  # type: ignore[index]


def test_k_ladder_lists_every_k_up_to_ten_repeats() -> None:
    assert stats.k_values(10) == list(range(1, 11))
    assert stats.k_values(11) == [1, 2, 3, 5, 10, 11]


def test_the_run_seed_moves_the_bootstrap() -> None:
    # `compare --seed`: another seed is another set of resamples, not the same numbers.
    values = [1.3, 5.1, 2.7, 8.9, 3.2, 9.4, 4.6, 7.0]
    assert len({stats.bootstrap_median(values, seed=s) for s in range(10)}) > 1
    doubled = [2 * v for v in values]
    differences = {stats.bootstrap_median_difference(values, doubled, seed=s) for s in range(10)}
    assert len(differences) > 1


def test_a_difference_needs_two_values_on_each_side() -> None:
    assert stats.bootstrap_median_difference([3.0], [1.0, 2.0, 5.0], seed=0) is None
    assert stats.bootstrap_median_difference([1.0, 2.0, 5.0], [3.0], seed=0) is None


def test_constant_samples_give_the_signed_difference_of_their_values() -> None:
    assert stats.bootstrap_median_difference([2.0, 2.0], [5.0, 5.0, 5.0], seed=0) == (3.0, 3.0)
    assert stats.bootstrap_median_difference([5.0, 5.0], [2.0, 2.0], seed=0) == (-3.0, -3.0)


def test_mover_combines_the_two_exact_median_intervals() -> None:
    # Skewed samples: each side's exact interval is asymmetric about its median,
    # so swapping a bound in the MOVER formula moves the answer.
    base = [float(i * i % 97) for i in range(80)]
    cand = [float((i * 7) % 31) for i in range(70)]
    a, b = stats.order_statistic_median(base), stats.order_statistic_median(cand)
    assert a is not None and b is not None
    import statistics

    m1, m2 = statistics.median(base), statistics.median(cand)
    d = m2 - m1
    want = (
        d - ((m2 - b[0]) ** 2 + (a[1] - m1) ** 2) ** 0.5,
        d + ((b[1] - m2) ** 2 + (m1 - a[0]) ** 2) ** 0.5,
    )
    got = stats.median_difference_interval(base, cand, seed=0)
    assert got == (pytest.approx(want[0]), pytest.approx(want[1]))


def test_side_advisory_reports_pass_at_k_and_pass_hat_k_apart() -> None:
    side = stats.side_advisory(_cell("a", 2, 5))
    assert side["passRate"] == 0.4
    assert side["wilson"] == list(stats.wilson(2, 5))  # type: ignore[arg-type]
    assert side["passAtK"]["2"] == pytest.approx(0.7)
    assert side["passHatK"]["2"] == pytest.approx(0.1)
    assert list(side["passAtK"]) == ["1", "2", "3", "4", "5"]


def test_exact_test_and_difference_only_for_changed_cells_with_candidate_minus_baseline() -> None:
    base, cand = _cell("a", 0, 5), _cell("a", 5, 5)
    improved = stats.cell_advisory(base, cand, changed=True)["exactTest"]
    assert improved["difference"] == 1.0
    assert improved["differenceCI"] == list(stats.difference_interval((0, 5), (5, 5)))  # type: ignore[arg-type]
    assert improved["differenceCI"][0] > 0
    assert "exactTest" not in stats.cell_advisory(base, base, changed=False)


def test_annotate_gives_improved_and_regressed_cells_an_exact_test_but_not_unchanged_ones() -> None:
    base = cells_from_rows([row("up", False), row("down", True), row("same", True)])
    cand = cells_from_rows([row("up", True), row("down", False), row("same", True)])
    comparison = compare_cells(base, cand, advisory=True)
    by_case = {c.caseId: c.advisory for c in comparison.cells}
    assert by_case["up"]["exactTest"]["difference"] == 1.0
    assert by_case["down"]["exactTest"]["difference"] == -1.0
    assert "exactTest" not in by_case["same"]


def test_behavior_intervals_keep_each_side_its_own() -> None:
    base = cells_from_rows(
        [row("a", repeat=r, repeatedSearchCount=v) for r, v in enumerate([10, 11, 12, 13])]
    )
    cand = cells_from_rows(
        [row("a", repeat=r, repeatedSearchCount=v) for r, v in enumerate([1, 2, 3, 4])]
    )
    comparison = compare_cells(base, cand, advisory=True, seed=2)
    (cell,) = comparison.cells
    got = cell.advisory["behaviors"]["repeatedSearchCount"]
    assert got["baselineCI"][0] >= 10 and got["candidateCI"][1] <= 4
    assert got["differenceCI"][1] < 0


def test_cells_without_kept_values_get_no_behavior_intervals() -> None:
    rows = [row("a", repeat=r, repeatedSearchCount=r) for r in range(3)]
    lean = cells_from_rows(rows, keep_values=False)
    comparison = compare_cells(lean, lean, advisory=True)
    assert "behaviors" not in comparison.cells[0].advisory
    assert comparison.cells[0].advisory["baseline"]["passRate"] == 1.0


def test_variant_rate_resamples_cases_with_their_own_repeat_counts() -> None:
    # Unequal repeats: the pooled rate weights cases by their repeats, and a
    # case's passes travel with its repeats when it is resampled.
    import numpy as np
    from scipy.stats import bootstrap

    cells = [_cell("a", 9, 10), _cell("b", 0, 2), _cell("c", 1, 4), _cell("d", 3, 3)]
    out = stats.variant_rate(cells, seed=5)
    p = np.asarray([9.0, 0.0, 1.0, 3.0])
    n = np.asarray([10.0, 2.0, 4.0, 3.0])
    assert out["passRate"] == pytest.approx(13 / 19)

    def pooled(pp: Any, nn: Any, axis: int = -1) -> Any:
        return pp.sum(axis=axis) / nn.sum(axis=axis)

    want = bootstrap(
        (p, n),
        pooled,
        paired=True,
        n_resamples=stats.BOOTSTRAP_RESAMPLES,
        confidence_level=stats.CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(5),
    ).confidence_interval
    assert out["ci"] == [pytest.approx(want.low), pytest.approx(want.high)]


def test_one_case_has_no_case_resampling_interval() -> None:
    out = stats.variant_rate([_cell("a", 2, 5)], seed=0)
    assert out["passRate"] == 0.4 and out["ci"] is None


def test_paired_cases_sign_and_mean_interval() -> None:
    import numpy as np
    from scipy.stats import bootstrap

    pairs = [
        (_cell("a", 0, 4), _cell("a", 4, 4)),
        (_cell("b", 1, 4), _cell("b", 4, 4)),
        (_cell("c", 3, 4), _cell("c", 2, 4)),
        (_cell("d", 0, 4), _cell("d", 1, 4)),
    ]
    out = stats.paired_cases(pairs, seed=3)
    assert (out["better"], out["worse"]) == (3, 1)
    assert out["meanDifference"] == pytest.approx((1 + 0.75 - 0.25 + 0.25) / 4)
    d = np.sort(np.asarray([1.0, 0.75, -0.25, 0.25]))
    want = bootstrap(
        (d,),
        np.mean,
        n_resamples=stats.BOOTSTRAP_RESAMPLES,
        confidence_level=stats.CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(3),
    ).confidence_interval
    assert out["differenceCI"] == [pytest.approx(want.low), pytest.approx(want.high)]


# -- report --------------------------------------------------------------------


def _annotated() -> Comparison:
    base = cells_from_rows(
        [row("a", r < 1, repeat=r) for r in range(3)] + [row("b", True, repeat=r) for r in range(3)]
    )
    cand = cells_from_rows(
        [row("a", True, repeat=r) for r in range(3)] + [row("b", True, repeat=r) for r in range(3)]
    )
    return compare_cells(base, cand, advisory=True, seed=1)


def _md_line(md: str, start: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(start))


def test_markdown_cells_show_each_sides_wilson_interval_and_advisory_notes() -> None:
    comparison = _annotated()
    md = render(comparison, "md")
    lo_b, hi_b = stats.wilson(1, 3)  # type: ignore[misc]
    line = _md_line(md, "| improved | `v1::a`")
    assert f"1/3 (33%) [{lo_b:.2f}, {hi_b:.2f}]" in line
    assert "3/3 (100%) [0.44, 1.00]" in line
    assert "flaky baseline" in line and "barnard p=" in line
    # Newcombe's interval for the difference, which the notes said they showed.
    test = comparison.cells[0].advisory["exactTest"]
    lo_d, hi_d = test["differenceCI"]
    diff = f"diff {test['difference']:+.2f} [{lo_d:+.2f}, {hi_d:+.2f}]"
    assert diff in line
    for text in (render_text(comparison), render(comparison, "html")):
        assert "flaky baseline" in text and f"[{lo_b:.2f}, {hi_b:.2f}]" in text
        assert diff in text


def test_markdown_advisory_section_lists_variant_rates_and_paired_tests() -> None:
    comparison = _annotated()
    md = render(comparison, "md")
    assert "## Advisory statistics" in md and "never change the gate's exit code" in md
    v = comparison.advisory["variants"]["v1"]
    v["paired"]["wilcoxonP"] = 0.5  # unlike the sign test's p, so the columns cannot swap
    md = render(comparison, "md")
    line = _md_line(md, "| `v1` |")
    base, cand, paired = v["baseline"], v["candidate"], v["paired"]
    assert f"| {base['passRate']:.1%} [{base['ci'][0]:.1%}, {base['ci'][1]:.1%}] |" in line
    assert f"| {cand['passRate']:.1%}" in line
    assert line.endswith(f"| 2 | {paired['signTestP']:.3g} | 0.5 |")


def test_headline_rate_with_no_pass_and_times_in_minutes() -> None:
    base = [{**row("a", False), "durationMs": 90_000}]
    cand = [{**row("a", False), "durationMs": 7_200_000}]
    md = render(compare_cells(cells_from_rows(base), cells_from_rows(cand)), "md")
    assert "| pass rate | 0/1 (0.0%) | 0/1 (0.0%) |" in md
    assert "| wall time (total) | 1.5 min (1 repeat) | 2.0 h (1 repeat) |" in md


def test_headline_input_tokens_are_input_not_output() -> None:
    r = row("a")
    r = {**r, "tokenUsage": {**r["tokenUsage"], "input": 1234, "output": 7}}
    md = render(compare_cells(cells_from_rows([r]), cells_from_rows([r])), "md")
    assert "| input tokens (total) | 1,234 (1 repeat) | 1,234 (1 repeat) |" in md


def test_behavior_change_rows_show_the_difference_interval() -> None:
    base = cells_from_rows(
        [row("a", repeat=r, repeatedSearchCount=v) for r, v in enumerate([1, 2, 3, 4])]
    )
    cand = cells_from_rows(
        [row("a", repeat=r, repeatedSearchCount=v) for r, v in enumerate([5, 7, 9, 11])]
    )
    comparison = compare_cells(base, cand, advisory=True)
    ci = comparison.cells[0].advisory["behaviors"]["repeatedSearchCount"]["differenceCI"]
    assert ci[0] != ci[1]
    line = _md_line(render(comparison, "md"), "| regress | `v1::a` | repeatedSearchCount")
    assert line.endswith(f"| [{ci[0]:g}, {ci[1]:g}] |")


def test_bait_table_says_whether_the_candidate_misbehaves() -> None:
    bait = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("web", bait=bait, networkCommandCount=2)]
    cand = [row("web", bait=bait, networkCommandCount=1), row("ok", bait=bait)]
    md = render(compare_cells(cells_from_rows(base), cells_from_rows(cand)), "md")
    assert _md_line(md, "| `v1::web`").endswith("| 0 | 2 | 1 | yes | reproduces |")
    assert _md_line(md, "| `v1::ok`").endswith(
        "| 0 | no stats | 0 | no | unproven (no baseline stats) |"
    )


def test_markdown_escapes_a_pipe_and_lists_warnings() -> None:
    rows = [row("a|b", True, repeat=0), row("a|b", True, repeat=1, model="fallback")]
    comparison = compare_cells(cells_from_rows(rows), cells_from_rows(rows))
    md = render(comparison, "md")
    assert "`v1::a\\|b`" in md
    assert comparison.warnings
    warnings = md.split("## Warnings")[1].strip().splitlines()
    assert warnings[0] == f"- {comparison.warnings[0]}"


def test_junit_testcase_class_is_the_variant_and_name_the_case() -> None:
    comparison = compare_cells(
        cells_from_rows([row("a", variant="fast")]), cells_from_rows([row("a", variant="fast")])
    )
    (case,) = ET.fromstring(render(comparison, "junit")).iter("testcase")
    assert (case.get("classname"), case.get("name")) == ("fast", "a")


def test_a_refused_junit_report_counts_one_error() -> None:
    suite = ET.fromstring(render_refusal(["nothing matched"], "junit")).find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("tests") == "1"


@pytest.mark.slow
def test_html_has_the_headline_and_escapes_case_ids() -> None:
    rows = [row("<b>x</b>", True)]
    page = render(compare_cells(cells_from_rows(rows), cells_from_rows(rows)), "html")
    assert "<td>pass rate</td><td>1/1 (100.0%)</td><td>1/1 (100.0%)</td>" in page
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_json_report_carries_the_advisory_numbers() -> None:
    comparison = _annotated()
    obj = json.loads(render(comparison, "json"))
    assert obj["advisory"]["flakyBaselineCells"] == ["v1::a"]
    a = next(c for c in obj["cells"] if c["caseId"] == "a")
    assert a["advisory"]["baseline"]["wilson"] == list(stats.wilson(1, 3))  # type: ignore[arg-type]
