"""Advisory statistics: known values, determinism, and that they never touch verdicts."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from capeval.analysis import stats
from capeval.analysis.compare import compare_cells
from capeval.core import aggregate
from capeval.core.cell import Cell, cells_from_rows
from tests.rowfactory import gate_row as row


def test_wilson_interval_known_values() -> None:
    # 1 pass of 3 at 95%: the textbook Wilson bounds.
    low, high = stats.wilson(1, 3)  # type: ignore[misc]
    assert low == pytest.approx(0.0615, abs=1e-4) and high == pytest.approx(0.7923, abs=1e-4)
    assert stats.wilson(3, 3)[1] == pytest.approx(1.0)  # type: ignore[index]
    assert stats.wilson(0, 0) is None


def test_wilson_interval_is_scipys() -> None:
    from scipy.stats import binomtest

    for repeats in [*range(1, 41), 199, 1000, 12345]:
        for passes in sorted({0, 1, repeats // 3, repeats // 2, repeats - 1, repeats}):
            for confidence in (0.9, 0.95, 0.99):
                want = binomtest(passes, repeats).proportion_ci(confidence, method="wilson")
                got = stats.wilson(passes, repeats, confidence)
                assert got == (
                    pytest.approx(want.low, abs=1e-12),
                    pytest.approx(want.high, abs=1e-12),
                ), (passes, repeats, confidence)


def test_difference_interval_contains_the_difference_and_stays_in_range() -> None:
    low, high = stats.difference_interval((1, 3), (3, 3))  # type: ignore[misc]
    assert -1 <= low < 2 / 3 < high <= 1


@pytest.mark.parametrize(
    ("base", "cand", "low", "high"),
    [
        # Newcombe (1998), "Interval estimation for the difference between
        # independent proportions", Table II, method 10 (hybrid score), 95%.
        ((48, 80), (56, 70), 0.0524, 0.3339),
        ((3, 10), (9, 10), 0.1705, 0.8090),
        ((2, 7), (6, 7), 0.0582, 0.8062),
        ((0, 29), (5, 56), -0.0381, 0.1926),
        ((0, 20), (0, 10), -0.1611, 0.2775),
        ((0, 10), (0, 10), -0.2775, 0.2775),
        ((0, 20), (10, 10), 0.6791, 1.0),
        ((0, 10), (10, 10), 0.6075, 1.0),
    ],
)
def test_difference_interval_is_newcombes_published_hybrid_score_interval(
    base: tuple[int, int], cand: tuple[int, int], low: float, high: float
) -> None:
    got = stats.difference_interval(base, cand)
    assert got == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))


def test_exact_test_switches_to_fisher_for_large_cells() -> None:
    small = stats.exact_test((1, 5), (5, 5))
    assert small["test"] == "barnard" and 0 < small["pValue"] < 0.05
    big = stats.exact_test((500, 1000), (520, 1000))
    assert big["test"] == "fisher" and 0.3 < big["pValue"] <= 1


def test_pass_at_k_and_pass_hat_k_are_the_unbiased_estimators() -> None:
    # n=5, c=2: pass@2 = 1 - C(3,2)/C(5,2) = 0.7; pass^2 = C(2,2)/C(5,2) = 0.1
    assert stats.pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert stats.pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert stats.pass_at_k(5, 2, 1) == pytest.approx(0.4) == stats.pass_hat_k(5, 2, 1)
    assert stats.pass_at_k(5, 2, 4) == 1.0 and stats.pass_hat_k(5, 2, 3) == 0.0


@pytest.mark.parametrize("k", [0, 4, 10])
def test_pass_at_k_refuses_k_outside_the_repeats(k: int) -> None:
    # pass@5 of 3 repeats with no pass was 1.0, and pass^5 a ZeroDivisionError.
    for estimator in (stats.pass_at_k, stats.pass_hat_k):
        with pytest.raises(
            ValueError, match=f"k must be between 1 and the number of repeats \\(3\\), got {k}"
        ):
            estimator(3, 0, k)


def test_pass_counts_outside_the_repeats_are_a_clear_error() -> None:
    # A swapped call (passes > repeats) was a math domain error, or pass^k above 1.
    with pytest.raises(ValueError, match=r"passes must be between 0 and repeats \(3\), got 5"):
        stats.wilson(5, 3)
    with pytest.raises(ValueError, match="passes must be between"):
        stats.pass_hat_k(3, 5, 1)
    with pytest.raises(ValueError, match="passes must be between"):
        stats.pass_at_k(3, -1, 1)
    assert stats.pass_at_k(3, 0, 3) == 0.0 and stats.pass_hat_k(3, 3, 3) == 1.0


def test_k_ladder() -> None:
    assert stats.k_values(3) == [1, 2, 3]
    assert stats.k_values(1000) == [1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000]


def test_bootstrap_is_seeded_and_order_free() -> None:
    values = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0]
    a = stats.bootstrap_median(values, seed=1)
    b = stats.bootstrap_median(list(reversed(values)), seed=1)
    assert a == b and a is not None and a[0] <= 4 <= a[1]
    assert stats.bootstrap_median([4.0], seed=1) is None
    assert stats.bootstrap_median([4.0, 4.0], seed=1) == (4.0, 4.0)
    diff = stats.bootstrap_median_difference([10.0, 11, 12, 13], [1.0, 2, 3, 4], seed=3)
    assert diff is not None and diff[1] < 0


def test_variant_interval_resamples_cases_not_repeats() -> None:
    # Two cases: one always passes, one never does. Resampling repeats would
    # give a tight interval around 50%; resampling cases spans 0..1.
    cells = cells_from_rows(
        [row("a", True, repeat=r) for r in range(100)]
        + [row("b", False, repeat=r) for r in range(100)]
    )
    out = stats.variant_rate(list(cells.values()), seed=0)
    assert out["passRate"] == 0.5 and out["ci"][0] == 0.0 and out["ci"][1] == 1.0


def test_annotate_fills_cells_and_top_level_and_never_changes_verdicts() -> None:
    base = cells_from_rows(
        [row("a", r < 1, repeat=r, repeatedSearchCount=r) for r in range(3)] + [row("b")]
    )
    cand = cells_from_rows(
        [row("a", True, repeat=r, repeatedSearchCount=0) for r in range(3)] + [row("b", False)]
    )
    plain = compare_cells(base, cand)
    rich = compare_cells(base, cand, advisory=True, seed=7)
    assert [c.status for c in plain.cells] == [c.status for c in rich.cells]
    assert plain.exit_code == rich.exit_code == 1 and plain.summary == rich.summary
    a = next(c for c in rich.cells if c.caseId == "a")
    assert a.advisory["flakyBaseline"] is True
    assert a.advisory["exactTest"]["test"] == "barnard"
    assert set(a.advisory["behaviors"]) == {b.metric for b in a.behaviors}
    assert rich.advisory["flakyBaselineCells"] == ["v1::a"]
    paired = rich.advisory["variants"]["v1"]["paired"]
    assert (paired["better"], paired["worse"], paired["cases"]) == (1, 1, 2)
    again = compare_cells(base, cand, advisory=True, seed=7)
    assert again.to_json() == rich.to_json()
    assert not any(
        isinstance(v, float) and math.isnan(v)
        for v in rich.advisory["variants"]["v1"]["candidate"].values()
        if v is not None and not isinstance(v, list)
    )


def test_large_cells_use_exact_order_statistic_intervals() -> None:
    import random

    rng = random.Random(5)
    base = [float(rng.randint(0, 20)) for _ in range(1001)]
    cand = [v - 3 for v in base]
    ci = stats.median_interval(base, seed=0)
    assert ci == stats.order_statistic_median(base)
    assert ci is not None and ci[0] <= statistics_median(base) <= ci[1]
    diff = stats.median_difference_interval(base, cand, seed=0)
    assert diff is not None and diff[0] <= -3 <= diff[1]
    # Small cells keep the bootstrap.
    assert stats.median_interval(base[:5], seed=2) == stats.bootstrap_median(base[:5], seed=2)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 9, 17, 200, 201, 1000, 1001])
def test_order_statistic_interval_is_scipys_quantile_test_interval(n: int) -> None:
    # The interval is computed once per n on ranks; it must be the one scipy
    # gives on the sample itself, ties and all.
    import numpy as np
    from scipy.stats import quantile_test

    rng = np.random.default_rng(n)
    for high in (3, 1000):
        data = rng.integers(0, high, size=n).astype(float)
        want = quantile_test(data, q=float(np.median(data)), p=0.5).confidence_interval(0.95)
        got = stats.order_statistic_median(list(data))
        if math.isnan(want.low) or math.isnan(want.high):
            assert got is None
        else:
            assert got == (want.low, want.high)


def statistics_median(values: list[float]) -> float:
    import statistics

    return statistics.median(values)


def _barnard_by_hand(base: tuple[int, int], cand: tuple[int, int]) -> float:
    """Barnard's two-sided test from its definition: the largest chance, over the
    common pass probability p, that two binomial samples of these sizes give a
    pooled score statistic at least as extreme as the observed one."""
    (c1, n1), (c2, n2) = base, cand

    def score(x1: int, x2: int) -> float:
        pooled = (x1 + x2) / (n1 + n2)
        var = pooled * (1 - pooled) * (1 / n1 + 1 / n2)
        return 0.0 if var == 0 else (x2 / n2 - x1 / n1) / math.sqrt(var)

    observed = abs(score(c1, c2))
    extreme = [
        (x1, x2)
        for x1 in range(n1 + 1)
        for x2 in range(n2 + 1)
        if abs(score(x1, x2)) >= observed - 1e-12
    ]
    best = 0.0
    for step in range(1, 2000):
        p = step / 2000
        total = sum(
            math.comb(n1, x1) * p**x1 * (1 - p) ** (n1 - x1)
            * math.comb(n2, x2) * p**x2 * (1 - p) ** (n2 - x2)
            for x1, x2 in extreme
        )  # fmt: skip
        best = max(best, total)
    return best


# Tables whose statistic has no floating-point near-ties (scipy compares the
# statistic without a tolerance, e.g. 0.3*0.7 vs 0.7*(1-0.7), and may drop a tie).
@pytest.mark.parametrize(
    ("base", "cand"),
    [((2, 3), (0, 3)), ((5, 5), (1, 10)), ((2, 10), (9, 10)), ((3, 8), (8, 8)), ((0, 6), (4, 6))],
)
def test_barnard_p_value_is_the_one_its_definition_gives(
    base: tuple[int, int], cand: tuple[int, int]
) -> None:
    # The table went to scipy one row per side; scipy takes the samples as columns.
    got = stats.exact_test(base, cand)
    assert got["test"] == "barnard" and got["alternative"] == "two-sided"
    assert got["pValue"] == pytest.approx(_barnard_by_hand(base, cand), rel=2e-3)


def test_wilcoxon_ranks_equal_changes_as_ties() -> None:
    # 0.4 - 0.5 and 0.0 - 0.1 were different floats, so equal changes got different ranks.
    base = [5, 10, 9, 0, 6, 9, 0]
    cand = [4, 10, 8, 1, 8, 8, 1]
    pairs = [
        (
            cells_from_rows([row(f"c{i}", r < b, repeat=r) for r in range(10)])[f"v1::c{i}"],
            cells_from_rows([row(f"c{i}", r < c, repeat=r) for r in range(10)])[f"v1::c{i}"],
        )
        for i, (b, c) in enumerate(zip(base, cand, strict=True))
    ]
    paired = stats.paired_cases(pairs, seed=0)
    assert (paired["better"], paired["worse"]) == (3, 3)
    assert paired["wilcoxonP"] == pytest.approx(1.0)  # W = 9 of a possible 21: no evidence


def test_median_intervals_switch_to_exact_order_statistics_above_fifty_repeats() -> None:
    # Bootstrapping eleven metrics of 200 repeats made compare take 87 s on 200 cells.
    assert stats.BOOTSTRAP_MAX_REPEATS == 50
    small = [float(i % 7) for i in range(50)]
    large = [float(i % 7) for i in range(51)]
    assert stats.median_interval(small, seed=3) == stats.bootstrap_median(small, seed=3)
    assert stats.median_interval(large, seed=3) == stats.order_statistic_median(large)


def test_exact_test_computes_each_table_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Thousands of cells of a few repeats share a few hundred tables; Barnard's
    # test costs milliseconds, so it is asked once per table, not per cell.
    import scipy.stats

    calls: list[Any] = []
    real = scipy.stats.barnard_exact

    def counting(table: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(table)
        return real(table, *args, **kwargs)

    monkeypatch.setattr(scipy.stats, "barnard_exact", counting)
    stats._exact_pvalue.cache_clear()
    results = [stats.exact_test((1, 3), (3, 4)) for _ in range(50)]
    assert len(calls) == 1
    assert all(r == results[0] for r in results) and results[0]["test"] == "barnard"
    results[0]["pValue"] = -1.0  # a caller's edit does not reach the next answer
    assert stats.exact_test((1, 3), (3, 4))["pValue"] > 0


def _scipy_interval(
    samples: tuple[list[float], ...], statistic: Any, seed: int
) -> tuple[float, float]:
    """scipy's own percentile bootstrap of one sample (or pair), unbatched."""
    import numpy as np
    from scipy.stats import bootstrap

    res = bootstrap(
        tuple(np.sort(np.asarray(s, dtype=float)) for s in samples),
        statistic,
        n_resamples=stats.BOOTSTRAP_RESAMPLES,
        confidence_level=stats.CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def _samples(count: int, seed: int) -> list[list[float]]:
    import random

    rng = random.Random(seed)
    return [
        [float(rng.randint(0, 9)) for _ in range(rng.choice((2, 3, 4, 5, 8, 50)))]
        for _ in range(count)
    ]


def test_batched_median_intervals_are_scipys_per_sample_bootstrap() -> None:
    # Thousands of cells are resampled in a few scipy calls (three per metric
    # and cell took compare three minutes on 3,000 cells); each interval must
    # still be the one scipy gives that sample alone, seeded by its size.
    import numpy as np

    samples = _samples(60, seed=11)
    got = stats.bootstrap_medians(samples, seed=4)
    for values, interval in zip(samples, got, strict=True):
        if min(values) == max(values):
            assert interval == (values[0], values[0])
            continue
        want = _scipy_interval((values,), np.median, stats._seed(4, "median", str(len(values))))
        assert interval == pytest.approx(want, abs=1e-12)


def test_batched_median_difference_intervals_are_scipys_per_pair_bootstrap() -> None:
    import numpy as np

    samples = _samples(40, seed=12)
    pairs = list(zip(samples[::2], samples[1::2], strict=True))
    got = stats.bootstrap_median_differences(pairs, seed=5)

    def difference(x: Any, y: Any, axis: int = -1) -> Any:
        return np.median(y, axis=axis) - np.median(x, axis=axis)

    checked = 0
    for (a, b), interval in zip(pairs, got, strict=True):
        if min(a) == max(a) and min(b) == max(b):
            assert interval == (b[0] - a[0],) * 2
            continue
        seed = stats._seed(5, "difference", str(len(a)), str(len(b)))
        assert interval == pytest.approx(_scipy_interval((a, b), difference, seed), abs=1e-12)
        checked += 1
    assert checked > 10


def test_a_cells_interval_does_not_depend_on_the_other_cells(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    samples = _samples(80, seed=13)
    alone = [stats.bootstrap_median(s, seed=9) for s in samples]
    together = stats.bootstrap_medians(samples, seed=9)
    assert together == alone
    pairs = list(zip(samples[::2], samples[1::2], strict=True))
    alone_d = [stats.bootstrap_median_difference(a, b, seed=9) for a, b in pairs]
    assert stats.bootstrap_median_differences(pairs, seed=9) == alone_d
    # Split into many scipy calls (a memory cap): the same numbers.
    monkeypatch.setattr(stats, "_BATCH_VALUES", 1)
    assert stats.bootstrap_medians(samples, seed=9) == alone
    assert stats.bootstrap_median_differences(pairs, seed=9) == alone_d


def test_median_by_sorting_is_numpys_median() -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 4, 5, 50, 51):
        x = rng.integers(0, 7, (6, 40, n)).astype(float)
        assert np.array_equal(stats._median(x, axis=-1), np.median(x, axis=-1))


def test_intervals_near_the_float_limit_stay_finite_and_do_not_raise() -> None:
    # Finite metric values pass the readers; their medians and intervals must
    # not become Infinity (a token `--json` output cannot carry) nor raise
    # (MOVER squared a spread above 1e154: OverflowError).

    huge = [1e308, 1.7e308, 1.2e308, 1.6e308]
    medians = stats.median_intervals([huge, huge[:2]], seed=0)
    assert medians == [(1e308, 1.7e308), (1e308, 1.7e308)]
    small = stats.median_difference_interval(huge, [1e308, 1.5e308], seed=0)
    large = stats.median_difference_interval(
        [r * 1e160 for r in range(60)], [r * 2e160 for r in range(60)], seed=0
    )
    for interval in (small, large):
        assert interval is not None and all(math.isfinite(v) for v in interval)
    assert large is not None and large[0] <= 29.5e160 <= large[1]
    json.dumps([medians, small, large], allow_nan=False)


def _cell(case: str, passes: int, repeats: int, **fields: Any) -> Cell:
    rows = [row(case, r < passes, repeat=r, **fields) for r in range(repeats)]
    return cells_from_rows(rows)[f"v1::{case}"]


def test_a_baseline_that_never_passed_is_not_flaky() -> None:
    # Flaky means 0 < passes < repeats: a case that always fails is broken, not flaky.
    for passes, flaky in ((0, False), (1, True), (2, True), (3, False)):
        advisory = stats.cell_advisory(_cell("a", passes, 3), _cell("a", 3, 3), changed=True)
        assert advisory["flakyBaseline"] is flaky, passes


def test_a_large_baseline_against_a_few_candidate_repeats_gets_a_difference_interval() -> None:
    # A pooled 60-repeat baseline against a 5-repeat candidate: each side had
    # an interval but their difference had none (MOVER found no exact
    # order-statistic interval for five values).
    base = [float(i % 7) for i in range(60)]
    cand = [1.0, 2.0, 3.0, 4.0, 9.0]
    seed = 4
    a, b = stats.order_statistic_median(base), stats.median_interval(cand, seed)
    assert a is not None and b is not None
    m1, m2 = aggregate.median(base), aggregate.median(cand)
    got = stats.median_difference_interval(base, cand, seed)
    assert got is not None
    assert got == pytest.approx(
        (
            m2 - m1 - math.hypot(m2 - b[0], a[1] - m1),
            m2 - m1 + math.hypot(b[1] - m2, m1 - a[0]),
        )
    )
    assert got[0] <= m2 - m1 <= got[1]
    # Either way round, and still none with a single value on one side.
    assert stats.median_difference_interval(cand, base, seed) is not None
    assert stats.median_difference_interval(base, [3.0], seed) is None


def test_wilcoxon_leaves_unchanged_cases_out() -> None:
    # Cases whose pass rate did not move carry no sign: they are dropped
    # (zero_method="wilcox"), not ranked as the smallest changes.
    from scipy.stats import wilcoxon

    # Enough cases for the normal approximation, where ranking the zeros moves p.
    moves = [(1, 2)] * 20 + [(2, 1)] * 8 + [(0, 2)] * 5 + [(1, 1)] * 10
    pairs = [(_cell(f"c{i}", b, 4), _cell(f"c{i}", c, 4)) for i, (b, c) in enumerate(moves)]
    out = stats.paired_cases(pairs, seed=0)
    nonzero = [(c - b) / 4 for b, c in moves if c != b]
    assert out["wilcoxonP"] == pytest.approx(float(wilcoxon(nonzero).pvalue))


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
