"""Scale-out benchmark: the Ray executor against the local thread pool.

A script, not a test: `python benchmarks/scale.py` (needs `pip install -e '.[ray]'`).
It builds a throwaway workspace and runs it through the real runner
(`capeval.runner.run.execute`) with the real scripted agent:

- wall time: 128 repeats of a trajectory that sleeps 2 s, on the local
  executor at concurrency 8, and on a local Ray cluster of 2 worker nodes x 8
  CPUs (`ray.cluster_utils.Cluster` on 127.0.0.1, a head that runs no task)
  at concurrency 16. The work is sleep-bound, so each wall time over its
  ideal (128 x 2 s / slots) is what the executor and the machine add;
- Ray's per-task overhead: a no-op repeat (one text-only turn, a grader that
  exits 0) run one at a time on each executor; the difference of the mean
  wall times per repeat is what a Ray task adds to a repeat (target: <= 150 ms).

Each measurement is taken `--rounds` times (default 3; every local round
first, then every Ray round on one cluster) and printed as its median with
every round's value. Prints the machine (nproc, CPU model, Python and Ray
versions) and the load average sampled each second while the runs went on.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from machine import cpu_model
from runner import make_case

from capeval.runner.options import RunOptions
from capeval.runner.run import execute


@contextmanager
def load_sampler() -> Iterator[list[float]]:
    """The 1-minute load average, sampled each second while the block runs."""
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(1.0):
            samples.append(os.getloadavg()[0])

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join()


def run(root: Path, case: str, repeats: int, concurrency: int, **extra: Any) -> float:
    start = time.monotonic()
    outcome = execute(
        RunOptions(
            root=root,
            cases=(case,),
            repeats=repeats,
            concurrency=concurrency,
            jsonl=root / f"{case}-{repeats}x{concurrency}-{time.time_ns()}.jsonl",
            **extra,
        )
    )
    wall = time.monotonic() - start
    failed = [r["error"] for r in outcome.rows if not r["passed"]]
    if failed or len(outcome.rows) != repeats:
        sys.exit(f"benchmark repeats failed or missing: {failed[:3]}")
    return wall


@contextmanager
def ray_cluster(nodes: int, cpus: int) -> Iterator[str]:
    """A local Ray cluster on 127.0.0.1; its address."""
    temp = tempfile.mkdtemp(prefix="capeval-bench-ray-", dir="/tmp")
    os.environ["RAY_TMPDIR"] = temp
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray.cluster_utils import Cluster

    store = 200 * 1024 * 1024
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False, "object_store_memory": store},
    )
    try:
        for _ in range(nodes):
            cluster.add_node(num_cpus=cpus, object_store_memory=store)
        cluster.wait_for_nodes()
        yield cluster.address
    finally:
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=128)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--local-concurrency", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--slots", type=int, default=8, help="CPUs (task slots) per Ray node")
    parser.add_argument("--overhead-repeats", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import ray

    print(
        f"machine: nproc={os.cpu_count()}, cpu={cpu_model()!r}, "
        f"python={platform.python_version()}, ray={ray.__version__}"
    )
    with tempfile.TemporaryDirectory(prefix="capeval-bench-") as tmp:
        root = Path(tmp)
        make_case(root, "noop", [{"text": "nothing to do"}])
        sleep = {"name": "run_shell", "arguments": {"command": f"sleep {args.seconds:g}"}}
        make_case(root, "sleep", [{"text": "", "toolCalls": [sleep]}])

        slots = args.nodes * args.slots
        local_noop: list[float] = []
        local_sleep: list[float] = []
        ray_noop: list[float] = []
        ray_sleep: list[float] = []
        with load_sampler() as load:
            run(root, "noop", 2, 1)  # warm the page cache and imports
            for _ in range(args.rounds):
                local_noop.append(run(root, "noop", args.overhead_repeats, 1))
                local_sleep.append(run(root, "sleep", args.repeats, args.local_concurrency))
            with ray_cluster(args.nodes, args.slots) as address:
                ray_args = {"executor": "ray", "ray_address": address}
                run(root, "noop", slots, slots, **ray_args)  # start every node's workers
                for _ in range(args.rounds):
                    ray_noop.append(run(root, "noop", args.overhead_repeats, 1, **ray_args))
                    ray_sleep.append(run(root, "sleep", args.repeats, slots, **ray_args))

        def ideal(concurrency: int) -> float:
            waves = -(-args.repeats // concurrency)
            return waves * args.seconds

        def shown(values: list[float], scale: float = 1.0, unit: str = "s") -> str:
            digits = 1 if unit == "s" else 0
            each = ", ".join(f"{v * scale:.{digits}f}" for v in values)
            return f"{statistics.median(values) * scale:.{digits}f} {unit} ({each})"

        local_wall = statistics.median(local_sleep)
        ray_wall = statistics.median(ray_sleep)
        print(f"rounds: {args.rounds}; medians, then each round's value")
        print(
            f"wall, {args.repeats} x sleep {args.seconds:g} s: local concurrency "
            f"{args.local_concurrency}: {shown(local_sleep)} (ideal "
            f"{ideal(args.local_concurrency):.0f} s, x{local_wall / ideal(args.local_concurrency):.2f}); "
            f"Ray {args.nodes} nodes x {args.slots} slots: {shown(ray_sleep)} (ideal "
            f"{ideal(slots):.0f} s, x{ray_wall / ideal(slots):.2f})"
        )
        per = 1000 / args.overhead_repeats
        overhead = [r - loc for r, loc in zip(ray_noop, local_noop, strict=True)]
        print(
            f"no-op repeat one at a time ({args.overhead_repeats} a round): local "
            f"{shown(local_noop, per, 'ms')}, Ray {shown(ray_noop, per, 'ms')}: Ray's per-task "
            f"overhead {shown(overhead, per, 'ms')} (target <= 150 ms)"
        )
        if load:
            print(
                f"load average (1 min) during the runs: median {statistics.median(load):.1f}, "
                f"max {max(load):.1f} ({len(load)} samples)"
            )


if __name__ == "__main__":
    main()
