"""run_process: timeouts stop whole process groups, and scopes/shutdown stop repeats."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from capeval.core.passrule import TIMEOUT_EXIT_CODE
from capeval.proc import process
from capeval.proc.process import (
    MAX_OUTPUT_BYTES,
    ProcessCancelled,
    live_groups,
    process_scope,
    run_process,
)
from tests.runhelpers import alive, eventually, group_gone


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    process.reset_shutdown()
    yield
    process.reset_shutdown()  # a test that shut down must not refuse the next file's children


def test_captures_output_and_exit_code(tmp_path: Path) -> None:
    r = run_process(["bash", "-c", "echo out; echo err >&2; exit 3"], cwd=tmp_path)
    assert (r.exit_code, r.timed_out, r.stdout, r.stderr) == (3, False, b"out\n", b"err\n")
    assert r.duration_ms > 0


def test_each_stdout_line_carries_the_time_it_arrived(tmp_path: Path) -> None:
    r = run_process(["bash", "-c", "echo one; sleep 0.3; echo two; echo three"], cwd=tmp_path)
    lines = r.stdout_lines()
    assert [text for text, _ in lines] == ["one", "two", "three", ""]
    (_, one), (_, two), (_, three), _ = lines
    assert one is not None and two is not None and three is not None
    assert two - one >= 250 and three >= two


def test_stdin_is_dev_null_unless_given(tmp_path: Path) -> None:
    # `cat` would hang forever on an inherited terminal/pipe; /dev/null gives EOF.
    r = run_process(["cat"], cwd=tmp_path, timeout_s=5)
    assert (r.exit_code, r.stdout) == (0, b"")
    r = run_process(["cat"], cwd=tmp_path, stdin=b"hello", timeout_s=5)
    assert r.stdout == b"hello"


def test_a_child_never_reads_capevals_own_stdin(tmp_path: Path) -> None:
    # Started from a pipe (CI, `capeval run < file`), a child that reads its
    # stdin took capeval's input, or waited for it, instead of seeing EOF.
    probe = textwrap.dedent(
        f"""
        from capeval.proc.process import run_process
        r = run_process(["cat"], cwd={str(tmp_path)!r}, timeout_s=20)
        print(r.exit_code, r.stdout)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        input="capeval's own input\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "0 b''", out.stdout + out.stderr


def test_env_and_cwd_are_used(tmp_path: Path) -> None:
    r = run_process(
        ["bash", "-c", 'echo "$X $PWD"'], cwd=tmp_path, env={"X": "1", "PATH": os.environ["PATH"]}
    )
    assert r.stdout.decode().strip() == f"1 {tmp_path}"


def test_pwd_names_the_workdir_for_children_that_read_it(tmp_path: Path) -> None:
    """opencode takes its directory from $PWD: an inherited one would point at capeval's cwd."""
    read_pwd = [sys.executable, "-c", "import os; print(os.environ['PWD'])"]
    stale = {"PWD": "/somewhere/else", "PATH": os.environ["PATH"]}
    assert run_process(read_pwd, cwd=tmp_path, env=stale).stdout.decode().strip() == str(tmp_path)
    assert run_process(read_pwd, cwd=tmp_path).stdout.decode().strip() == str(tmp_path)


def test_git_location_variables_are_dropped_when_inherited_kept_when_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    show = ["bash", "-c", 'echo "${GIT_DIR-unset}"']
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "users-repo.git"))
    assert run_process(show, cwd=tmp_path).stdout == b"unset\n"
    assert run_process(show, cwd=tmp_path, env=dict(os.environ)).stdout == b"unset\n"
    # One the caller sets for this child (an agent's configured `env`) is its to keep.
    given = {**os.environ, "GIT_DIR": str(tmp_path / "agents.git")}
    assert run_process(show, cwd=tmp_path, env=given).stdout.decode().strip() == given["GIT_DIR"]


@pytest.mark.slow
def test_timeout_kills_the_whole_group_on_time(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    start = time.monotonic()
    r = run_process(
        ["bash", "-c", f"sleep 60 & echo $! > {pidfile}; wait"],
        cwd=tmp_path,
        timeout_s=1.5,  # bash must have written the pid file, even on a loaded host
        kill_grace_s=1,
    )
    elapsed = time.monotonic() - start
    assert r.timed_out and r.exit_code == TIMEOUT_EXIT_CODE
    assert elapsed < 4, elapsed
    grandchild = int(pidfile.read_text())
    assert not alive(grandchild)


@pytest.mark.slow
def test_sigterm_ignoring_child_gets_sigkill_after_grace(tmp_path: Path) -> None:
    start = time.monotonic()
    r = run_process(
        ["bash", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"],
        cwd=tmp_path,
        timeout_s=1.0,  # bash must have set its trap first, even on a loaded host
        kill_grace_s=0.5,
    )
    elapsed = time.monotonic() - start
    assert r.timed_out and r.exit_code == TIMEOUT_EXIT_CODE
    assert 1.45 <= elapsed < 4, elapsed
    assert r.stdout == b"ready\n"


@pytest.mark.slow
def test_a_timed_out_child_gets_sigterm_and_the_default_grace_to_run_its_trap(
    tmp_path: Path,
) -> None:
    # Spec: on timeout SIGTERM, then SIGKILL 5 s later, exit code 124 (GNU
    # timeout's). A trap that needs 2 s to finish must get them: a SIGKILL
    # first, or a grace shorter than that, loses what the trap writes.
    ready, ran = tmp_path / "ready", tmp_path / "trap-ran"
    script = (
        f"trap 'sleep 2; echo ran > {ran}; exit 0' TERM; touch {ready}; "
        "while :; do sleep 0.05; done"
    )
    start = time.monotonic()
    r = run_process(["bash", "-c", script], cwd=tmp_path, timeout_s=2.0)
    elapsed = time.monotonic() - start
    assert ready.exists(), "bash did not set its trap within 2 s (overloaded host?)"
    assert r.timed_out and r.exit_code == 124
    assert ran.read_text() == "ran\n"
    assert elapsed < 2.0 + 4.5, elapsed  # it left when the trap ended, not after the grace


def test_leftover_background_children_are_killed_when_the_leader_exits(tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    r = run_process(
        [
            "bash",
            "-c",
            f"(sleep 60 >/dev/null 2>&1 &) ; sleep 60 >/dev/null 2>&1 & echo $! > {pidfile}",
        ],
        cwd=tmp_path,
        timeout_s=5,
    )
    assert r.exit_code == 0 and not r.timed_out
    # SIGKILL is delivered asynchronously: allow the straggler a moment to die.
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 3.0
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(pid)
    assert live_groups() == []


def test_signal_death_is_reported_as_128_plus_n(tmp_path: Path) -> None:
    r = run_process(["bash", "-c", "kill -9 $$"], cwd=tmp_path)
    assert r.exit_code == 128 + 9


def test_scope_cancel_stops_its_children_and_refuses_new_ones(tmp_path: Path) -> None:
    results: list[object] = []
    started = threading.Event()

    def worker() -> None:
        with process_scope("repeat-1") as scope:
            holder.append(scope)
            started.set()
            results.append(run_process(["sleep", "60"], cwd=tmp_path))
            try:
                run_process(["true"], cwd=tmp_path)
            except ProcessCancelled as exc:
                results.append(exc)

    holder: list[process.ProcessScope] = []
    t = threading.Thread(target=worker)
    t.start()
    started.wait(5)
    deadline = time.monotonic() + 5
    while not holder[0].groups and time.monotonic() < deadline:
        time.sleep(0.01)
    pgid = next(iter(holder[0].groups))
    assert holder[0].cancel("agent timeout") == 1
    t.join(5)
    assert not t.is_alive()
    first, second = results
    assert isinstance(first, process.ProcessResult) and first.cancelled
    assert isinstance(second, ProcessCancelled) and "agent timeout" in str(second)
    assert group_gone(pgid)


def test_shutdown_kills_every_live_group(tmp_path: Path) -> None:
    done: list[process.ProcessResult] = []
    threads = [
        threading.Thread(target=lambda: done.append(run_process(["sleep", "60"], cwd=tmp_path)))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 5
    while len(live_groups()) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    groups = live_groups()
    assert len(groups) == 3
    assert process.shutdown("test") == 3
    for t in threads:
        t.join(5)
    assert len(done) == 3 and all(r.cancelled for r in done)
    assert all(group_gone(g) for g in groups)
    with pytest.raises(ProcessCancelled):
        run_process(["true"], cwd=tmp_path)
    process.reset_shutdown()
    assert run_process(["true"], cwd=tmp_path).exit_code == 0


def test_cancelling_a_scope_kills_a_child_that_ignores_sigterm(tmp_path: Path) -> None:
    # An agent timeout cancels the repeat's scope: a CLI that traps SIGTERM
    # must still die, or the repeat (and the run) waits for it.
    ready = tmp_path / "ready"
    script = f"trap '' TERM; touch {ready}; while :; do sleep 0.05; done"
    results: list[process.ProcessResult] = []
    scopes: list[process.ProcessScope] = []

    def worker() -> None:
        with process_scope("repeat") as scope:
            scopes.append(scope)
            results.append(run_process(["bash", "-c", script], cwd=tmp_path, timeout_s=60))

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert eventually(ready.exists, 30)
        scopes[0].cancel("agent timeout")
        t.join(10)
        assert not t.is_alive(), "the TERM-ignoring child outlived its scope's cancel"
        assert results[0].cancelled and results[0].exit_code == 128 + 9
    finally:
        process.shutdown("test cleanup")
        t.join(60)


def test_after_shutdown_no_new_repeat_can_start_a_child(tmp_path: Path) -> None:
    # Ctrl-C: repeats that start their scope afterwards, and the runner's own
    # checks (`is_shutting_down`), must see it too, not only the scopes alive then.
    process.shutdown("interrupted")
    assert process.is_shutting_down()
    with (
        process_scope("later repeat"),
        pytest.raises(process.ProcessCancelled, match="interrupted"),
    ):
        run_process(["true"], cwd=tmp_path)


def test_reopening_a_scope_after_an_agent_timeout_does_not_undo_a_shutdown(
    tmp_path: Path,
) -> None:
    # A repeat reopens its scope for the grader after the agent timed out; a
    # Ctrl-C in between must still refuse the grader.
    with process_scope("repeat") as scope:
        scope.cancel("agent timeout")
        process.shutdown("interrupted")
        scope.reopen()
        with pytest.raises(process.ProcessCancelled, match="interrupted"):
            run_process(["true"], cwd=tmp_path)


def test_a_process_that_left_the_group_holding_the_pipes_does_not_hang_the_run(
    tmp_path: Path,
) -> None:
    # setsid puts it out of reach of the group kill; it keeps stdout open, and
    # closing the pipe used to wait for it (15 s here, 300 s in a real grader).
    marker = "14.7183"  # a sleep length no other process uses, to clean up by
    start = time.monotonic()
    try:
        r = run_process(["bash", "-c", f"setsid sleep {marker} & echo hi"], cwd=tmp_path)
        assert r.stdout.startswith(b"hi") and r.exit_code == 0
        assert time.monotonic() - start < 8
    finally:
        subprocess.run(["pkill", "-f", f"sleep {marker}"], check=False)


def test_output_past_the_cap_keeps_head_and_tail_and_says_what_was_dropped(
    tmp_path: Path,
) -> None:
    # A grader running `yes` until its timeout held every byte: tens of GB.
    script = "printf START; head -c 100000 /dev/zero | tr '\\0' y; printf END; echo err >&2"
    r = run_process(["bash", "-c", script], cwd=tmp_path, max_output_bytes=1000)
    assert r.stdout.startswith(b"START" + b"y" * 495)
    assert r.stdout.endswith(b"y" * 497 + b"END")
    assert b"[capeval: 99008 bytes of output dropped here]" in r.stdout
    assert len(r.stdout) < 1100 and r.stderr == b"err\n"
    ends = [end for end, _ in r.stdout_arrivals]
    assert ends == sorted(ends) and ends[-1] == len(r.stdout)
    assert r.stdout_lines()[-1][1] is not None


def test_output_under_the_cap_is_kept_whole(tmp_path: Path) -> None:
    r = run_process(["bash", "-c", "head -c 5000 /dev/zero"], cwd=tmp_path)
    assert r.stdout == b"\0" * 5000


def test_the_default_output_cap_bounds_what_is_kept(tmp_path: Path) -> None:
    # A grader running `yes` until its timeout held every byte (about 50 GB):
    # callers rely on the default cap, not on passing one.
    extra = 1024 * 1024
    r = run_process(["bash", "-c", f"head -c {MAX_OUTPUT_BYTES + extra} /dev/zero"], cwd=tmp_path)
    assert r.exit_code == 0
    assert MAX_OUTPUT_BYTES <= len(r.stdout) < MAX_OUTPUT_BYTES + 200
    assert f"[capeval: {extra} bytes of output dropped here]".encode() in r.stdout


def test_a_process_that_left_its_group_dies_with_its_scope(tmp_path: Path) -> None:
    # setsid (or a daemon's double fork) escapes the group kill: it ran on
    # after its repeat, in a deleted workdir, after the run itself.
    pidfile = tmp_path / "pid"
    script = f"setsid bash -c 'echo $$ > {pidfile}; exec sleep 30' </dev/null >/dev/null 2>&1 &"
    with process_scope("repeat"):
        r = run_process(
            ["bash", "-c", script + f" while [ ! -s {pidfile} ]; do :; done"], cwd=tmp_path
        )
        assert r.exit_code == 0
        escaped = int(pidfile.read_text())
        assert alive(escaped)  # out of the group's reach
    assert eventually(lambda: not alive(escaped), 3.0)


def test_a_scope_kills_only_its_own_escaped_processes(tmp_path: Path) -> None:
    outsider = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        with process_scope("repeat"):
            run_process(["true"], cwd=tmp_path)
        assert alive(outsider.pid)
    finally:
        outsider.kill()
        outsider.wait()


def _ctrl_c_inside_popen(monkeypatch: pytest.MonkeyPatch, started: list[int]) -> None:
    """Positions a real SIGINT inside Popen, after the fork: the real Popen starts
    the child, then the signal is raised before Popen hands back its pid (the
    window a user's Ctrl-C can hit; a test cannot time a keypress into it)."""
    real_popen = subprocess.Popen

    def popen(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        proc = real_popen(*args, **kwargs)  # type: ignore[call-overload]
        started.append(proc.pid)
        signal.raise_signal(signal.SIGINT)
        return proc

    monkeypatch.setattr(process.subprocess, "Popen", popen)


def test_ctrl_c_while_popen_starts_the_child_still_kills_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    _ctrl_c_inside_popen(monkeypatch, started)
    with pytest.raises(KeyboardInterrupt):
        run_process(["sleep", "30"], cwd=tmp_path, timeout_s=30)
    assert started, "the child was started"
    # Killed, not reaped (capeval exits on Ctrl-C): a zombie counts as gone.
    assert eventually(lambda: not alive(started[0])), "the child ran on after Ctrl-C"
    # Reap the zombie, unless subprocess's own clean-up of lost Popen objects did.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(started[0], 0)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_while_popen_fails_is_not_swallowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def popen(*args: object, **kwargs: object) -> None:
        signal.raise_signal(signal.SIGINT)
        raise FileNotFoundError("no-such-agent")

    monkeypatch.setattr(process.subprocess, "Popen", popen)
    with pytest.raises(KeyboardInterrupt):
        run_process(["no-such-agent"], cwd=tmp_path)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_custom_sigint_handler_gets_the_held_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        started: list[int] = []
        _ctrl_c_inside_popen(monkeypatch, started)
        result = run_process(["true"], cwd=tmp_path, timeout_s=30)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [signal.SIGINT]
    assert result.exit_code == 0
