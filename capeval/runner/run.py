"""A whole run: variants x cases x repeats, rows streamed to JSON Lines as they end.

`capeval.runner.plan.plan_run` resolves options, configuration and the workspace into
the exact list of repeats (pure apart from reading the workspace); `execute` runs them
on a thread pool. Repeats are independent, so they run concurrently, but
rows go through one writer, each made durable before the next is accepted:
a crash loses at most the repeats in flight, and `--resume` runs exactly the
(variant, case, repeat) triples the stream does not hold yet.

The stream's run shape (matrix, cases, repeats, ...) is kept beside it in
`<stream>.plan.json`, so `capeval run --resume PATH` needs no other flags.
Each repeat's evidence goes to `<stream stem>.artifacts/` beside the stream
unless `artifacts` says otherwise (`capeval.runner.artifacts`).
"""

from __future__ import annotations

import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capeval.agents.base import Adapter
from capeval.core.row import Row, triple
from capeval.proc import process, reaper
from capeval.results.errors import ResultFileError
from capeval.runner.artifacts import (
    ArtifactsTaken,
    claim_cells,
    release_claims,
)
from capeval.runner.executor import EXECUTORS, Executor, LocalExecutor
from capeval.runner.httpfixture import HttpFixture
from capeval.runner.repeat import RepeatJob, now_iso
from capeval.runner.workdir import WorkdirCache

if TYPE_CHECKING:
    from capeval.results.jsonl import JsonlWriter
from capeval.runner.guards import cells, refuse_used_stream, taken_message
from capeval.runner.options import RunError, RunOptions, RunOutcome, RunPlan, plan_path
from capeval.runner.plan import plan_run, write_plan
from capeval.runner.resume import refuse_other_runs, standing_rows


@contextmanager
def _stop_on_signals(stop: threading.Event, got: list[str], enabled: bool) -> Iterator[None]:
    """SIGINT/SIGTERM: stop every process group and HTTP server, keep finished rows."""
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        got.append(signal.Signals(signum).name)
        stop.set()
        process.shutdown(f"run interrupted by {signal.Signals(signum).name}")
        HttpFixture.stop_all()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _adapters(plan: RunPlan) -> dict[str, Adapter]:
    from capeval.agents.registry import make_adapter

    adapters: dict[str, Adapter] = {}
    for name, config in plan.agents.items():
        try:
            adapters[name] = make_adapter(config)
        except ValueError as exc:
            raise RunError(f"agent {name}: {exc}") from None
    return adapters


def _versions(
    executor: Executor, plan: RunPlan, handle_signals: bool
) -> dict[str, str | None] | str:
    """Each agent's version, or the name of the signal that stopped the asking.

    `--version` of a wrapper that never answers runs for its whole timeout: a
    SIGTERM then must stop it (and what it started) as it stops a repeat.
    """
    stop = threading.Event()
    got: list[str] = []
    with _stop_on_signals(stop, got, handle_signals):
        versions = executor.versions(plan, stop)
    return got[0] if got else versions


@contextmanager
def _started(executor: Executor, plan: RunPlan) -> Iterator[None]:
    executor.start(plan)
    try:
        yield
    finally:
        executor.close()


def make_executor(options: RunOptions) -> Executor:
    """The executor `options.executor` names; Ray's module is imported only for Ray."""
    if options.executor == "local":
        if options.ray_address is not None:
            raise RunError("--ray-address is for --executor ray; pass both, or neither")
        return LocalExecutor()
    if options.executor == "ray":
        from capeval.runner.rayexec import RayExecutor

        return RayExecutor(options.ray_address)
    raise RunError(f"--executor {options.executor}: expected one of {', '.join(EXECUTORS)}")


def execute(options: RunOptions, plan: RunPlan | None = None) -> RunOutcome:
    """Run every missing repeat of the plan; rows are durable as each repeat ends."""
    plan = plan or plan_run(options)
    rows: list[Row] = list(plan.done)
    todo = plan.todo
    if options.dry_run:
        return RunOutcome(plan, rows, plan.jsonl_path, 0)
    plan.adapters = _adapters(plan)
    executor = make_executor(options)

    from capeval.results.jsonl import JsonlWriter, StreamBusy

    # The stream's lock is taken before the plan is written, and the "holds
    # rows" check is made again under it: two runs started on one --jsonl at
    # the same moment both passed the first check.
    try:
        writer = JsonlWriter(plan.jsonl_path)
    except StreamBusy as exc:
        raise RunError(str(exc)) from None
    # Connected under the stream's lock, before the plan is stored: a cluster
    # that cannot be reached leaves no plan and no claim behind.
    with writer, _started(executor, plan):
        if options.resume is None:
            refuse_used_stream(plan.jsonl_path)
        else:
            # The stream was read when planning, before this lock: the run that
            # held it may have finished repeats since (a --resume started while
            # it was still ending). Running them again would duplicate rows.
            from capeval.results.jsonl import read_jsonl

            wanted = {j.triple for j in plan.jobs}
            grown = read_jsonl(plan.jsonl_path)[0]
            # Rows a new run wrote meanwhile (its --jsonl this stream) are not this run's.
            refuse_other_runs(grown, plan.run_id, plan.jsonl_path)
            plan.done, plan.retrying = standing_rows(
                grown, wanted, retry_errors=options.retry_errors
            )
            rows[:] = plan.done
            finished = {triple(r) for r in plan.done}
            todo = [j for j in todo if j.triple not in finished]
        claims = _claim_artifacts(options, plan, todo)
        try:
            write_plan(plan)
        except OSError as exc:
            release_claims(claims)
            raise RunError(
                f"{plan_path(plan.jsonl_path)}: cannot write the run's plan: "
                f"{exc.strerror or exc}; free space or pass --jsonl with a writable path"
            ) from None
        process.reset_shutdown()
        # Every temp dir of the run lives in one, so that a reaper told of that
        # one dir removes them all if this process is killed (capeval.proc.reaper).
        with reaper.running(), ExitStack() as stack:
            # Asked inside the reaper's watch and after the plan is stored: a
            # run stopped or killed here leaves no probe running and resumes.
            versions = _versions(executor, plan, options.handle_signals)
            if isinstance(versions, str):
                process.reset_shutdown()
                return RunOutcome(
                    plan, rows, plan.jsonl_path, 130 if versions == "SIGINT" else 143, versions
                )
            todo = [replace(j, agent_version=versions.get(j.agent.name)) for j in todo]
            try:
                run_tmp = stack.enter_context(reaper.temp_dir("capeval-run-", options.tmp_dir))
                workdirs = stack.enter_context(WorkdirCache(run_tmp))
            except OSError as exc:  # a full or read-only $TMPDIR: said before any agent
                where = options.tmp_dir or tempfile.gettempdir()
                raise RunError(
                    f"cannot make the run's temp folder in {where}: {exc.strerror or exc}; "
                    "free space there, or point TMPDIR at a writable folder; nothing was run"
                ) from None
            plan.settings = replace(plan.settings, workdirs=workdirs, tmp_parent=run_tmp)
            return _execute(executor, options, plan, todo, rows, writer)


def _claim_artifacts(options: RunOptions, plan: RunPlan, todo: list[RepeatJob]) -> list[Path]:
    """Claim the artifacts folders of the repeats to run, under the stream's lock.

    `plan_run` checked them, but without a lock: a run started at the same
    moment on the same --artifacts passed that check too.
    """
    root = plan.settings.artifacts_dir
    if root is None or not todo:
        return []
    try:
        return claim_cells(root, cells(todo), plan.run_id, plan.jsonl_path, stream_locked=True)
    except ArtifactsTaken as exc:
        raise RunError(taken_message(exc.taken, options, root, plan.jsonl_path)) from None
    except OSError as exc:
        raise RunError(
            f"--artifacts {root}: cannot keep each repeat's evidence there: "
            f"{exc.strerror or exc}; pass --artifacts with a writable folder, or --no-artifacts"
        ) from None


def _execute(
    executor: Executor,
    options: RunOptions,
    plan: RunPlan,
    todo: list[RepeatJob],
    rows: list[Row],
    writer: JsonlWriter,
) -> RunOutcome:
    stop = threading.Event()
    got: list[str] = []
    lock = threading.Lock()
    total = len(plan.jobs)
    written = {triple(r) for r in rows}
    shard = None if plan.shard is None else str(plan.shard)
    plan.on_retry = options.on_retry

    def deliver(row: Row) -> None:
        with lock:  # the single writer: durable row, then progress
            key = triple(row)
            if key in written:  # an executor handing a repeat back twice: one row
                return
            row["provenance"] = {**(row.get("provenance") or {}), "shard": shard}
            writer.write(row)
            written.add(key)
            rows.append(row)
            if options.on_row is not None:
                options.on_row(row, len(rows), total)

    stream_failed = False
    lost: list[str] = []
    with _stop_on_signals(stop, got, options.handle_signals):
        try:
            lost = executor.run(plan, todo, deliver, stop)
        except ResultFileError as exc:  # the stream refused a row (a full disk, a forger)
            stop.set()
            stream_failed = True
            process.shutdown("row stream not writable")
            HttpFixture.stop_all()
            from capeval.results.jsonl import StreamChanged

            resume = f"capeval run --resume {plan.jsonl_path}" + (
                f" --out {options.out}" if options.out is not None else ""
            )
            if isinstance(exc, StreamChanged):
                # Whatever wrote it ran as this user: an agent outside a sandbox.
                message = (
                    f"{exc}; the run was stopped after {len(rows)} repeats: cut the file back "
                    f"to capeval's rows (truncate -s {exc.offset} {plan.jsonl_path}), then "
                    f"finish the run with: {resume}; and sandbox the agents of later runs "
                    '(isolation = "bwrap" or "docker", docs/isolation.md)'
                )
            else:
                message = (
                    f"{exc}; {len(rows)} finished repeats are kept: free space, then finish the "
                    f"run with: {resume}"
                )
            raise RunError(message) from None
        except BaseException:
            stop.set()
            process.shutdown("run aborted")
            HttpFixture.stop_all()
            raise
        finally:
            if stop.is_set():
                process.shutdown("run interrupted")
                HttpFixture.stop_all()
            if stream_failed:  # the run is over, every repeat stopped: children may start again
                process.reset_shutdown()
    process.reset_shutdown()

    # An `error` row run again and not replaced (the run stopped first) still stands.
    replaced = {triple(r) for r in rows}
    rows += [r for key, r in plan.retrying.items() if key not in replaced]
    if got:
        return RunOutcome(plan, rows, plan.jsonl_path, 130 if got[0] == "SIGINT" else 143, got[0])
    if options.out is not None:
        from capeval.results.v3 import write_v3

        try:
            write_v3(
                options.out,
                _ordered(rows, plan),
                started_at=plan.started_at,
                finished_at=now_iso(),
                provider=plan.variants[0].provider if len(plan.variants) == 1 else None,
                model=plan.variants[0].model if len(plan.variants) == 1 else None,
                repeats=plan.repeats,
                variants=[v.to_json() for v in plan.variants],
            )
        except OSError as exc:  # checked before the run, but a disk can fill up since
            raise RunError(
                f"--out {options.out}: cannot write the results file: {exc.strerror or exc}; "
                f"every row is in {plan.jsonl_path}: write it again with: capeval run "
                f"--resume {plan.jsonl_path} --out PATH"
            ) from None
    exit_code = 0 if all(r.get("passed") is True for r in rows) and not lost else 1
    return RunOutcome(plan, _ordered(rows, plan), plan.jsonl_path, exit_code, lost=lost)


def _ordered(rows: list[Row], plan: RunPlan) -> list[Row]:
    """Rows in plan order (variant, case, repeat), whatever order they finished in."""
    index = {j.triple: i for i, j in enumerate(plan.jobs)}
    return sorted(rows, key=lambda r: index.get(triple(r), len(index)))
