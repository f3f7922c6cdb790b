"""`capeval run --executor ray`: each repeat a Ray task on a cluster's nodes.

Ray schedules; capeval does not. The driver (the `capeval run` process)
keeps everything that makes the run one run: the stream's lock, the plan
file and the single writer (`capeval.runner.run`), so rows reach the stream
exactly as in a local run, each fsynced before the next, and `--resume`
works as always. What travels:

- To the nodes, once per case (`ray.put`): the case folder and its fixture,
  as one tar (`CaseBundle`). No shared filesystem is assumed: a task unpacks
  them into a temp folder of its own, which stands in for the workspace.
- With each task: the repeat (`RepeatJob`: case, variant, agent, isolation)
  and the run's settings, made portable (no paths of the driver's machine).
- Back to the driver: the row, the repeat's evidence files (capped and
  redacted on the worker, as a local run keeps them) and where it ran.

Each task asks the cluster for the agent's `num_cpus` (default 1) and its
`ray_resources` (`{claude_slots = 1}`): a cluster whose nodes offer
`claude_slots` caps how many Claude Code repeats run at once. A task whose
worker or node dies is run again by Ray elsewhere (`max_retries`); the
driver writes a repeat's row once, when its task's result arrives, so a
retried repeat is never written twice. A task that fails more often than
that has no row: the run says so, exits 1, and `--resume` runs it.

On the worker a repeat runs as it runs locally (`run_repeat`): in its own
temp folder, its agent and grader in process groups of their own, in the
agent's sandbox (`bwrap` or `docker`, checked on a worker before the run);
a watchman process per worker process (`capeval.proc.reaper`) kills what a
repeat started if Ray kills the worker (a cancelled run, a node going away).
The driver stopped by Ctrl-C or SIGTERM cancels its tasks; a driver killed
outright leaves its tasks to Ray, which ends a dead driver's tasks.

Ray is imported only here, and only when `--executor ray` is chosen.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import signal
import socket
import tarfile
import tempfile
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from capeval import __version__
from capeval.core.agentconfig import AgentConfig
from capeval.core.case import Case
from capeval.core.row import Row
from capeval.proc import process, reaper
from capeval.runner.artifacts import (
    receive_repeat_artifacts,
    relative_to_rows,
    repeat_dir,
    repeat_files,
)
from capeval.runner.executor import Deliver, provenance
from capeval.runner.options import RunError, RunPlan
from capeval.runner.repeat import RepeatCancelled, RepeatJob, RepeatSettings
from capeval.runner.retry import RetryPolicy, run_with_retries
from capeval.runner.workdir import WorkdirCache

# Ray runs a task again this often when its worker or node dies (its default too).
MAX_RETRIES = 3
_POLL_S = 0.2
INSTALL_HINT = "install it with: pip install 'capeval[ray]'"


@dataclass(frozen=True)
class CaseBundle:
    """A case folder and its fixture as one tar, paths relative to the workspace root."""

    case_dir: str  # the case folder, e.g. evals/capability/cases/<id>
    case_file: str  # its case.json
    data: bytes
    digest: str = ""  # of `data`: a worker unpacks each bundle once


def bundle_case(root: Path, case: Case) -> CaseBundle:
    """The tar a task unpacks as its workspace: the case folder and the fixture.

    Symlinks are stored as links, as the local workdir copy treats them (one
    pointing outside the fixture fails the repeat there, as it does locally).
    """
    case_dir, case_file, fixture = (
        _inside(root, case.dir, f"case {case.id}'s folder"),
        _inside(root, case.file, f"case {case.id}'s case.json"),
        _inside(root, case.fixture_path(root), f"case {case.id}'s fixture"),
    )
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for rel in dict.fromkeys((case_dir, fixture)):
            tar.add(root / rel, arcname=rel, recursive=True)
    data = buffer.getvalue()
    return CaseBundle(case_dir, case_file, data, hashlib.sha256(data).hexdigest())


def _inside(root: Path, path: Path, what: str) -> str:
    rel = Path(os.path.relpath(Path(path).resolve(), Path(root).resolve()))
    if rel.parts and rel.parts[0] == "..":
        raise RunError(f"{what} is outside the workspace ({path}): it cannot travel to Ray")
    return rel.as_posix()


def unpack(bundle: CaseBundle, workspace: Path) -> None:
    """Unpack a bundle into `workspace` (paths outside it, devices: refused)."""
    with tarfile.open(fileobj=io.BytesIO(bundle.data), mode="r") as tar:
        if hasattr(tarfile, "tar_filter"):  # Python 3.11.4 and later
            tar.extractall(workspace, filter="tar")
        else:  # pragma: no cover - older 3.11 releases
            tar.extractall(workspace)


def portable_settings(settings: RepeatSettings) -> RepeatSettings:
    """The run's settings without what only the driver's machine has (its paths, its
    workdir cache, its artifact budget); a task fills them in on its worker."""
    return replace(
        settings,
        workdirs=None,
        tmp_parent=None,
        artifacts_dir=None if settings.artifacts_dir is None else Path("artifacts"),
        rows_dir=None,
        artifact_budget=None,
        hidden=(),
        protected=(),
    )


# -- on the worker ----------------------------------------------------------------


@dataclass
class _Worker:
    """What a Ray worker process keeps across its tasks (one run's: Ray starts
    workers per driver): the unpacked bundles, and committed fixture templates."""

    folder: Path
    workdirs: WorkdirCache
    workspaces: dict[str, Path]


_WORKER = contextlib.ExitStack()
_WORKER_LOCK = threading.Lock()
_WORKER_STATE: list[_Worker] = []


def _worker() -> _Worker:
    """This worker process's state, made on its first task.

    One reaper per worker process, for its whole life: when the worker ends
    (Ray stops it, kills it for a cancelled task, or its node goes away), what
    a repeat started is killed and the folders are removed. Detached: a dying
    Ray worker kills its own children (the watchman among them), not their
    children (an agent's).
    """
    with _WORKER_LOCK:
        if not _WORKER_STATE:
            _WORKER.enter_context(reaper.running(detached=True))
            folder = Path(tempfile.mkdtemp(prefix="capeval-ray-worker-"))
            reaper.track_dir(folder)
            _WORKER_STATE.append(_Worker(folder, WorkdirCache(folder), {}))
        return _WORKER_STATE[0]


def _workspace(state: _Worker, bundle: CaseBundle) -> Path:
    """The bundle unpacked as a workspace, once per worker process."""
    with _WORKER_LOCK:
        found = state.workspaces.get(bundle.digest)
        if found is None:
            found = state.folder / f"ws-{len(state.workspaces)}"
            try:
                found.mkdir()
                unpack(bundle, found)
            except BaseException:
                reaper.remove_tree(found)
                raise
            state.workspaces[bundle.digest] = found
        return found


def _where() -> dict[str, Any]:
    """This worker's host and Ray node (None outside a Ray worker, as in unit tests)."""
    node = None
    with contextlib.suppress(ImportError):
        import ray

        if ray.is_initialized():
            node = ray.get_runtime_context().get_node_id()
    return provenance("ray", socket.gethostname(), node)


def run_on_worker(
    job: RepeatJob, bundle: CaseBundle, settings: RepeatSettings
) -> dict[str, Any] | None:
    """One repeat on a Ray worker: its row, its evidence files and where it ran.

    None when the repeat was cancelled (it then has no row, as locally).
    """
    state = _worker()
    process.reset_shutdown()
    from capeval.agents.registry import make_adapter
    from capeval.workspace import cases_dir

    workspace = _workspace(state, bundle)
    with reaper.temp_dir("capeval-ray-") as base:
        case = replace(job.case, dir=workspace / bundle.case_dir, file=workspace / bundle.case_file)
        keep = settings.artifacts_dir is not None
        here = replace(
            settings,
            root=workspace,
            workdirs=state.workdirs,
            tmp_parent=base,
            artifacts_dir=base / "artifacts" if keep else None,
            rows_dir=base,
            # The unpacked cases and the fixture templates, hidden as a local run
            # hides its workspace and its run's temp folder.
            hidden=(state.folder,),
            protected=(state.folder, cases_dir(workspace)),
        )
        try:
            row = run_with_retries(
                replace(job, case=case),
                make_adapter(job.agent),
                here,
                RetryPolicy(here.retries, here.retry_wait_s),
            )
        except RepeatCancelled:
            return None
        files: dict[str, bytes] = {}
        if keep and row.get("artifacts"):
            folder = repeat_dir(base / "artifacts", job.variant.id, job.case.id, job.repeat)
            with contextlib.suppress(OSError):
                files = repeat_files(folder)
        return {"row": row, "artifacts": files, "provenance": _where()}


def preflight_on_worker(
    agent: AgentConfig, jobs: list[RepeatJob], skip_permissions: bool
) -> dict[str, Any]:
    """What a local run checks on its own host, checked where the agent's repeats run:
    the agent's binary (unless all its repeats run in containers), its sandboxes,
    and its version; and this worker's capeval."""
    from capeval.agents.registry import make_adapter
    from capeval.runner.guards import missing_binaries, refuse_unrunnable_isolation

    problem = None
    if any(j.isolation.backend != "docker" for j in jobs):
        problem = missing_binaries({agent.name: agent})
    if problem is None:
        try:
            refuse_unrunnable_isolation(jobs, skip_permissions=skip_permissions, dry_run=False)
        except RunError as exc:
            problem = str(exc)
    version = None
    if problem is None:
        try:
            version = make_adapter(agent).version()
        except Exception:  # a version probe must not stop the run
            version = None
    return {"problem": problem, "version": version, "capeval": __version__, **_where()}


# -- on the driver ----------------------------------------------------------------


def task_options(agent: AgentConfig) -> dict[str, Any]:
    """What one repeat of `agent` asks of the cluster."""
    return {
        "num_cpus": 1 if agent.num_cpus is None else agent.num_cpus,
        "resources": {k: float(v) for k, v in agent.ray_resources.items()},
        "max_retries": MAX_RETRIES,
        "retry_exceptions": False,
    }


def _fits(wanted: Mapping[str, float], node: Mapping[str, Any]) -> bool:
    offered = node.get("Resources") or {}
    return all(float(offered.get(name, 0)) >= amount for name, amount in wanted.items())


class RayExecutor:
    """Each repeat a Ray task; rows come back to this process, which alone writes them."""

    name = "ray"

    def __init__(self, address: str | None) -> None:
        self.address = address
        self._ray: Any = None
        self._connected = False

    def start(self, plan: RunPlan) -> None:
        try:
            import ray
        except ImportError:
            raise RunError(
                f"--executor ray needs Ray, which is not installed; {INSTALL_HINT}"
            ) from None
        self._ray = ray
        if ray.is_initialized():
            return  # a notebook or test connected already: use that cluster, leave it up
        # ray.init sets a SIGTERM handler that exits at once; the run's own
        # handlers (a stopped run keeps its rows) must stay.
        handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
        kwargs: dict[str, Any] = {
            "address": self.address,
            "logging_level": logging.WARNING,
            "log_to_driver": False,
            "namespace": "capeval",
        }
        if self.address is None and not os.environ.get("RAY_ADDRESS"):
            kwargs["include_dashboard"] = False  # a local Ray of this process only
        try:
            ray.init(**kwargs)
        except Exception as exc:
            where = self.address or os.environ.get("RAY_ADDRESS") or "a local Ray"
            raise RunError(
                f"--executor ray: cannot start or reach {where}: {type(exc).__name__}: {exc}; "
                "check --ray-address (host:port of the head node, or 'auto'); nothing was run"
            ) from None
        finally:
            if threading.current_thread() is threading.main_thread():
                for sig, handler in handlers.items():
                    if handler is not None:
                        signal.signal(sig, handler)
        self._connected = True

    def close(self) -> None:
        if self._connected and self._ray is not None:
            self._connected = False
            with contextlib.suppress(Exception):
                self._ray.shutdown()

    def _refuse_unschedulable(self, agents: Mapping[str, AgentConfig]) -> None:
        """An agent whose repeats no live node can take would wait forever: said now."""
        nodes = [n for n in self._ray.nodes() if n.get("Alive")]
        for name, agent in sorted(agents.items()):
            options = task_options(agent)
            wanted = {"CPU": float(options["num_cpus"]), **options["resources"]}
            wanted = {k: v for k, v in wanted.items() if v > 0}
            if not any(_fits(wanted, n) for n in nodes):
                offered = sorted({k for n in nodes for k in (n.get("Resources") or {})})
                asked = ", ".join(f"{k}={v:g}" for k, v in wanted.items())
                raise RunError(
                    f"agent {name!r} asks each Ray task for {asked}, which no live node of "
                    f"the cluster offers (its resources: {', '.join(offered) or 'none'}); "
                    f"start nodes with those resources (ray start --resources '{{...}}'), or "
                    f"change ray_resources / num_cpus in [agents.{name}]; nothing was run"
                )

    def versions(self, plan: RunPlan, stop: threading.Event) -> dict[str, str | None]:
        ray = self._ray
        self._refuse_unschedulable(plan.agents)
        check = ray.remote(preflight_on_worker)
        per_agent: dict[str, list[RepeatJob]] = {}
        seen: set[tuple[str, object]] = set()
        for job in plan.todo:
            if (job.agent.name, job.isolation) not in seen:
                seen.add((job.agent.name, job.isolation))
                per_agent.setdefault(job.agent.name, []).append(job)
        refs = {
            check.options(**task_options(plan.agents[name])).remote(
                plan.agents[name], jobs, plan.settings.skip_permissions
            ): name
            for name, jobs in per_agent.items()
        }
        versions: dict[str, str | None] = {}
        pending = list(refs)
        try:
            while pending and not stop.is_set():
                ready, pending = ray.wait(pending, num_returns=len(pending), timeout=_POLL_S)
                for ref in ready:
                    found = ray.get(ref)
                    name = refs[ref]
                    if found["capeval"] != __version__:
                        raise RunError(
                            f"the Ray node {found['host']} runs capeval {found['capeval']}, "
                            f"this driver {__version__}: install the same capeval on every "
                            "node; nothing was run"
                        )
                    if found["problem"]:
                        raise RunError(
                            f"on the Ray node {found['host']} (node {str(found['node'])[:12]}): "
                            f"{found['problem']}"
                            + ("" if "nothing was run" in found["problem"] else "; nothing was run")
                        )
                    versions[name] = found["version"]
        finally:
            for ref in pending:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
        return versions

    def run(
        self, plan: RunPlan, jobs: list[RepeatJob], deliver: Deliver, stop: threading.Event
    ) -> list[str]:
        ray = self._ray
        from ray.exceptions import RayError, RayTaskError

        repeat = ray.remote(run_on_worker)
        bundles = {
            c.id: ray.put(bundle_case(plan.root, c))
            for c in {j.case.id: j.case for j in jobs}.values()
        }
        settings = ray.put(portable_settings(plan.settings))
        queue = deque(jobs)
        pending: dict[Any, RepeatJob] = {}
        lost: list[str] = []
        try:
            while (queue or pending) and not stop.is_set():
                while queue and len(pending) < plan.concurrency:
                    job = queue.popleft()
                    ref = repeat.options(
                        **task_options(job.agent), name=f"capeval {_shown(job)}"
                    ).remote(job, bundles[job.case.id], settings)
                    pending[ref] = job
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=_POLL_S)
                if ready:  # and whatever else has finished meanwhile
                    rest = [r for r in pending if r not in ready]
                    ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0] if rest else []
                for ref in ready:
                    job = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except RayTaskError as exc:  # capeval's own code raised: a bug, shown
                        raise exc.as_instanceof_cause() from None
                    except RayError as exc:  # the worker or node died more often than retried
                        lost.append(f"{_shown(job)}: {type(exc).__name__}: {_first_line(exc)}")
                        continue
                    if result is not None:
                        deliver(self._received(plan, job, result))
        finally:
            for ref in pending:  # a stopped or failed run leaves no task running
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
        return lost

    def _received(self, plan: RunPlan, job: RepeatJob, result: Mapping[str, Any]) -> Row:
        """A task's row as the driver writes it: its evidence placed beside the stream."""
        row: Row = dict(result["row"])
        root = plan.settings.artifacts_dir
        if root is not None and row.get("artifacts"):
            dest = repeat_dir(root, job.variant.id, job.case.id, job.repeat)
            try:
                receive_repeat_artifacts(dest, result["artifacts"], plan.settings.artifact_budget)
                row["artifacts"] = relative_to_rows(dest, plan.settings.rows_dir or root.parent)
            except OSError as exc:
                row["artifacts"] = None
                note = f"artifacts not saved to {dest}: {type(exc).__name__}: {exc.strerror or exc}"
                row["error"] = "; ".join(e for e in (row.get("error"), note) if e)
        row["provenance"] = dict(result["provenance"])
        return row


def _shown(job: RepeatJob) -> str:
    return f"{job.variant.id} {job.case.id} #{job.repeat}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
