"""`capeval run --executor ray` (capeval.runner.rayexec), on a real local Ray cluster.

The cluster tests start `ray.cluster_utils.Cluster` on 127.0.0.1: a head that
runs no task and worker nodes with the CPUs and custom resources each test
names, with a private `RAY_TMPDIR` (Ray writes nowhere else) and
`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` (without it Ray swaps 127.0.0.1 for the
host's address, which may not be reachable). The driver is `capeval run` in a
process of its own, as a user starts it. Each test stops its own cluster
(every Ray process it started) and removes its temp folder. Where Ray is not
installed or cannot start, the test skips and says why.

The first tests need no cluster: the task function runs in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from capeval.core.row import triple
from capeval.runner.options import RunError, RunOptions
from capeval.runner.plan import plan_run
from capeval.runner.rayexec import (
    bundle_case,
    portable_settings,
    run_on_worker,
    task_options,
)
from tests.runhelpers import eventually, read_rows, shell, write_case, write_done

REPO = Path(__file__).resolve().parents[2]
STORE = 80 * 1024 * 1024  # each node's object store: small, the bundles are KiBs


def _options(root: Path, **changes: Any) -> RunOptions:
    return RunOptions(root=root, handle_signals=False, **changes)


# -- the task, without a cluster ----------------------------------------------------


@pytest.fixture
def worker_state() -> Iterator[None]:
    """A task run in this process keeps a worker's state (its watchman, unpacked
    bundles, fixture templates): let go of it after the test, as a worker's end does."""
    from capeval.proc import reaper
    from capeval.runner import rayexec

    yield
    for state in rayexec._WORKER_STATE:
        state.workdirs.close()
        reaper.remove_tree(state.folder)
        reaper.forget_dir(state.folder)
    rayexec._WORKER_STATE.clear()
    rayexec._WORKER.close()


@pytest.mark.usefixtures("worker_state")
def test_a_task_needs_nothing_of_the_drivers_filesystem(tmp_path: Path) -> None:
    """The case folder and fixture travel in the bundle: with the driver's workspace
    gone, the repeat still runs, passes, and sends its evidence back."""
    root = tmp_path / "ws"
    write_case(root, "alpha")
    plan = plan_run(_options(root, jsonl=tmp_path / "rows.jsonl", executor="ray"))
    job = plan.jobs[0]
    bundle = bundle_case(plan.root, job.case)
    settings = portable_settings(plan.settings)
    moved = tmp_path / "gone"
    root.rename(moved)  # nothing of the workspace is where the plan saw it
    for _ in range(2):  # the second repeat takes the unpacked case and template
        result = run_on_worker(job, bundle, settings)
        assert result is not None
        row = result["row"]
        assert row["passed"] is True, row["error"]
        assert {"verify.log", "summary.json"} <= set(result["artifacts"])
        assert result["provenance"]["executor"] == "ray"
    assert not root.exists()
    from capeval.runner import rayexec

    (state,) = rayexec._WORKER_STATE
    assert len(state.workspaces) == 1


def test_portable_settings_carry_no_path_of_the_driver(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    plan = plan_run(_options(tmp_path, jsonl=tmp_path / "rows.jsonl"))
    settings = portable_settings(plan.settings)
    assert settings.artifacts_dir == Path("artifacts")
    assert settings.hidden == () and settings.protected == ()
    assert settings.rows_dir is None and settings.tmp_parent is None
    assert settings.workdirs is None and settings.artifact_budget is None
    assert str(tmp_path) not in repr(replace(settings, root=Path("/")))


def test_each_task_asks_for_the_agents_resources(tmp_path: Path) -> None:
    (tmp_path / "capeval.toml").write_text(
        '[agents.capped]\ntype = "scripted"\ntrajectory = "oracle"\n'
        "ray_resources = {claude_slots = 1}\nnum_cpus = 0.5\n"
    )
    write_case(tmp_path, "alpha")
    plan = plan_run(_options(tmp_path, agent="capped", dry_run=True))
    assert task_options(plan.agents["capped"]) == {
        "num_cpus": 0.5,
        "resources": {"claude_slots": 1.0},
        "max_retries": 3,
        "retry_exceptions": False,
    }
    assert (
        task_options(replace(plan.agents["capped"], ray_resources={}, num_cpus=None))["num_cpus"]
        == 1
    )


def test_ray_missing_is_said_with_the_install_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from capeval.runner.run import execute

    write_case(tmp_path, "alpha")
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(RunError, match=r"needs Ray, which is not installed; .*capeval\[ray\]"):
        execute(_options(tmp_path, executor="ray", jsonl=tmp_path / "rows.jsonl"))
    assert not (tmp_path / "rows.jsonl.plan.json").exists()


def test_a_local_run_never_imports_ray(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    code = (
        "import sys\n"
        "from capeval.cli import main\n"
        f"try:\n    main(['run', '--root', {str(tmp_path)!r}, '-q'])\n"
        "except SystemExit as e:\n    assert e.code == 0, e.code\n"
        "print('ray' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


# -- on a real cluster --------------------------------------------------------------


class RayCluster:
    """A local multi-node Ray cluster this test started, and what drives it."""

    def __init__(self, cluster: Any, temp: Path) -> None:
        self.cluster = cluster
        self.temp = temp
        self.address: str = cluster.address

    def add(self, num_cpus: float, resources: dict[str, float] | None = None) -> Any:
        return self.cluster.add_node(
            num_cpus=num_cpus, resources=resources or {}, object_store_memory=STORE
        )

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        return {**env, "RAY_TMPDIR": str(self.temp), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}

    def capeval(self, root: Path, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "capeval", "run", "--root", str(root), *args],
            cwd=root,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        proc = self.capeval(root, "--executor", "ray", "--ray-address", self.address, *args)
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@contextlib.contextmanager
def ray_cluster(*nodes: tuple[float, dict[str, float]]) -> Iterator[RayCluster]:
    """A head (no tasks) and one worker node per (num_cpus, resources); stopped at the end."""
    try:
        from ray.cluster_utils import Cluster
    except ImportError:
        pytest.skip("Ray is not installed: pip install -e '.[dev,ray]' (.ci/run does)")
    # Short: Ray's session folder holds Unix sockets (at most 107 bytes a path).
    temp = Path(tempfile.mkdtemp(prefix="capeval-ray-", dir="/tmp"))
    saved = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")}
    os.environ["RAY_TMPDIR"] = str(temp)
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    cluster = None
    try:
        try:
            cluster = Cluster(
                initialize_head=True,
                head_node_args={
                    "num_cpus": 0,
                    "include_dashboard": False,
                    "object_store_memory": STORE,
                },
            )
            started = RayCluster(cluster, temp)
            for cpus, resources in nodes:
                started.add(cpus, resources)
            cluster.wait_for_nodes()
        except Exception as exc:
            pytest.skip(f"a local Ray cluster cannot start here: {type(exc).__name__}: {exc}")
        yield started
    finally:
        if cluster is not None:
            cluster.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(temp, ignore_errors=True)


def _slow_case(root: Path, seconds: float, log: Path | None = None) -> None:
    """Case `slow`: its oracle sleeps `seconds` (noting each start in `log`), then passes."""
    note = f"echo started >> {log}; " if log is not None else ""
    write_case(
        root, "slow", trajectories={"oracle": [shell(f"{note}sleep {seconds}"), write_done()]}
    )


def _overlap(rows: list[dict[str, Any]]) -> int:
    """The most repeats that ran at one time, from their start and end stamps."""
    edges = sorted(
        [(r["startedAt"], 1) for r in rows] + [(r["finishedAt"], -1) for r in rows],
        key=lambda e: (e[0], e[1]),
    )
    running = most = 0
    for _stamp, step in edges:
        running += step
        most = max(most, running)
    return most


def _comparable(row: dict[str, Any]) -> tuple[Any, ...]:
    """What a repeat measured, without its timings."""
    behaviors = {k: v for k, v in row["behaviors"].items() if k != "maxTurnDurationMs"}
    return (
        triple(row),
        row["passed"],
        row["status"],
        row["turnsUsed"],
        row["toolCallCount"],
        json.dumps(behaviors, sort_keys=True),
        row["error"],
        row["agentVersion"],
        row["isolation"],
    )


@pytest.mark.slow
def test_a_matrix_runs_across_the_nodes_with_the_rows_of_a_local_run(tmp_path: Path) -> None:
    for case in ("alpha", "beta", "gamma"):
        write_case(tmp_path, case)
    _slow_case(tmp_path, 0.5)
    with ray_cluster((2, {}), (2, {})) as ray:
        done = ray.run(tmp_path, "--repeats", "2", "--concurrency", "4", "--jsonl", "ray.jsonl")
    assert done.returncode == 0, done.stderr
    assert "8/8 repeats passed; rows in ray.jsonl" in done.stdout
    assert "variant          case   passed  median turns  bait" in done.stdout
    assert "[8/8] PASS" in done.stderr  # progress, as a local run prints it
    rows = read_rows(tmp_path / "ray.jsonl")
    assert len({triple(r) for r in rows}) == len(rows) == 8
    assert {r["provenance"]["executor"] for r in rows} == {"ray"}
    assert len({r["provenance"]["node"] for r in rows}) == 2  # both worker nodes ran repeats
    for row in rows:  # the evidence came back to the driver's folder
        assert (tmp_path / row["artifacts"] / "verify.log").is_file()
    args = ["run", "--root", str(tmp_path), "-q", "--repeats", "2", "--jsonl", "local.jsonl"]
    local = subprocess.run(
        [sys.executable, "-m", "capeval", *args], cwd=tmp_path, capture_output=True, text=True
    )
    assert local.returncode == 0, local.stderr
    local_rows = read_rows(tmp_path / "local.jsonl")
    assert sorted(map(_comparable, rows)) == sorted(map(_comparable, local_rows))
    assert [sorted(r) for r in sorted(rows, key=triple)] == [
        sorted(r) for r in sorted(local_rows, key=triple)
    ]


@pytest.mark.slow
def test_custom_resources_cap_how_many_repeats_run_at_once(tmp_path: Path) -> None:
    (tmp_path / "capeval.toml").write_text(
        '[agents.capped]\ntype = "scripted"\ntrajectory = "oracle"\n'
        "ray_resources = {claude_slots = 1}\n"
    )
    _slow_case(tmp_path, 1)
    write_case(tmp_path, "other")
    with ray_cluster((4, {"claude_slots": 1}), (4, {"claude_slots": 1})) as ray:
        done = ray.run(
            tmp_path, "--agent", "capped", "--case", "slow", "--repeats", "6",
            "--concurrency", "6", "--jsonl", "capped.jsonl",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        # A resource no node offers would wait forever: refused before any repeat.
        (tmp_path / "capeval.toml").write_text(
            '[agents.capped]\ntype = "scripted"\ntrajectory = "oracle"\n'
            "ray_resources = {gpu_slots = 1}\n"
        )
        refused = ray.run(tmp_path, "--agent", "capped", "--case", "other", "--jsonl", "x.jsonl")
    rows = read_rows(tmp_path / "capped.jsonl")
    assert len(rows) == 6 and all(r["passed"] for r in rows)
    assert _overlap(rows) == 2  # 8 CPUs, but 2 claude_slots in the whole cluster
    assert refused.returncode == 2
    assert "asks each Ray task for CPU=1, gpu_slots=1, which no live node" in refused.stderr
    assert read_rows(tmp_path / "x.jsonl") == []


@pytest.mark.slow
def test_a_node_killed_mid_run_loses_no_triple_and_doubles_none(tmp_path: Path) -> None:
    """Two repeats are running on the only node when it dies: Ray runs them again on the
    node added next, and each triple still has exactly one row."""
    log = tmp_path / "starts.log"
    _slow_case(tmp_path, 5, log)  # long enough that none can end before the node is killed
    with ray_cluster((2, {})) as ray:
        doomed = next(n for n in ray.cluster.worker_nodes)
        proc = ray.capeval(
            tmp_path, "--executor", "ray", "--ray-address", ray.address, "--repeats", "4",
            "--concurrency", "4", "--jsonl", "rows.jsonl",
        )  # fmt: skip
        try:
            started = eventually(
                lambda: log.is_file() and len(log.read_text().splitlines()) >= 2, within=300
            )
            assert started, "no repeat started on the first node"
            # Killed while both repeats sleep; the next node comes after, so no repeat
            # of the first node can have ended meanwhile.
            ray.cluster.remove_node(doomed, allow_graceful=False)
            survivor = ray.add(2)
            out, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 0, err
    rows = read_rows(tmp_path / "rows.jsonl")
    assert len(rows) == 4 and len({triple(r) for r in rows}) == 4
    assert {r["provenance"]["node"] for r in rows} == {survivor.node_id}
    assert len(log.read_text().splitlines()) >= 6  # the two killed repeats ran again
    assert "4/4 repeats passed" in out


@pytest.mark.slow
def test_a_killed_driver_resumes_to_one_row_per_triple(tmp_path: Path) -> None:
    _slow_case(tmp_path, 1)
    stream = tmp_path / "rows.jsonl"
    with ray_cluster((2, {}), (2, {})) as ray:
        proc = ray.capeval(
            tmp_path, "--executor", "ray", "--ray-address", ray.address, "--repeats", "10",
            "--concurrency", "4", "--jsonl", str(stream),
        )  # fmt: skip
        try:
            reached = eventually(
                lambda: stream.is_file() and len(stream.read_text().splitlines()) >= 3,
                within=300,
            )
            assert reached, "the run wrote no rows"
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == -signal.SIGKILL
        kept = len(read_rows(stream))
        assert 3 <= kept < 10
        resumed = ray.run(tmp_path, "--resume", str(stream), "-q")
    assert resumed.returncode == 0, resumed.stderr
    rows = read_rows(stream)
    assert len(rows) == 10 and len({triple(r) for r in rows}) == 10
    assert f"10/10 repeats passed; rows in {stream.name}" in resumed.stdout


@pytest.mark.slow
def test_isolation_applies_on_the_workers(tmp_path: Path) -> None:
    from tests.sandboxes import require

    require("bwrap")
    write_case(tmp_path, "alpha")
    with ray_cluster((2, {})) as ray:
        done = ray.run(tmp_path, "--isolation", "bwrap", "--jsonl", "rows.jsonl", "-q")
    assert done.returncode == 0, done.stderr
    (row,) = read_rows(tmp_path / "rows.jsonl")
    assert row["isolation"] == "bwrap" and row["passed"] is True
