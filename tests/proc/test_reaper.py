"""The reaper: cleans up after a killed capeval, and only after a killed one.

Each test runs a small "capeval" in a child process, so that it can die
without running any cleanup (`os._exit`, as after SIGKILL) while the test
process watches what the reaper does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from capeval.proc import process, reaper
from tests.runhelpers import alive, eventually

HAS_PROC = Path("/proc/self/environ").exists()

# Starts two sleeping groups, tracks both and a dir, forgets the first group
# (as run_process does before reaping), then dies or exits cleanly.
_CAPEVAL = textwrap.dedent(
    """
    import os, subprocess, sys
    from pathlib import Path
    from capeval.proc import reaper

    out, how = Path(sys.argv[1]), sys.argv[2]
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    with reaper.running():
        forgotten = subprocess.Popen(["sleep", "60"], **quiet)
        tracked = subprocess.Popen(["sleep", "60"], **quiet)
        reaper.track_group(forgotten.pid)
        reaper.track_group(tracked.pid)
        reaper.forget_group(forgotten.pid)
        scratch = out / "scratch"
        (scratch / "sub").mkdir(parents=True)
        (scratch / "sub" / "file").write_text("x")
        reaper.track_dir(scratch)
        (out / "pids").write_text(f"{forgotten.pid} {tracked.pid}")
        if how == "die":
            os._exit(9)  # no finally, no atexit: what SIGKILL leaves
    """
)


def _run_capeval(tmp_path: Path, how: str) -> tuple[int, int]:
    script = tmp_path / "capeval_stub.py"
    script.write_text(_CAPEVAL)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path), how],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == (9 if how == "die" else 0), proc.stderr
    forgotten, tracked = (int(p) for p in (tmp_path / "pids").read_text().split())
    return forgotten, tracked


def _kill_if_alive(*pids: int) -> None:
    for pid in pids:
        if alive(pid):  # checked just now: the id is still that process's
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_death_kills_tracked_groups_only_and_removes_tracked_dirs(tmp_path: Path) -> None:
    forgotten, tracked = _run_capeval(tmp_path, "die")
    try:
        assert eventually(lambda: not alive(tracked))
        assert eventually(lambda: not (tmp_path / "scratch").exists())
        # A forgotten group is never signalled: by then its id may be a stranger's.
        assert alive(forgotten)
    finally:
        _kill_if_alive(forgotten, tracked)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_clean_exit_leaves_everything_to_capeval(tmp_path: Path) -> None:
    forgotten, tracked = _run_capeval(tmp_path, "exit")
    try:
        time.sleep(0.3)  # give a wrongly acting reaper the time to act
        assert alive(tracked) and alive(forgotten)
        assert (tmp_path / "scratch" / "sub" / "file").is_file()
    finally:
        _kill_if_alive(forgotten, tracked)


# A repeat's child starts a daemon (its own session), then capeval dies mid-repeat.
_ESCAPER = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from capeval.proc import process, reaper

    out = Path(sys.argv[1])
    daemon = (
        "import subprocess; p = subprocess.Popen(['sleep', '60'], start_new_session=True, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); open('pid', 'w').write(str(p.pid))"
    )
    with reaper.running(), process.process_scope("v::c#0"):
        process.run_process([sys.executable, "-c", daemon], cwd=out)
        os._exit(9)  # no finally: the scope's own sweep of escaped processes never runs
    """
)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_death_also_kills_what_left_its_group(tmp_path: Path) -> None:
    # Only groups were killed: a daemon an agent started with setsid (as Gemini
    # CLI and opencode run every shell call) outlived a SIGKILLed run.
    script = tmp_path / "capeval_stub.py"
    script.write_text(_ESCAPER)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 9, proc.stderr
    daemon = int((tmp_path / "pid").read_text())
    try:
        assert eventually(lambda: not alive(daemon))
    finally:
        if alive(daemon):
            os.kill(daemon, signal.SIGKILL)


# A "capeval" in a session of its own: a run temp dir and a tracked group, then
# a signal to its whole process group (a CI job cancelled, `kill -- -PGID`).
_GROUP_KILLED = textwrap.dedent(
    """
    import os, signal, subprocess, sys
    from pathlib import Path
    from capeval.proc import reaper

    out = Path(sys.argv[1])
    with reaper.running(), reaper.temp_dir("capeval-run-", out) as scratch:
        (scratch / "f").write_text("x")
        child = subprocess.Popen(["sleep", "60"], start_new_session=True)
        reaper.track_group(child.pid)
        (out / "pids").write_text(f"{child.pid} {reaper._ACTIVE._proc.pid}")
        os.killpg(0, signal.SIGTERM)  # capeval has no handler here: it dies at once
    """
)


@pytest.mark.skipif(not HAS_PROC, reason="reads /proc")
def test_a_signal_to_capevals_group_leaves_the_reaper_to_clean_up(tmp_path: Path) -> None:
    # The reaper runs in a session of its own; in capeval's group it died with
    # it and removed neither the run's temp dir nor the agent still running.
    script = tmp_path / "capeval_stub.py"
    script.write_text(_GROUP_KILLED)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert proc.returncode == -15, proc.stderr
    child, watchman = (int(p) for p in (tmp_path / "pids").read_text().split())
    try:
        assert eventually(lambda: not alive(child), 10)
        assert eventually(lambda: not list(tmp_path.glob("capeval-run-*")), 10)
    finally:
        for pid in (child, watchman):
            if alive(pid):
                os.kill(pid, 9)


def test_run_process_forgets_a_group_before_reaping_its_leader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once the leader is reaped its pid, the group id, can be reused: the
    # reaper must have been told to forget the group before that.
    calls: list[tuple[str, int, bool]] = []

    def unreaped(pid: int) -> bool:
        try:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return False
        return True

    monkeypatch.setattr(reaper, "track_group", lambda g: calls.append(("track", g, unreaped(g))))
    monkeypatch.setattr(reaper, "forget_group", lambda g: calls.append(("forget", g, unreaped(g))))
    process.run_process(["true"], cwd=tmp_path)
    process.run_process(["sleep", "5"], cwd=tmp_path, timeout_s=0.1, kill_grace_s=1)
    assert [(kind, known) for kind, _, known in calls] == [
        ("track", True),
        ("forget", True),
        ("track", True),
        ("forget", True),
    ]
    assert calls[0][1] == calls[1][1] and calls[2][1] == calls[3][1]


def test_temp_dir_is_removed_and_without_a_reaper_nothing_is_sent(tmp_path: Path) -> None:
    assert reaper._ACTIVE is None  # outside a run: track/forget are no-ops
    reaper.track_group(os.getpid())
    with reaper.temp_dir("capeval-run-", tmp_path) as path:
        (path / "x").write_text("x")
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_nested_runs_share_one_reaper_and_it_exits_with_the_last(tmp_path: Path) -> None:
    with reaper.running():
        first = reaper._ACTIVE
        assert first is not None
        with reaper.running():
            assert reaper._ACTIVE is first
        assert reaper._ACTIVE is first
    assert reaper._ACTIVE is None
    assert first._proc.poll() == 0  # told to quit, it exited without acting


# A "Ray worker": tracks a group and a dir with a detached reaper, then dies and
# takes each of its direct children down with it (Ray's kill_child_processes_on_worker_exit).
_RAY_WORKER = textwrap.dedent(
    """
    import os, signal, subprocess, sys
    from pathlib import Path
    from capeval.proc import reaper

    out = Path(sys.argv[1])
    with reaper.running(detached=True), reaper.temp_dir("capeval-ray-", out) as scratch:
        (scratch / "f").write_text("x")
        agent = subprocess.Popen(
            ["bash", "-c", "sleep 60 & echo $! > grandchild; wait"], cwd=out,
            start_new_session=True,
        )
        reaper.track_group(agent.pid)
        while not (out / "grandchild").is_file() or not (out / "grandchild").read_text():
            pass
        children = [
            int(p) for p in os.listdir("/proc") if p.isdigit()
            and open(f"/proc/{p}/stat").read().rsplit(") ", 1)[1].split()[1] == str(os.getpid())
        ]
        for child in children:
            os.kill(child, signal.SIGKILL)
        os._exit(9)
    """
)


@pytest.mark.skipif(not HAS_PROC, reason="reads /proc")
def test_a_detached_reaper_outlives_a_host_that_kills_its_children(tmp_path: Path) -> None:
    script = tmp_path / "ray_worker_stub.py"
    script.write_text(_RAY_WORKER)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 9, proc.stderr
    grandchild = int((tmp_path / "grandchild").read_text())
    try:
        assert eventually(lambda: not alive(grandchild))
        assert eventually(lambda: not list(tmp_path.glob("capeval-ray-*")))
    finally:
        if alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)
