"""Runner benchmark: per-repeat overhead and scaling with --concurrency.

A script, not a test: `python benchmarks/runner.py` (or `make bench`). It
builds a throwaway workspace with two cases and runs them through the real
runner (`capeval.runner.run.execute`) with the real scripted agent:

- overhead: a trajectory that does nothing (one text-only turn) and a grader
  that exits 0, so a repeat's wall time is the runner's own cost plus the
  agent process start (target: <= 100 ms per repeat);
- scaling: 64 repeats of a trajectory that sleeps 1 s, at concurrency 1, 4
  and 8 (target: <= 10 s at 8);
- sandboxes: the overhead run again with `isolation` none, bwrap and docker
  (target: bwrap <= 50 ms per repeat over none; docker measured). A backend
  this host cannot run is skipped with the reason; docker needs `--image`.

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


def run(
    root: Path, case: str, repeats: int, concurrency: int, isolation: str | None = None
) -> tuple[float, list[dict]]:
    start = time.monotonic()
    outcome = execute(
        RunOptions(
            root=root,
            cases=(case,),
            repeats=repeats,
            concurrency=concurrency,
            isolation=isolation,
            jsonl=root / f"{case}-{repeats}x{concurrency}-{isolation}-{time.time_ns()}.jsonl",
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
    parser.add_argument(
        "--sandboxes", nargs="*", default=["none", "bwrap", "docker"], help="[] skips them"
    )
    parser.add_argument("--sandbox-repeats", type=int, default=30)
    parser.add_argument("--image", help="the Docker image for the docker sandbox")
    parser.add_argument("--only-sandboxes", action="store_true", help="skip overhead and scaling")
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
        if args.sandboxes:
            sandboxes(root, args.sandboxes, args.sandbox_repeats, args.image)
        if args.only_sandboxes:
            return
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


def sandboxes(root: Path, names: list[str], repeats: int, image: str | None) -> None:
    """The no-op repeat in each sandbox; the median and its cost over `none`.

    The backends take turns, a few repeats each, so that a machine whose
    speed drifts (other work on the host) weighs on all of them alike.
    """
    from capeval.core.isolation import Isolation
    from capeval.isolation.host import host_problem

    runnable = []
    for name in names:
        problem = host_problem(Isolation(backend=name, image=image))
        if problem:
            print(f"sandbox {name}: skipped: {problem}")
        else:
            runnable.append(name)
    config = root / "capeval.toml"
    config.write_text(f'image = "{image}"\n' if image else "")
    rows: dict[str, list[dict]] = {name: [] for name in runnable}
    for name in runnable:
        run(root, "noop", 2, 1, name)  # warm up (the image's first container)
    batch = 5
    for _ in range(max(1, repeats // batch)):
        for name in runnable:
            rows[name] += run(root, "noop", batch, 1, name)[1]
    config.unlink(missing_ok=True)
    medians: dict[str, float] = {}
    for name in runnable:
        per_repeat = [r["durationMs"] for r in rows[name]]
        agent = [r["agentDurationMs"] for r in rows[name]]
        verify = [r["verifyDurationMs"] for r in rows[name]]
        medians[name] = statistics.median(per_repeat)
        over = medians[name] - medians["none"] if "none" in medians and name != "none" else None
        print(
            f"sandbox {name}: {len(per_repeat)} no-op repeats, median repeat "
            f"{medians[name]:.0f} ms (agent {statistics.median(agent):.0f} ms, grader "
            f"{statistics.median(verify):.0f} ms)"
            + (f", {over:+.0f} ms over none" if over is not None else "")
        )


if __name__ == "__main__":
    main()
