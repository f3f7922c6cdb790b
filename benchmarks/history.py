"""Benchmark: history over 1,000 run files with 1,000,000 rows in all.

Not a test: run it by hand (`.venv/bin/python benchmarks/history.py`), on a
quiet machine. It writes the files to a temporary folder (about 1 GB of
JSON Lines, removed afterwards), then times the named query
`pass_rate_trend`:

- cold: `connect([folder])` (scan every file into an in-memory DuckDB) plus
  the query; target <= 3 s;
- after `ingest` into a database file: open it read-only plus the query;
  target <= 0.3 s.

The query's 200,000 result rows are materialised inside DuckDB (a table),
and separately fetched into Python, which is reported on its own line.
Prints the medians and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from capeval.analysis.history import connect, ingest, open_db  # noqa: E402
from capeval.analysis.queries import find_query  # noqa: E402
from capeval.core.metrics import METRIC_NAMES  # noqa: E402

VARIANTS = ("baseline", "candidate", "model-b", "model-c")
CASES = tuple(f"case-{i:02d}" for i in range(50))
REPEATS = 5  # 4 variants x 50 cases x 5 repeats = 1,000 rows per run


def write_runs(folder: Path, runs: int) -> int:
    """One JSON Lines file per run, rows shaped like capeval's; returns bytes written."""
    total = 0
    for run in range(runs):
        started = f"2026-{1 + run // 28 % 12:02d}-{1 + run % 28:02d}T{run % 24:02d}:00:00.000Z"
        run_id = f"run-{run:04d}"
        lines = []
        for v, variant in enumerate(VARIANTS):
            for c, case in enumerate(CASES):
                for repeat in range(REPEATS):
                    seed = run * 7 + v * 13 + c * 17 + repeat * 31
                    row = {
                        "resultKey": f"{variant}::{case}",
                        "id": case,
                        "tier": "simple",
                        "title": case,
                        "variantId": variant,
                        "provider": "scripted",
                        "model": variant,
                        "passed": seed % 10 < 7,
                        "agentExitCode": 0,
                        "verifyExitCode": 0 if seed % 10 < 7 else 1,
                        "durationMs": 1000 + seed % 5000,
                        "agentDurationMs": 900 + seed % 5000,
                        "verifyDurationMs": 100,
                        "status": "done",
                        "sessionId": f"s-{run}-{v}-{c}-{repeat}",
                        "turnsUsed": 3 + seed % 9,
                        "toolCallCount": 4 + seed % 11,
                        "tokenUsage": {
                            "input": 10000 + seed % 3000,
                            "output": 500 + seed % 300,
                            "cacheRead": 0,
                            "cacheWrite": 0,
                            "thinking": 0,
                        },
                        "maxTurns": 20,
                        "overBudget": False,
                        "skipPermissions": True,
                        "error": None,
                        "repeat": repeat,
                        "behaviors": {
                            **{m: (seed >> i) % 4 for i, m in enumerate(METRIC_NAMES)},
                            "toolCallsByName": {"run_shell": seed % 5, "read_file": 3},
                        },
                        "textPreview": "Done.",
                        "runId": run_id,
                        "runStartedAt": started,
                        "agent": "scripted",
                        "capevalVersion": "0.1.0",
                        "gitCommit": f"{run:040x}",
                        "gitDirty": False,
                        "bait": None,
                    }
                    lines.append(json.dumps(row))
        data = ("\n".join(lines) + "\n").encode()
        (folder / f"{run_id}.jsonl").write_bytes(data)
        total += len(data)
    return total


def timed(action: Callable[[], object], times: int) -> list[float]:
    out = []
    for _ in range(times):
        start = time.perf_counter()
        action()
        out.append(time.perf_counter() - start)
    return out


def machine() -> str:
    import duckdb
    from machine import cpu_model

    cpu = cpu_model()

    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"DuckDB {duckdb.__version__}, {platform.system()} {platform.release()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--times", type=int, default=3, help="timings per measurement")
    args = parser.parse_args()
    sql = find_query("pass_rate_trend").sql.rstrip().rstrip(";")
    materialise = f"CREATE OR REPLACE TEMP TABLE trend AS {sql}"

    with tempfile.TemporaryDirectory(prefix="capeval-history-bench-") as tmp:
        folder = Path(tmp) / "results"
        folder.mkdir()
        start = time.perf_counter()
        size = write_runs(folder, args.runs)
        print(
            f"wrote {args.runs} files, {args.runs * 1000:,} rows, {size / 1e6:,.0f} MB "
            f"in {time.perf_counter() - start:.1f} s"
        )

        def cold() -> None:
            con = connect([folder])
            con.execute(materialise)
            con.close()

        cold_times = timed(cold, args.times)

        db = Path(tmp) / "history.duckdb"
        start = time.perf_counter()
        con = open_db(db)
        report = ingest(con, [folder])
        con.close()
        ingest_s = time.perf_counter() - start
        con = open_db(db)
        again = timed(lambda: ingest(con, [folder]), 1)[0]
        con.close()

        def warm() -> None:
            con = open_db(db, read_only=True)
            con.execute(materialise)
            con.close()

        def warm_fetch() -> None:
            con = open_db(db, read_only=True)
            con.execute(sql).fetchall()
            con.close()

        warm_times = timed(warm, max(5, args.times))
        fetch_times = timed(warm_fetch, max(5, args.times))

    print(f"machine: {machine()}")
    print(
        f"cold (scan files + pass_rate_trend): median {statistics.median(cold_times):.2f} s "
        f"(target <= 3 s); runs {', '.join(f'{t:.2f}' for t in cold_times)}"
    )
    print(
        f"ingest into --db: {ingest_s:.2f} s ({report.rows_added:,} rows); re-ingest: {again:.2f} s"
    )
    print(
        f"after ingest (open db + pass_rate_trend): median {statistics.median(warm_times):.3f} s "
        "(target <= 0.3 s)"
    )
    print(
        f"after ingest, 200,000 result rows fetched into Python: median "
        f"{statistics.median(fetch_times):.3f} s"
    )


if __name__ == "__main__":
    main()
