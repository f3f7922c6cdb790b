"""Advisory statistics beside the gate's strict verdicts.

The gate's rules are deliberately exact (any change counts); these numbers
say how much a reader should trust a change: intervals for pass rates and
behavior medians, an exact test for each changed cell, per-variant rates
whose intervals resample cases (repeats of one case are correlated, so
resampling repeats would overstate certainty), and pass@k / pass^k. They
never change an exit code.

Deterministic: every bootstrap is seeded from the run's seed and what it
resamples (the sample sizes of a behavior median, the variant of a pass
rate), and samples are sorted first, so the same inputs give the same
numbers in any order, and a cell's intervals do not move when other cells
join the comparison. scipy and numpy are imported inside the functions.
"""

from __future__ import annotations

import functools
import math
import warnings
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from capeval.core.cell import Cell


class ComparedCell(Protocol):
    """What the advisory statistics read of one compared cell."""

    @property
    def resultKey(self) -> str: ...
    @property
    def variantId(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def baseline(self) -> Cell | None: ...
    @property
    def candidate(self) -> Cell | None: ...
    @property
    def behaviors(self) -> Sequence[Any]: ...


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


# Resampled values one scipy call may hold (float64: 32 MiB); larger batches are split.
_BATCH_VALUES = 1 << 22


def _bootstrap_rows(
    samples: tuple[Any, ...], statistic: Callable[..., Any], seed: int, *, paired: bool = False
) -> list[tuple[float, float]]:
    """The one bootstrap every interval here uses: a percentile interval per row of 2-D arrays.

    scipy draws one set of resample indices per call and applies it to every
    row, and each call here starts from the same seed, so a row's interval is
    exactly the one a call on that row alone would give: batching thousands
    of cells into a few calls (scipy's set-up cost 2 ms per call, three
    minutes of `compare` on 3,000 cells) changes no number.
    """
    import numpy as np
    from scipy.stats import bootstrap

    rows = samples[0].shape[0]
    width = sum(s.shape[-1] for s in samples)
    step = max(1, _BATCH_VALUES // (BOOTSTRAP_RESAMPLES * width))
    out: list[tuple[float, float]] = []
    for start in range(0, rows, step):
        # scipy also takes the resamples' standard deviation, which nothing
        # here reads and which overflows (a stderr warning) near the float limit.
        with np.errstate(over="ignore", invalid="ignore"):
            res = bootstrap(
                tuple(s[start : start + step] for s in samples),
                statistic,
                paired=paired,
                vectorized=True,
                axis=-1,
                n_resamples=BOOTSTRAP_RESAMPLES,
                confidence_level=CONFIDENCE,
                method="percentile",
                rng=np.random.default_rng(seed),
            )
        low = np.atleast_1d(res.confidence_interval.low)
        high = np.atleast_1d(res.confidence_interval.high)
        out += [(float(lo), float(hi)) for lo, hi in zip(low, high, strict=True)]
    return out


def _percentile_bootstrap(
    samples: tuple[Any, ...], statistic: Callable[..., Any], seed: int, *, paired: bool = False
) -> tuple[float, float]:
    """One sample (or one set of paired samples): a batch of one row."""
    return _bootstrap_rows(tuple(s[None, :] for s in samples), statistic, seed, paired=paired)[0]


def _median(x: Any, axis: int = -1) -> Any:
    """np.median's value, by sorting: over a few repeats it is 2-3 times faster than np.median,

    whose partition and NaN check dominate a bootstrap of thousands of small samples.
    """
    import numpy as np

    s = np.sort(x, axis=axis)
    n = s.shape[axis]
    mid = np.take(s, n // 2, axis=axis)
    if n % 2:
        return mid
    low = np.take(s, n // 2 - 1, axis=axis)
    try:
        with np.errstate(over="raise"):
            return (low + mid) / 2
    except FloatingPointError:
        # Two finite values near the float limit sum to inf: halve those
        # first, as `capeval.core.aggregate.median` does, or an interval reads
        # Infinity (a token `--json` output cannot carry).
        with np.errstate(over="ignore"):
            total = low + mid
        return np.where(np.isfinite(total), total / 2, low / 2 + mid / 2)


def _median_difference(x: Any, y: Any, axis: int = -1) -> Any:
    return _median(y, axis=axis) - _median(x, axis=axis)


def _unique_rows(data: Any) -> tuple[Any, Any]:
    """Distinct rows and, per original row, its distinct row's index.

    An interval depends only on the sorted sample (and its size), and real
    behavior counts repeat a lot (zeros, the same few values): each distinct
    sample is resampled once.
    """
    import numpy as np

    unique, inverse = np.unique(data, axis=0, return_inverse=True)
    return unique, inverse.reshape(-1)


def _by_size(sizes: Sequence[tuple[int, ...]]) -> dict[tuple[int, ...], list[int]]:
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, size in enumerate(sizes):
        groups.setdefault(size, []).append(i)
    return groups


def bootstrap_medians(
    samples: Sequence[Sequence[float]], seed: int
) -> list[tuple[float, float] | None]:
    """Percentile bootstrap interval of each sample's median; None below two values.

    Seeded by the run's seed and the sample size alone, so equal samples get
    equal intervals wherever they appear, and an interval does not move when
    other cells join the comparison.
    """
    import numpy as np

    out: list[tuple[float, float] | None] = [None] * len(samples)
    todo: list[int] = []
    for i, values in enumerate(samples):
        if len(values) >= 2:
            lo, hi = min(values), max(values)
            if lo == hi:
                out[i] = (float(lo), float(lo))
            else:
                todo.append(i)
    for (n,), members in _by_size([(len(samples[i]),) for i in todo]).items():
        data = np.sort(np.asarray([samples[todo[j]] for j in members], dtype=float), axis=-1)
        unique, inverse = _unique_rows(data)
        intervals = _bootstrap_rows((unique,), _median, _seed(seed, "median", str(n)))
        for j, row in zip(members, inverse, strict=True):
            out[todo[j]] = intervals[row]
    return out


def bootstrap_median(values: Sequence[float], seed: int) -> tuple[float, float] | None:
    """Percentile bootstrap interval of a median; None with fewer than two values."""
    return bootstrap_medians([values], seed)[0]


def bootstrap_median_differences(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]], seed: int
) -> list[tuple[float, float] | None]:
    """Percentile bootstrap interval of candidate median minus baseline median, per pair.

    Seeded by the run's seed and the two sample sizes, as `bootstrap_medians` is.
    """
    import numpy as np

    out: list[tuple[float, float] | None] = [None] * len(pairs)
    todo: list[int] = []
    for i, (base, cand) in enumerate(pairs):
        if len(base) < 2 or len(cand) < 2:
            continue
        if min(base) == max(base) and min(cand) == max(cand):
            d = float(cand[0] - base[0])
            out[i] = (d, d)
        else:
            todo.append(i)
    sizes = [(len(pairs[i][0]), len(pairs[i][1])) for i in todo]
    for (n1, n2), members in _by_size(sizes).items():
        a = np.sort(np.asarray([pairs[todo[j]][0] for j in members], dtype=float), axis=-1)
        b = np.sort(np.asarray([pairs[todo[j]][1] for j in members], dtype=float), axis=-1)
        unique, inverse = _unique_rows(np.concatenate((a, b), axis=1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            intervals = _bootstrap_rows(
                (unique[:, :n1], unique[:, n1:]),
                _median_difference,
                _seed(seed, "difference", str(n1), str(n2)),
            )
        for j, row in zip(members, inverse, strict=True):
            out[todo[j]] = intervals[row]
    return out


def bootstrap_median_difference(
    base: Sequence[float], cand: Sequence[float], seed: int
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of candidate median minus baseline median."""
    return bootstrap_median_differences([(base, cand)], seed)[0]


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


def median_intervals(
    samples: Sequence[Sequence[float]], seed: int
) -> list[tuple[float, float] | None]:
    """Bootstrap for the usual handful of repeats; exact order statistics for large cells.

    Resampling a thousand repeats thousands of times per metric and cell would
    make `compare` on large histories take minutes; the order-statistic
    interval is exact there and costs one binomial quantile.
    """
    small = [i for i, values in enumerate(samples) if len(values) <= BOOTSTRAP_MAX_REPEATS]
    out = [
        None if len(values) <= BOOTSTRAP_MAX_REPEATS else order_statistic_median(values)
        for values in samples
    ]
    for i, interval in zip(
        small, bootstrap_medians([samples[i] for i in small], seed), strict=True
    ):
        out[i] = interval
    return out


def median_interval(values: Sequence[float], seed: int) -> tuple[float, float] | None:
    """`median_intervals` of one sample."""
    return median_intervals([values], seed)[0]


def median_difference_intervals(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]], seed: int
) -> list[tuple[float, float] | None]:
    """Candidate minus baseline median: bootstrap for small cells, MOVER for large ones.

    MOVER (method of variance estimates recovery, Zou & Donner) combines the
    two exact median intervals the way Newcombe combines Wilson intervals.
    """
    small = [i for i, (a, b) in enumerate(pairs) if max(len(a), len(b)) <= BOOTSTRAP_MAX_REPEATS]
    out = [
        None if max(len(a), len(b)) <= BOOTSTRAP_MAX_REPEATS else _mover(a, b, seed)
        for a, b in pairs
    ]
    intervals = bootstrap_median_differences([pairs[i] for i in small], seed)
    for i, interval in zip(small, intervals, strict=True):
        out[i] = interval
    return out


def median_difference_interval(
    base: Sequence[float], cand: Sequence[float], seed: int
) -> tuple[float, float] | None:
    """`median_difference_intervals` of one pair."""
    return median_difference_intervals([(base, cand)], seed)[0]


def _mover(base: Sequence[float], cand: Sequence[float], seed: int) -> tuple[float, float] | None:
    # A side too small for exact order statistics (under six values, say a
    # 5-repeat candidate against a pooled 60-repeat baseline) brings its
    # bootstrap interval, the one its own median is shown with: without it
    # the difference had no interval although both sides had one.
    a = order_statistic_median(base) or bootstrap_median(base, seed)
    b = order_statistic_median(cand) or bootstrap_median(cand, seed)
    if a is None or b is None:
        return None
    import numpy as np

    m1 = float(_median(np.asarray(base, dtype=float)))
    m2 = float(_median(np.asarray(cand, dtype=float)))
    d = m2 - m1
    # hypot, not the square root of squares: squaring a spread above 1e154
    # raised OverflowError, a traceback instead of a comparison.
    return (
        d - math.hypot(m2 - b[0], a[1] - m1),
        d + math.hypot(b[1] - m2, m1 - a[0]),
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
    base: Cell | None,
    cand: Cell | None,
    *,
    changed: bool,
) -> dict[str, Any]:
    """Everything advisory about one cell (both sides when present) but its behavior intervals.

    Those are computed for all cells at once (`behavior_intervals`): batched,
    the bootstrap costs a few scipy calls instead of three per metric and cell.
    """
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
    return out


def behavior_intervals(
    cells: Sequence[tuple[Cell | None, Cell | None, Sequence[str]]], seed: int
) -> list[dict[str, Any]]:
    """Per cell (baseline, candidate, metrics): each metric's median intervals, both sides and the difference.

    A cell gets them only when both sides kept their values (`with_values`).
    """
    tasks: list[tuple[int, str, Sequence[float], Sequence[float]]] = []
    for i, (base, cand, metrics) in enumerate(cells):
        if base is None or cand is None or base.values is None or cand.values is None:
            continue
        tasks += [(i, m, base.values.get(m, ()), cand.values.get(m, ())) for m in metrics]
    sides = median_intervals([t[2] for t in tasks] + [t[3] for t in tasks], seed)
    diffs = median_difference_intervals([(t[2], t[3]) for t in tasks], seed)
    out: list[dict[str, Any]] = [{} for _ in cells]
    for k, (i, metric, _, _) in enumerate(tasks):
        a, b, d = sides[k], sides[len(tasks) + k], diffs[k]
        out[i][metric] = {
            "baselineCI": list(a) if a else None,
            "candidateCI": list(b) if b else None,
            "differenceCI": list(d) if d else None,
        }
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


def advisory(
    cells: Sequence[ComparedCell], *, seed: int = 0
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each compared cell's advisory statistics, and the comparison's own.

    Returned, not stored: the comparison decides where they go, and they never
    change a verdict.
    """
    intervals = behavior_intervals(
        [(c.baseline, c.candidate, [b.metric for b in c.behaviors]) for c in cells], seed
    )
    per_cell: list[dict[str, Any]] = []
    for cell, behaviors in zip(cells, intervals, strict=True):
        one = cell_advisory(
            cell.baseline, cell.candidate, changed=cell.status in ("improved", "regressed")
        )
        if behaviors:
            one["behaviors"] = behaviors
        per_cell.append(one)
    variants: dict[str, Any] = {}
    for variant in sorted({c.variantId for c in cells}):
        mine = [c for c in cells if c.variantId == variant]
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
    overall = {
        "confidence": CONFIDENCE,
        "seed": seed,
        "bootstrapResamples": BOOTSTRAP_RESAMPLES,
        "note": "Intervals: Wilson (pass rates), Newcombe (their differences), percentile "
        f"bootstrap (medians up to {BOOTSTRAP_MAX_REPEATS} repeats; exact order statistics and "
        "MOVER differences above), case-resampling bootstrap (variant pass rates).",
        "flakyBaselineCells": [
            c.resultKey for c, adv in zip(cells, per_cell, strict=True) if adv.get("flakyBaseline")
        ],
        "variants": variants,
    }
    return per_cell, overall
