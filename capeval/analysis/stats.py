"""Advisory statistics beside the gate's strict verdicts.

The gate's rules are deliberately exact (any change counts); these numbers
say how much a reader should trust a change: intervals for pass rates and
behavior medians, an exact test for each changed cell, per-variant rates
whose intervals resample cases (repeats of one case are correlated, so
resampling repeats would overstate certainty), and pass@k / pass^k. They
never change an exit code.

Deterministic: every bootstrap is seeded from the run's seed and the cell's
key, and samples are sorted first, so the same inputs give the same numbers
in any order. scipy and numpy are imported inside the functions.
"""

from __future__ import annotations

import functools
import math
import warnings
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from capeval.analysis.cells import Cell
    from capeval.analysis.compare import Comparison

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
# Barnard's test maximises over a nuisance parameter and takes seconds per
# cell for a thousand repeats; above this many repeats per cell Fisher's
# exact test (conditional, slightly more conservative) stands in for it.
BARNARD_MAX_REPEATS = 200
# Above this many repeats per cell, median intervals use exact order
# statistics instead of the bootstrap (see `median_interval`). At 50 values the
# exact interval already has its nominal coverage; bootstrapping 11 metrics of
# 200 repeats took compare 87 s on 200 such cells.
BOOTSTRAP_MAX_REPEATS = 50


def wilson(passes: int, repeats: int, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Wilson score interval for a pass rate; None without repeats.

    The closed form, equal to scipy's `binomtest(...).proportion_ci(method=
    "wilson")` (a test holds them equal). That call also computes the exact
    binomial test's p-value, which nothing here reads and which cost 2 ms per
    call: most of `compare`'s time on a large run.
    """
    if repeats <= 0:
        return None
    _check_passes(passes, repeats)
    from scipy.special import ndtri

    z = float(ndtri(0.5 + confidence / 2))
    rate, shrink = passes / repeats, z * z / repeats
    centre = (rate + shrink / 2) / (1 + shrink)
    half = z * math.sqrt(rate * (1 - rate) / repeats + shrink / (4 * repeats)) / (1 + shrink)
    return (
        0.0 if passes == 0 else centre - half,
        1.0 if passes == repeats else centre + half,
    )


def difference_interval(
    base: tuple[int, int], cand: tuple[int, int], confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """Newcombe's hybrid score interval for candidate minus baseline pass rate.

    Built from the two Wilson intervals, so it behaves at 0% and 100% where
    the textbook normal interval collapses to a point.
    """
    (c1, n1), (c2, n2) = base, cand
    w1, w2 = wilson(c1, n1, confidence), wilson(c2, n2, confidence)
    if w1 is None or w2 is None:
        return None
    p1, p2 = c1 / n1, c2 / n2
    d = p2 - p1
    low = d - math.sqrt((p2 - w2[0]) ** 2 + (w1[1] - p1) ** 2)
    high = d + math.sqrt((w2[1] - p2) ** 2 + (p1 - w1[0]) ** 2)
    return (max(-1.0, low), min(1.0, high))


def exact_test(base: tuple[int, int], cand: tuple[int, int]) -> dict[str, Any]:
    """Barnard's exact test (Fisher's for large cells) on the 2x2 pass/fail table, two-sided.

    scipy's barnard_exact takes the two samples as the table's *columns*
    (it conditions on the column totals): one column per side, so the
    repeats of each side are the fixed totals. Rows per side would fix the
    pass and fail totals instead and give another, wrong p-value. (Fisher's
    test is the same either way round.)
    """
    (c1, n1), (c2, n2) = base, cand
    test, pvalue = _exact_pvalue(c1, n1, c2, n2)
    return {"test": test, "alternative": "two-sided", "pValue": pvalue}


@functools.lru_cache(maxsize=4096)
def _exact_pvalue(c1: int, n1: int, c2: int, n2: int) -> tuple[str, float]:
    """(test, p-value) of one 2x2 table, computed once per table.

    Barnard's test costs about 7 ms, and a matrix of thousands of cells of a
    few repeats each holds only a few hundred distinct tables: asked per cell,
    `compare` on 3,000 changed cells spent 20 s here.
    """
    from scipy.stats import barnard_exact, fisher_exact

    table = [[c1, c2], [n1 - c1, n2 - c2]]
    if max(n1, n2) <= BARNARD_MAX_REPEATS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "barnard", min(1.0, float(barnard_exact(table).pvalue))
    return "fisher", min(1.0, float(fisher_exact(table).pvalue))


def _check_passes(passes: int, repeats: int) -> None:
    """ValueError unless 0 <= passes <= repeats (a swapped call gave a math domain error)."""
    if not 0 <= passes <= repeats:
        raise ValueError(f"passes must be between 0 and repeats ({repeats}), got {passes}")


def _check_k(n: int, c: int, k: int) -> None:
    """The unbiased estimators draw k of the n repeats: 1 <= k <= n."""
    _check_passes(c, n)
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the number of repeats ({n}), got {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of k repeats (drawn from n) passes.

    ValueError when k is not between 1 and n: k repeats cannot be drawn from
    fewer (the estimate would be 1.0 even with no pass at all).
    """
    _check_k(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: the chance that all k repeats (drawn from n) pass (1 <= k <= n)."""
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def k_values(n: int) -> list[int]:
    """Every k up to n for the usual handful of repeats; a log-spaced ladder beyond 10."""
    if n <= 10:
        return list(range(1, n + 1))
    ks = [1, 2, 3, 5]
    step = 10
    while step < n:
        ks += [step, 2 * step, 5 * step]
        step *= 10
    return sorted({k for k in ks if k < n} | {n})


def _seed(seed: int, *parts: str) -> int:
    return (zlib.crc32("\0".join(parts).encode()) ^ seed) & 0xFFFFFFFF


def _percentile_bootstrap(
    samples: tuple[Any, ...], statistic: Callable[..., Any], seed: int, *, paired: bool = False
) -> tuple[float, float]:
    """The one bootstrap every interval here uses, so resamples, level and seeding agree."""
    import numpy as np
    from scipy.stats import bootstrap

    res = bootstrap(
        samples,
        statistic,
        paired=paired,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def bootstrap_median(values: Sequence[float], seed: int) -> tuple[float, float] | None:
    """Percentile bootstrap interval of a median; None with fewer than two values."""
    if len(values) < 2:
        return None
    import numpy as np

    data = np.sort(np.asarray(values, dtype=float))
    if data[0] == data[-1]:
        return (float(data[0]), float(data[0]))
    return _percentile_bootstrap((data,), np.median, seed)


def bootstrap_median_difference(
    base: Sequence[float], cand: Sequence[float], seed: int
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of candidate median minus baseline median."""
    if len(base) < 2 or len(cand) < 2:
        return None
    import numpy as np

    a = np.sort(np.asarray(base, dtype=float))
    b = np.sort(np.asarray(cand, dtype=float))
    if a[0] == a[-1] and b[0] == b[-1]:
        d = float(b[0] - a[0])
        return (d, d)

    def statistic(x: Any, y: Any, axis: int = -1) -> Any:
        return np.median(y, axis=axis) - np.median(x, axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _percentile_bootstrap((a, b), statistic, seed)


def order_statistic_median(values: Sequence[float]) -> tuple[float, float] | None:
    """Exact distribution-free interval for a median from order statistics (no resampling)."""
    if len(values) < 2:
        return None
    ranks = _median_ranks(len(values), CONFIDENCE)
    if ranks is None:
        return None
    data = sorted(values)
    return (float(data[ranks[0]]), float(data[ranks[1]]))


@functools.lru_cache(maxsize=256)
def _median_ranks(n: int, confidence: float) -> tuple[int, int] | None:
    """Which order statistics bound the median of n values: scipy's `quantile_test` interval.

    The interval depends on n alone, so scipy is asked once per n, on the
    ranks 0..n-1, and the answer indexes any sorted sample of that size. Asked
    per cell and metric instead, scipy's per-call set-up (a frozen binomial
    each time) made `compare` on 200,000-row files spend 17 s here.
    """
    import numpy as np
    from scipy.stats import quantile_test

    ci = quantile_test(np.arange(n, dtype=float), q=0.0, p=0.5).confidence_interval(confidence)
    if math.isnan(ci.low) or math.isnan(ci.high):
        return None
    return (int(ci.low), int(ci.high))


def median_interval(values: Sequence[float], seed: int) -> tuple[float, float] | None:
    """Bootstrap for the usual handful of repeats; exact order statistics for large cells.

    Resampling a thousand repeats thousands of times per metric and cell would
    make `compare` on large histories take minutes; the order-statistic
    interval is exact there and costs one binomial quantile.
    """
    if len(values) <= BOOTSTRAP_MAX_REPEATS:
        return bootstrap_median(values, seed)
    return order_statistic_median(values)


def median_difference_interval(
    base: Sequence[float], cand: Sequence[float], seed: int
) -> tuple[float, float] | None:
    """Candidate minus baseline median: bootstrap for small cells, MOVER for large ones.

    MOVER (method of variance estimates recovery, Zou & Donner) combines the
    two exact median intervals the way Newcombe combines Wilson intervals.
    """
    if max(len(base), len(cand)) <= BOOTSTRAP_MAX_REPEATS:
        return bootstrap_median_difference(base, cand, seed)
    a, b = order_statistic_median(base), order_statistic_median(cand)
    if a is None or b is None:
        return None
    import numpy as np

    m1, m2 = float(np.median(base)), float(np.median(cand))
    d = m2 - m1
    return (
        d - math.sqrt((m2 - b[0]) ** 2 + (a[1] - m1) ** 2),
        d + math.sqrt((b[1] - m2) ** 2 + (m1 - a[0]) ** 2),
    )


def side_advisory(cell: Cell) -> dict[str, Any]:
    n, c = cell.repeats, cell.passCount
    interval = wilson(c, n)
    return {
        "passRate": c / n if n else None,
        "wilson": list(interval) if interval else None,
        "passAtK": {str(k): pass_at_k(n, c, k) for k in k_values(n)},
        "passHatK": {str(k): pass_hat_k(n, c, k) for k in k_values(n)},
    }


def cell_advisory(
    key: str,
    base: Cell | None,
    cand: Cell | None,
    metrics: Sequence[str],
    *,
    changed: bool,
    seed: int = 0,
) -> dict[str, Any]:
    """Everything advisory about one cell (both sides when present)."""
    out: dict[str, Any] = {}
    if base is not None:
        out["baseline"] = side_advisory(base)
        out["flakyBaseline"] = 0 < base.passCount < base.repeats
    if cand is not None:
        out["candidate"] = side_advisory(cand)
    if base is not None and cand is not None and changed:
        b, c = (base.passCount, base.repeats), (cand.passCount, cand.repeats)
        test = exact_test(b, c)
        diff = difference_interval(b, c)
        out["exactTest"] = {
            **test,
            "difference": cand.passRate - base.passRate,
            "differenceCI": list(diff) if diff else None,
        }
    behaviors: dict[str, Any] = {}
    if (
        base is not None
        and cand is not None
        and base.values is not None
        and cand.values is not None
    ):
        for metric in metrics:
            a, b2 = base.values.get(metric, ()), cand.values.get(metric, ())
            lo_hi_a = median_interval(a, _seed(seed, key, metric, "baseline"))
            lo_hi_b = median_interval(b2, _seed(seed, key, metric, "candidate"))
            diff2 = median_difference_interval(a, b2, _seed(seed, key, metric, "difference"))
            behaviors[metric] = {
                "baselineCI": list(lo_hi_a) if lo_hi_a else None,
                "candidateCI": list(lo_hi_b) if lo_hi_b else None,
                "differenceCI": list(diff2) if diff2 else None,
            }
    if behaviors:
        out["behaviors"] = behaviors
    return out


def variant_rate(cells: Sequence[Cell], seed: int) -> dict[str, Any]:
    """A variant's overall pass rate, with an interval from resampling cases."""
    passes = [c.passCount for c in cells]
    repeats = [c.repeats for c in cells]
    total = sum(repeats)
    out: dict[str, Any] = {
        "cases": len(cells),
        "passRate": sum(passes) / total if total else None,
        "ci": None,
    }
    if len(cells) >= 2 and total:
        import numpy as np

        p = np.asarray(passes, dtype=float)
        n = np.asarray(repeats, dtype=float)
        if np.all(p / n == p[0] / n[0]):
            out["ci"] = [float(p[0] / n[0])] * 2
        else:

            def pooled(pp: Any, nn: Any, axis: int = -1) -> Any:
                return pp.sum(axis=axis) / nn.sum(axis=axis)

            out["ci"] = list(_percentile_bootstrap((p, n), pooled, seed, paired=True))
    return out


def paired_cases(pairs: Sequence[tuple[Cell, Cell]], seed: int) -> dict[str, Any]:
    """Per-case candidate-minus-baseline pass rates: sign test, Wilcoxon and a bootstrap interval."""
    from scipy.stats import binomtest, wilcoxon

    # From integers: equal changes must be equal floats, or Wilcoxon ranks
    # them apart (0.4 - 0.5 is -0.09999999999999998, 0.0 - 0.1 is -0.1).
    diffs = sorted(
        (c.passCount * b.repeats - b.passCount * c.repeats) / (b.repeats * c.repeats)
        for b, c in pairs
    )
    out: dict[str, Any] = {
        "cases": len(diffs),
        "better": sum(1 for d in diffs if d > 0),
        "worse": sum(1 for d in diffs if d < 0),
        "meanDifference": sum(diffs) / len(diffs) if diffs else None,
        "signTestP": None,
        "wilcoxonP": None,
        "differenceCI": None,
    }
    nonzero = out["better"] + out["worse"]
    if nonzero:
        out["signTestP"] = float(binomtest(out["better"], nonzero, 0.5).pvalue)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out["wilcoxonP"] = float(wilcoxon(diffs, zero_method="wilcox").pvalue)
            except ValueError:
                out["wilcoxonP"] = None
    if len(diffs) >= 2:
        import numpy as np

        d = np.asarray(diffs, dtype=float)
        if d[0] == d[-1]:
            out["differenceCI"] = [float(d[0])] * 2
        else:
            out["differenceCI"] = list(_percentile_bootstrap((d,), np.mean, seed))
    return out


def annotate(comparison: Comparison, *, seed: int = 0) -> None:
    """Fill each cell's `advisory` and the comparison's top-level `advisory`."""
    for cell in comparison.cells:
        cell.advisory = cell_advisory(
            cell.resultKey,
            cell.baseline,
            cell.candidate,
            [b.metric for b in cell.behaviors],
            changed=cell.status in ("improved", "regressed"),
            seed=seed,
        )
    variants: dict[str, Any] = {}
    for variant in sorted({c.variantId for c in comparison.cells}):
        mine = [c for c in comparison.cells if c.variantId == variant]
        base = [c.baseline for c in mine if c.baseline is not None]
        cand = [c.candidate for c in mine if c.candidate is not None]
        pairs = [
            (c.baseline, c.candidate)
            for c in mine
            if c.baseline is not None and c.candidate is not None
        ]
        variants[variant] = {
            "baseline": variant_rate(base, _seed(seed, variant, "baseline")) if base else None,
            "candidate": variant_rate(cand, _seed(seed, variant, "candidate")) if cand else None,
            "paired": paired_cases(pairs, _seed(seed, variant, "paired")) if pairs else None,
        }
    comparison.advisory = {
        "confidence": CONFIDENCE,
        "seed": seed,
        "bootstrapResamples": BOOTSTRAP_RESAMPLES,
        "note": "Intervals: Wilson (pass rates), Newcombe (their differences), percentile "
        f"bootstrap (medians up to {BOOTSTRAP_MAX_REPEATS} repeats; exact order statistics and "
        "MOVER differences above), case-resampling bootstrap (variant pass rates).",
        "flakyBaselineCells": [
            c.resultKey for c in comparison.cells if c.advisory.get("flakyBaseline")
        ],
        "variants": variants,
    }
