"""Where a run's repeats run: the executor interface, and the local thread pool.

`capeval.runner.run.execute` owns everything that makes a run one run: the
stream's lock, the plan file, the single writer that makes each row durable
before the next is accepted, signals, progress and `--resume`. An executor
only runs repeats and hands each finished repeat's row back:

- `LocalExecutor` (`--executor local`, the default): a thread pool of
  `--concurrency` threads in this process, each repeat's agent and grader in
  process groups of their own (`capeval.runner.repeat.run_repeat`), an
  attempt that measured nothing run again (`capeval.runner.retry`).
- `RayExecutor` (`--executor ray`, `capeval.runner.rayexec`): each repeat a
  Ray task on a cluster's nodes; Ray is imported only when it is chosen.

Both hand rows to `deliver`, which the run serialises and which drops a
repeat handed back twice, so no executor can write a row or write one twice.
Each row gets a `provenance` object: the executor, the host that ran the
repeat and, on Ray, its node id (the run adds the shard).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol

from capeval.core.row import Row
from capeval.proc import process
from capeval.results.errors import ResultFileError
from capeval.runner.httpfixture import HttpFixture
from capeval.runner.options import RunPlan
from capeval.runner.repeat import RepeatCancelled, RepeatJob
from capeval.runner.retry import RetryPolicy, run_with_retries

EXECUTORS: tuple[str, ...] = ("local", "ray")

Deliver = Callable[[Row], None]


class Executor(Protocol):
    """Runs a plan's repeats somewhere and hands each row back to the run's writer."""

    name: str

    def start(self, plan: RunPlan) -> None:
        """Get ready to run (connect to a cluster); RunError when it cannot, before any repeat."""
        ...

    def versions(self, plan: RunPlan, stop: threading.Event) -> dict[str, str | None]:
        """Each agent's version, asked where its repeats will run (and, there, the checks
        that depend on the host: binaries, sandboxes); RunError when one fails. Returns
        early, with what it has, once `stop` is set."""
        ...

    def run(
        self, plan: RunPlan, jobs: list[RepeatJob], deliver: Deliver, stop: threading.Event
    ) -> list[str]:
        """Run `jobs`, handing each finished repeat's row to `deliver`; stop starting
        repeats once `stop` is set. Returns the repeats that could not be run (each
        said with why): they have no row, and a `--resume` runs them again.

        An exception `deliver` raises (the stream refused a row) ends the run: it
        propagates once every repeat in flight was stopped."""
        ...

    def close(self) -> None:
        """Release what `start` took (a cluster connection); called once, whatever happened."""
        ...


def provenance(executor: str, host: str | None = None, node: str | None = None) -> dict[str, Any]:
    """A row's `provenance` (docs/result-formats.md#run-context-fields): where it was run."""
    return {
        "executor": executor,
        "host": host if host is not None else socket.gethostname(),
        "node": node,
    }


class LocalExecutor:
    """`--concurrency` threads in this process; each repeat's processes in their own groups."""

    name = "local"

    def __init__(self) -> None:
        self._host = socket.gethostname()

    def start(self, plan: RunPlan) -> None:
        return None

    def versions(self, plan: RunPlan, stop: threading.Event) -> dict[str, str | None]:
        versions: dict[str, str | None] = {}
        for name, adapter in plan.adapters.items():
            if stop.is_set():
                break
            try:
                versions[name] = adapter.version()
            except Exception:  # a version probe must not stop the run
                versions[name] = None
        return versions

    def run(
        self, plan: RunPlan, jobs: list[RepeatJob], deliver: Deliver, stop: threading.Event
    ) -> list[str]:
        def one(job: RepeatJob) -> None:
            if stop.is_set():
                return
            try:
                row = run_with_retries(
                    job,
                    plan.adapters[job.agent.name],
                    plan.settings,
                    RetryPolicy(plan.settings.retries, plan.settings.retry_wait_s),
                    stop=stop,
                    on_retry=plan.on_retry,
                )
            except RepeatCancelled:
                return
            row["provenance"] = provenance(self.name, self._host)
            deliver(row)

        pool = ThreadPoolExecutor(max_workers=plan.concurrency, thread_name_prefix="repeat")
        try:
            pending: set[Future[None]] = {pool.submit(one, j) for j in jobs}
            while pending and not stop.is_set():
                finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for fut in finished:
                    fut.result()  # a runner bug, or the stream refusing a row, surfaces here
        except BaseException as exc:
            # Every repeat in flight is stopped before the pool is waited on.
            stop.set()
            broken = isinstance(exc, ResultFileError)
            process.shutdown("row stream not writable" if broken else "run aborted")
            HttpFixture.stop_all()
            raise
        finally:
            if stop.is_set():
                process.shutdown("run interrupted")
                HttpFixture.stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
        return []

    def close(self) -> None:
        return None
