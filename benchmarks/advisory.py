"""Benchmark: `capeval compare` with its advisory statistics on a wide matrix.

Generates a baseline and a candidate of 30 variants x 100 cases x 5 repeats
(3,000 cells of runner-like rows from `benchmarks/gate.py`), then:

- times `capeval compare --json` as a fresh process, with the advisory
  statistics and with `--no-advisory`, interleaved;
- on the first `--subset` cells, times the behavior-median intervals asked
  one sample at a time (three scipy bootstraps per metric and cell, as
  `compare` did before they were batched) against `behavior_intervals`
  (batched), in-process, and checks the two give the same numbers.

    .venv/bin/python benchmarks/advisory.py [--runs 3] [--subset 300] [--data DIR] [--json]

No target in the issues; compare took 2 min 56 s on these files before the
batching. The machine may be shared: numbers are medians.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gate import make_row
from machine import cpu_model

VARIANTS, CASES, REPEATS = 30, 100, 5


def generate(data: Path) -> tuple[Path, Path]:
    data.mkdir(parents=True, exist_ok=True)
    base, cand = data / "advisory-base.jsonl", data / "advisory-cand.jsonl"
    if base.exists() and cand.exists():
        return base, cand
    rng = random.Random("advisory")
    for path, shift in ((base, 0.0), (cand, 0.05)):
        with open(path, "w") as out:
            for v in range(VARIANTS):
                for c in range(CASES):
                    for r in range(REPEATS):
                        out.write(json.dumps(make_row(rng, v, c, r, shift)) + "\n")
    return base, cand


def compare_process(base: Path, cand: Path, *extra: str) -> float:
    argv = [sys.executable, "-m", "capeval.cli", "compare", "--baseline", str(base)]
    argv += ["--candidate", str(cand), "--json", *extra]
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def in_process(base: Path, cand: Path, subset: int) -> dict[str, Any]:
    from capeval.analysis import stats
    from capeval.analysis.fastload import load_sides
    from capeval.core.metrics import METRIC_NAMES

    (b, c), _ = load_sides([[base], [cand]], with_values=True)
    keys = sorted(b.keys() & c.keys())[:subset]
    cells = [(b[k], c[k], METRIC_NAMES) for k in keys]

    start = time.perf_counter()
    one_by_one: list[dict[str, Any]] = []
    for base_cell, cand_cell, metrics in cells:
        assert base_cell.values is not None and cand_cell.values is not None
        row = {}
        for m in metrics:
            x, y = base_cell.values.get(m, ()), cand_cell.values.get(m, ())
            lo_hi = [stats.median_interval(x, 0), stats.median_interval(y, 0)]
            d = stats.median_difference_interval(x, y, 0)
            row[m] = {
                "baselineCI": list(lo_hi[0]) if lo_hi[0] else None,
                "candidateCI": list(lo_hi[1]) if lo_hi[1] else None,
                "differenceCI": list(d) if d else None,
            }
        one_by_one.append(row)
    single = time.perf_counter() - start
    start = time.perf_counter()
    batched = stats.behavior_intervals(cells, 0)
    together = time.perf_counter() - start
    assert batched == one_by_one, "batched intervals differ from per-sample ones"
    return {
        "cells": len(cells),
        "perSampleS": round(single, 2),
        "batchedS": round(together, 2),
        "speedup": round(single / together, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed compare runs of each kind")
    parser.add_argument("--subset", type=int, default=300, help="cells for the in-process check")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "capeval-bench")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()

    base, cand = generate(args.data)
    with_stats: list[float] = []
    without: list[float] = []
    for _ in range(args.runs):
        with_stats.append(compare_process(base, cand))
        without.append(compare_process(base, cand, "--no-advisory"))
    results = {
        "machine": {
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "cells": VARIANTS * CASES,
        "repeats": REPEATS,
        "compareMedianS": round(statistics.median(with_stats), 2),
        "compareRunsS": [round(t, 2) for t in with_stats],
        "noAdvisoryMedianS": round(statistics.median(without), 2),
        "behaviorIntervals": in_process(base, cand, args.subset),
        "loadAverage": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return
    m, bi = results["machine"], results["behaviorIntervals"]
    print(f"machine: {m['cpu']}, {m['cpus']} CPUs, Python {m['python']}")
    print(
        f"cells: {results['cells']:,} x {REPEATS} repeats; load average after: {results['loadAverage']}"
    )
    print(
        f"compare --json: median {results['compareMedianS']} s (runs {results['compareRunsS']}); "
        f"--no-advisory: {results['noAdvisoryMedianS']} s"
    )
    print(
        f"behavior intervals on {bi['cells']} cells: one sample at a time {bi['perSampleS']} s, "
        f"batched {bi['batchedS']} s ({bi['speedup']}x), same numbers"
    )


if __name__ == "__main__":
    main()
