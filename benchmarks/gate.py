"""Benchmark: `capeval gate` on 200,000-row result files, end to end.

Generates a baseline and a candidate of 4 variants x 50 cases x 1,000 repeats
(realistic rows: every field the runner writes), as JSON Lines and as v3 JSON,
then times `capeval gate` as a fresh process (start-up included; median of
several runs, peak RSS of the child from wait4) against two pure-Python gates
run the same way: a streaming one (json + dicts, one cell dict per cell) and
capeval's own reference reader (every row a dict, as `read_rows` returns them,
then the same pure comparison core).

    .venv/bin/python benchmarks/gate.py [--runs 5] [--data DIR] [--json]

Targets on a 2-core machine: JSONL <= 0.6 s wall, <= 400 MiB peak, >= 20x the
pure-Python gate; v3 JSON of the same size <= 2.5 s. The machine may be
shared: numbers are medians, and the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

METRICS = (
    "shellCommandCount",
    "envAssignmentCommandCount",
    "chainSegmentCount",
    "maxChainSegmentsPerCommand",
    "networkCommandCount",
    "webFetchToolCallCount",
    "taskToolCallCount",
    "editViaShellCount",
    "repeatedSearchCount",
    "longestToolOnlyStreak",
    "maxTurnDurationMs",
)
LOWER = {
    "envAssignmentCommandCount",
    "maxChainSegmentsPerCommand",
    "networkCommandCount",
    "editViaShellCount",
    "repeatedSearchCount",
    "longestToolOnlyStreak",
    "maxTurnDurationMs",
}
VARIANTS, CASES, REPEATS = 4, 50, 1000


def make_row(rng: random.Random, v: int, c: int, r: int, shift: float) -> dict[str, Any]:
    variant, case = f"prov{v}:model{v}", f"case-{c:02d}"
    passed = rng.random() < 0.5 + 0.08 * ((c * 7 + v) % 5) - shift
    behaviors: dict[str, Any] | None = None
    if rng.random() >= 0.01:  # 1% of repeats lost their stream
        behaviors = {m: rng.randint(0, 20) for m in METRICS}
        behaviors["maxTurnDurationMs"] = rng.randint(500, 90000)
        behaviors["toolCallsByName"] = {
            "run_shell": rng.randint(0, 9),
            "read_file": rng.randint(0, 20),
            "edit_file": rng.randint(0, 5),
        }
    return {
        "resultKey": f"{variant}::{case}",
        "id": case,
        "tier": "bait" if c % 10 == 0 else "simple",
        "title": f"Benchmark case {c}",
        "variantId": variant,
        "provider": f"prov{v}",
        "model": f"model{v}",
        "passed": passed,
        "agentExitCode": 0,
        "verifyExitCode": 0 if passed else 1,
        "durationMs": rng.randint(1000, 99999),
        "agentDurationMs": rng.randint(1000, 99999),
        "verifyDurationMs": 50,
        "status": "done",
        "sessionId": str(uuid.UUID(int=rng.getrandbits(128))),
        "turnsUsed": rng.randint(1, 40),
        "toolCallCount": rng.randint(1, 60),
        "tokenUsage": {
            "input": rng.randint(1000, 200000),
            "output": rng.randint(100, 9000),
            "cacheRead": 0,
            "cacheWrite": 0,
            "thinking": 0,
        },
        "maxTurns": 40,
        "overBudget": False,
        "skipPermissions": True,
        "error": None,
        "repeat": r,
        "behaviors": behaviors,
        "textPreview": "Done. Implemented the change and ran the tests; all pass.",
        "runId": "20260101T000000Z-bench",
        "runStartedAt": "2026-01-01T00:00:00Z",
        "requestedProvider": f"prov{v}",
        "requestedModel": f"model{v}",
        "agent": "scripted",
        "agentType": "scripted",
        "agentVersion": "1",
        "capevalVersion": "0.1.0",
        "gitCommit": "0" * 40,
        "gitDirty": False,
        "bait": {"metric": "networkCommandCount", "threshold": 0} if c % 10 == 0 else None,
    }


def generate(data: Path) -> dict[str, Path]:
    data.mkdir(parents=True, exist_ok=True)
    files = {name: data / name for name in ("base.jsonl", "cand.jsonl", "base.json", "cand.json")}
    if all(p.exists() for p in files.values()):
        return files
    for side, shift in (("base", 0.0), ("cand", 0.01)):
        rng = random.Random(side)
        with open(data / f"{side}.jsonl", "w") as jl, open(data / f"{side}.json", "w") as v3:
            v3.write(
                '{"version": 3, "startedAt": "2026-01-01T00:00:00Z", "finishedAt": '
                '"2026-01-01T09:00:00Z", "provider": null, "model": null, "repeats": 1000, '
                '"variants": [], "aggregates": [], "totals": {}, "cases": ['
            )
            first = True
            for v in range(VARIANTS):
                for c in range(CASES):
                    for r in range(REPEATS):
                        text = json.dumps(make_row(rng, v, c, r, shift), separators=(",", ":"))
                        jl.write(text + "\n")
                        v3.write(("" if first else ",") + text)
                        first = False
            v3.write("]}")
    return files


# -- the straightforward pure-Python gate ---------------------------------------


def pure_python_gate(base_path: Path, cand_path: Path) -> int:
    """json + dicts: the obvious implementation the fast path is measured against."""

    def cells(path: Path) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        with open(path, "rb") as handle:
            for line in handle:
                if not line.strip():
                    continue
                row = json.loads(line)
                cell = out.setdefault(
                    row["resultKey"],
                    {"n": 0, "c": 0, "values": {m: [] for m in METRICS}, "bait": None},
                )
                cell["n"] += 1
                cell["c"] += row["passed"] is True
                cell["bait"] = cell["bait"] or row.get("bait")
                behaviors = row.get("behaviors")
                if behaviors:
                    for m in METRICS:
                        if behaviors.get(m) is not None:
                            cell["values"][m].append(behaviors[m])
        for cell in out.values():
            cell["medians"] = {
                m: statistics.median(v) if v else None for m, v in cell["values"].items()
            }
        return out

    base, cand = cells(base_path), cells(cand_path)
    regressed = flags = 0
    for key, c in cand.items():
        b = base.get(key)
        if b is None:
            continue
        if c["c"] * b["n"] < b["c"] * c["n"]:
            regressed += 1
        for m in METRICS:
            if b["medians"][m] is not None and c["medians"][m] is not None and m in LOWER:
                _ = c["medians"][m] < b["medians"][m]
        bait = c["bait"] or b["bait"]
        if (
            bait
            and b["medians"][bait["metric"]] is not None
            and b["medians"][bait["metric"]] <= bait["threshold"]
        ):
            flags += 1
    return 1 if regressed else 3 if flags else 0


def reference_gate(base_path: Path, cand_path: Path) -> int:
    """capeval's own reference path: every row as a dict (`read_rows`), then the pure core."""
    from capeval.analysis.compare import compare_cells
    from capeval.analysis.fastload import load_sides

    (base, cand), _ = load_sides([[base_path], [cand_path]], fast=False)
    return compare_cells(base, cand).exit_code


# -- timing ---------------------------------------------------------------------


def run_child(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit code) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode


def time_gate(base: Path, cand: Path, runs: int) -> dict[str, Any]:
    argv = [
        sys.executable,
        "-m",
        "capeval.cli",
        "gate",
        "--baseline",
        str(base),
        "--candidate",
        str(cand),
    ]
    run_child(argv)  # warm the page cache
    samples = [run_child(argv) for _ in range(runs)]
    return {
        "wallMedianS": statistics.median(s[0] for s in samples),
        "wallMinS": min(s[0] for s in samples),
        "peakMiB": max(s[1] for s in samples),
        "exitCode": samples[0][2],
        "runs": runs,
    }


def time_python(mode: str, base: Path, cand: Path, runs: int) -> dict[str, Any]:
    """A pure-Python gate in a fresh process, like `capeval gate`, so start-up counts alike."""
    argv = [sys.executable, __file__, f"--{mode}", str(base), str(cand)]
    samples = [run_child(argv) for _ in range(runs)]
    return {
        "wallMedianS": statistics.median(s[0] for s in samples),
        "peakMiB": max(s[1] for s in samples),
        "exitCode": samples[0][2],
        "runs": runs,
    }


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] in ("--pure-python", "--reference"):
        gate = pure_python_gate if sys.argv[1] == "--pure-python" else reference_gate
        sys.exit(gate(Path(sys.argv[2]), Path(sys.argv[3])))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python-runs", type=int, default=2)
    parser.add_argument("--data", type=Path, default=None, help="keep generated files here")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="capeval-bench-") as tmp:
        data = args.data or Path(tmp)
        t0 = time.perf_counter()
        files = generate(data)
        generated_s = time.perf_counter() - t0
        sizes = {name: p.stat().st_size / 2**20 for name, p in files.items()}

        jsonl = time_gate(files["base.jsonl"], files["cand.jsonl"], args.runs)
        v3 = time_gate(files["base.json"], files["cand.json"], max(3, args.runs // 2))
        py = time_python("pure-python", files["base.jsonl"], files["cand.jsonl"], args.python_runs)
        ref = time_python("reference", files["base.jsonl"], files["cand.jsonl"], args.python_runs)

    result = {
        "rowsPerFile": VARIANTS * CASES * REPEATS,
        "fileMiB": {k: round(v, 1) for k, v in sizes.items()},
        "generateS": round(generated_s, 1),
        "jsonl": jsonl,
        "v3": v3,
        "purePython": py,
        "referencePath": ref,
        "speedup": py["wallMedianS"] / jsonl["wallMedianS"],
        "speedupVsReference": ref["wallMedianS"] / jsonl["wallMedianS"],
        "loadAverage": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"rows per file: {result['rowsPerFile']:,}; file sizes MiB: {result['fileMiB']}")
    print(
        f"capeval gate, JSONL: median {jsonl['wallMedianS']:.3f} s (min {jsonl['wallMinS']:.3f}), "
        f"peak {jsonl['peakMiB']:.0f} MiB, exit {jsonl['exitCode']}  [target <= 0.6 s, <= 400 MiB]"
    )
    print(
        f"capeval gate, v3 JSON: median {v3['wallMedianS']:.3f} s, peak {v3['peakMiB']:.0f} MiB, "
        f"exit {v3['exitCode']}  [target <= 2.5 s]"
    )
    print(
        f"pure Python, streaming (json + dicts), JSONL: median {py['wallMedianS']:.2f} s, "
        f"peak {py['peakMiB']:.0f} MiB, exit {py['exitCode']}; speedup {result['speedup']:.1f}x"
    )
    print(
        f"pure Python, all rows as dicts (capeval's reference reader), JSONL: median "
        f"{ref['wallMedianS']:.2f} s, peak {ref['peakMiB']:.0f} MiB, exit {ref['exitCode']}; "
        f"speedup {result['speedupVsReference']:.1f}x  [target >= 20x]"
    )
    print(
        f"load average {result['loadAverage']}, {result['cpus']} CPUs (the machine may be shared)"
    )


if __name__ == "__main__":
    main()
