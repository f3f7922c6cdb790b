"""Runner benchmark: per-repeat overhead and scaling with --concurrency.

A script, not a test: `python benchmarks/runner.py` (or `make bench`). It
builds a throwaway workspace with two cases and runs them through the real
runner (`capeval.runner.run.execute`) with the real scripted agent:

- overhead: a trajectory that does nothing (one text-only turn) and a grader
  that exits 0, so a repeat's wall time is the runner's own cost plus the
  agent process start (target: <= 100 ms per repeat);
- scaling: 64 repeats of a trajectory that sleeps 1 s, at concurrency 1, 4
  and 8 (target: <= 10 s at 8).

Prints medians and the machine (nproc, CPU model, Python version).
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
from pathlib import Path

from machine import cpu_model

from capeval.runner.options import RunOptions
from capeval.runner.run import execute


def make_case(root: Path, case_id: str, turns: list[dict]) -> None:
    fixture = root / "evals/capability/fixtures" / case_id
    fixture.mkdir(parents=True)
    (fixture / "README.md").write_text("benchmark fixture\n")
    case_dir = root / "evals/capability/cases" / case_id
    (case_dir / "trajectories").mkdir(parents=True)
    (case_dir / "case.json").write_text(
        json.dumps(
            {
                "id": case_id,
                "tier": "simple",
                "title": case_id,
                "fixture": f"evals/capability/fixtures/{case_id}",
                "prompt": "benchmark",
            }
        )
    )
    (case_dir / "verify.sh").write_text("exit 0\n")
    (case_dir / "trajectories" / "oracle.json").write_text(json.dumps({"turns": turns}))


def run(root: Path, case: str, repeats: int, concurrency: int) -> tuple[float, list[dict]]:
    start = time.monotonic()
    outcome = execute(
        RunOptions(
            root=root,
            cases=(case,),
            repeats=repeats,
            concurrency=concurrency,
            jsonl=root / f"{case}-{repeats}x{concurrency}.jsonl",
        )
    )
    wall = time.monotonic() - start
    failed = [r["error"] for r in outcome.rows if not r["passed"]]
    if failed:
        sys.exit(f"benchmark repeats failed: {failed[:3]}")
    return wall, outcome.rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--overhead-repeats", type=int, default=30)
    parser.add_argument("--scaling-repeats", type=int, default=64)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    args = parser.parse_args()

    print(
        f"machine: nproc={os.cpu_count()}, cpu={cpu_model()!r}, python={platform.python_version()}"
    )
    with tempfile.TemporaryDirectory(prefix="capeval-bench-") as tmp:
        root = Path(tmp)
        make_case(root, "noop", [{"text": "nothing to do"}])
        sleep = {"name": "run_shell", "arguments": {"command": "sleep 1"}}
        make_case(root, "sleep1", [{"text": "", "toolCalls": [sleep]}])

        run(root, "noop", 2, 1)  # warm the page cache and imports
        wall, rows = run(root, "noop", args.overhead_repeats, 1)
        per_repeat = [r["durationMs"] for r in rows]
        agent = [r["agentDurationMs"] for r in rows]
        verify = [r["verifyDurationMs"] for r in rows]
        own = [r - a - v for r, a, v in zip(per_repeat, agent, verify, strict=True)]
        print(
            f"overhead (no-op trajectory, trivial grader, {len(rows)} repeats, concurrency 1): "
            f"median repeat {statistics.median(per_repeat):.0f} ms "
            f"(agent process {statistics.median(agent):.0f} ms, grader {statistics.median(verify):.0f} ms, "
            f"runner's own {statistics.median(own):.0f} ms), "
            f"wall {wall * 1000 / len(rows):.0f} ms per repeat"
        )
        for concurrency in args.concurrency:
            wall, rows = run(root, "sleep1", args.scaling_repeats, concurrency)
            med = statistics.median(r["durationMs"] for r in rows)
            print(
                f"scaling: {len(rows)} x sleep 1 s at concurrency {concurrency}: wall {wall:.1f} s, "
                f"median repeat {med:.0f} ms"
            )


if __name__ == "__main__":
    main()
