"""Benchmark: `load_frame` on a 200,000-row result file, fast path against the reference.

Generates 4 variants x 50 cases x 1,000 repeats of runner-like rows (the rows
of `benchmarks/gate.py`, reused by import) as JSON Lines and as v3 JSON, then
times `capeval.analysis.frame.load_frame` in-process, as a notebook calls it:
the fast path (DuckDB) and the reference reader (`fast=False`, every row a
dict). The first fast call pays for importing DuckDB and is shown apart. The
two frames are checked equal before any number is printed.

    .venv/bin/python benchmarks/frame.py [--runs 5] [--reference-runs 1] [--data DIR] [--json]

Target on a 2-core machine: <= 2 s for 200,000 JSON Lines rows. The machine
may be shared: numbers are medians, printed beside the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gate import CASES, REPEATS, VARIANTS, make_row
from machine import cpu_model


def generate(data: Path) -> dict[str, Path]:
    """One 200,000-row file per format (kept between runs: generating takes a while)."""
    data.mkdir(parents=True, exist_ok=True)
    files = {"jsonl": data / "frame.jsonl", "v3": data / "frame.json"}
    if all(p.exists() for p in files.values()):
        return files
    rng = random.Random("frame")
    with open(files["jsonl"], "w") as jl, open(files["v3"], "w") as v3:
        v3.write('{"version": 3, "startedAt": null, "finishedAt": null, "cases": [')
        first = True
        for v in range(VARIANTS):
            for c in range(CASES):
                for r in range(REPEATS):
                    text = json.dumps(make_row(rng, v, c, r, 0.0), separators=(",", ":"))
                    jl.write(text + "\n")
                    v3.write(("" if first else ",\n") + text)
                    first = False
        v3.write("]}\n")
    return files


def timed(call: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return times, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed fast-path runs per format")
    parser.add_argument("--reference-runs", type=int, default=1, help="timed reference runs")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "capeval-bench")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()

    from polars.testing import assert_frame_equal

    from capeval.analysis.frame import load_frame

    files = generate(args.data)
    results: dict[str, Any] = {
        "machine": {
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "system": f"{platform.system()} {platform.release()}",
        },
        "rows": VARIANTS * CASES * REPEATS,
        "formats": {},
    }
    for fmt, path in files.items():
        start = time.perf_counter()
        load_frame(path)
        first = time.perf_counter() - start
        fast, quick = timed(lambda path=path: load_frame(path), args.runs)
        slow, reference = timed(lambda path=path: load_frame(path, fast=False), args.reference_runs)
        assert_frame_equal(quick, reference)
        results["formats"][fmt] = {
            "bytes": path.stat().st_size,
            "firstCallS": round(first, 3),
            "fastMedianS": round(statistics.median(fast), 3),
            "fastRunsS": [round(t, 3) for t in fast],
            "referenceMedianS": round(statistics.median(slow), 3),
            "speedup": round(statistics.median(slow) / statistics.median(fast), 1),
        }
    results["loadAverage"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return
    m = results["machine"]
    print(f"machine: {m['cpu']}, {m['cpus']} CPUs, Python {m['python']}, {m['system']}")
    print(f"rows: {results['rows']:,}; load average after: {results['loadAverage']}")
    for fmt, r in results["formats"].items():
        print(
            f"{fmt:>5}: fast median {r['fastMedianS']:.2f} s (runs {r['fastRunsS']}, "
            f"first call {r['firstCallS']:.2f} s), reference median {r['referenceMedianS']:.2f} s, "
            f"{r['speedup']}x; {r['bytes'] / 1e6:.0f} MB"
        )


if __name__ == "__main__":
    main()
