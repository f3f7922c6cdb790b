"""Child processes that can always be stopped: one process group per child.

Agents and graders start their own children (shells, test runners, servers).
Killing only the direct child would leave those running and holding the
workdir, the pipes or a port, so every child gets its own session and the
whole group is signalled. Live groups are tracked in a registry, grouped in
*scopes* (one per repeat), so that an agent timeout can stop exactly one
repeat's processes and Ctrl-C or a crash can stop all of them.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import contextvars
import itertools
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from capeval.core.passrule import TIMEOUT_EXIT_CODE
from capeval.proc import reaper

# Variables that point git at a repository other than the one around its cwd.
# Git exports them to hooks (a pre-push hook running the gate), CI sets some:
# inherited by an agent or grader, `git diff` in the workdir read, and `git
# add`/`git commit` wrote, the user's real repository instead of the repeat's.
GIT_LOCATION_VARS: tuple[str, ...] = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)

# Every child of a scope carries this variable, set to the scope's own token.
# A process that left its group (setsid, a daemon's double fork) escapes the
# group kill and kept running after its repeat, its workdir deleted, after
# the run; its environment still names the scope, so it is found by that.
SCOPE_VAR = "CAPEVAL_PROCESS_SCOPE"

# Of each of a child's output streams, at most this much is kept in memory:
# the first half and the last half, with a marker for what was dropped
# between them. A grader running `yes` for its 60 s timeout held about 50 GB;
# the tail is kept because that is where a grader says why it failed and an
# agent's stream says how the run ended.
MAX_OUTPUT_BYTES = 64 * 1024 * 1024

# How long to keep reading a child's pipes after the group is dead. A process
# that escaped the group (its own setsid) can hold them open forever; its
# output is then truncated rather than hanging the runner.
_PIPE_DRAIN_S = 2.0


@dataclass(frozen=True)
class ProcessResult:
    """What a finished child did.

    `exit_code` is the child's exit status, 128+N when it died of signal N,
    and 124 when it was stopped because it ran out of time.
    `cancelled` is true when it was stopped by a scope cancel or shutdown.
    """

    exit_code: int
    timed_out: bool
    duration_ms: float
    stdout: bytes
    stderr: bytes
    cancelled: bool = False
    # When each piece of stdout arrived: (byte offset of its end, epoch ms).
    # Agents that stamp no times on their events (Codex) are timed by these.
    stdout_arrivals: tuple[tuple[int, float], ...] = ()

    def stdout_lines(self) -> list[tuple[str, float | None]]:
        """stdout split at newlines, each line with the time its end arrived."""
        out: list[tuple[str, float | None]] = []
        arrivals = self.stdout_arrivals
        ends = [end for end, _ in arrivals]
        start = 0
        for raw in self.stdout.split(b"\n"):
            end = start + len(raw)
            k = bisect.bisect_left(ends, end)
            out.append((raw.decode(errors="replace"), arrivals[k][1] if k < len(ends) else None))
            start = end + 1
        return out


class ProcessCancelled(RuntimeError):
    """Raised instead of starting a child in a scope that was cancelled."""


@dataclass(eq=False)
class ProcessScope:
    """A set of process groups that live and die together (one repeat)."""

    name: str
    groups: set[int] = field(default_factory=set)
    cancelled: str | None = None  # reason, once cancelled
    token: str = field(default_factory=lambda: secrets.token_hex(8))  # SCOPE_VAR's value
    started: bool = False  # a child was started in it

    def cancel(self, reason: str, sig: int = signal.SIGKILL) -> int:
        """Refuse new children and signal every live group; returns how many were signalled."""
        with _LOCK:
            if self.cancelled is None:
                self.cancelled = reason
            pgids = list(self.groups)
        return sum(_signal_group(pgid, sig) for pgid in pgids)

    def reopen(self) -> None:
        """Accept children again after a cancel (e.g. the grader after an agent timeout).

        A shutdown is not undone: `run_process` checks it separately.
        """
        with _LOCK:
            self.cancelled = None


_LOCK = threading.Lock()
_SCOPES: set[ProcessScope] = set()
_ROOT = ProcessScope("root")
_SHUTDOWN: list[str] = []  # non-empty once shutdown() was called
_CURRENT: contextvars.ContextVar[ProcessScope | None] = contextvars.ContextVar(
    "capeval_process_scope", default=None
)


@contextlib.contextmanager
def process_scope(name: str) -> Iterator[ProcessScope]:
    """Make `name` the scope of every child started by this thread inside the block."""
    scope = ProcessScope(name)
    with _LOCK:
        _SCOPES.add(scope)
        if _SHUTDOWN:
            scope.cancelled = _SHUTDOWN[0]
    # If capeval is killed, the reaper finds what escaped the groups by the mark.
    reaper.track_mark(SCOPE_VAR, scope.token)
    token = _CURRENT.set(scope)
    try:
        yield scope
    finally:
        _CURRENT.reset(token)
        with _LOCK:
            _SCOPES.discard(scope)
        if scope.started:
            kill_escaped(scope)
        reaper.forget_mark(SCOPE_VAR, scope.token)


def kill_escaped(scope: ProcessScope) -> int:
    """Stop every process still carrying the scope's token; returns how many.

    Its groups are dead by now: what is left is what moved to another group
    or session (see `strays`).
    """
    from capeval.proc.strays import kill_marked

    return kill_marked(SCOPE_VAR, scope.token)


def current_scope() -> ProcessScope:
    return _CURRENT.get() or _ROOT


def live_groups() -> list[int]:
    """Process group ids of every child still running, across all scopes."""
    with _LOCK:
        return sorted(_ROOT.groups.union(*(s.groups for s in _SCOPES)))


def shutdown(reason: str = "interrupted", sig: int = signal.SIGKILL) -> int:
    """Stop everything: no new children anywhere, every live group signalled.

    For Ctrl-C, SIGTERM and crash paths. Returns how many groups were signalled.
    """
    with _LOCK:
        if not _SHUTDOWN:
            _SHUTDOWN.append(reason)
        scopes = [_ROOT, *_SCOPES]
    return sum(scope.cancel(reason, sig) for scope in scopes)


def is_shutting_down() -> bool:
    return bool(_SHUTDOWN)


def reset_shutdown() -> None:
    """Allow children again after a shutdown (a new run in the same process, e.g. tests)."""
    with _LOCK:
        _SHUTDOWN.clear()
        _ROOT.cancelled = None


def _signal_group(pgid: int, sig: int) -> int:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return 0
    return 1


class _SigintHeld:
    """Holds back Ctrl-C while Popen starts a child, to replay it once the pid is known.

    A KeyboardInterrupt raised inside Popen, after the fork, loses the child:
    Popen never returns its pid, and the child, in a session of its own, never
    saw the SIGINT, so it ran on after capeval exited. Only the main thread
    receives signals, so other threads need no holding.
    """

    def __init__(self) -> None:
        self._previous: object = None
        self._held = False
        self._pending = False

    def __enter__(self) -> _SigintHeld:
        if threading.current_thread() is threading.main_thread():
            previous = signal.getsignal(signal.SIGINT)
            if previous is not None:  # None: a handler not set from Python, left alone
                self._previous = previous
                signal.signal(signal.SIGINT, self._hold)
                self._held = True
        return self

    def _hold(self, signum: int, frame: object) -> None:
        self._pending = True

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if self._held:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]
            self._held = False
        if exc_type is not None:
            self.replay()  # no child to kill (Popen failed): the Ctrl-C still counts

    def replay(self) -> None:
        """Deliver a held Ctrl-C to the handler that was in place (raising, by default)."""
        if self._pending:
            self._pending = False
            signal.raise_signal(signal.SIGINT)


def run_process(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    stdin: bytes | None = None,
    kill_grace_s: float = 5.0,
    max_output_bytes: int | None = MAX_OUTPUT_BYTES,
    pass_fds: Sequence[int] = (),
) -> ProcessResult:
    """Run `argv` in its own process group and wait for it, whatever it does.

    stdin is /dev/null unless bytes are given, so a child that waits for input
    cannot hang a headless run. On timeout the group gets SIGTERM, then
    SIGKILL after `kill_grace_s`. When the child exits, anything it left
    running in its group is killed too: a repeat leaves no processes behind.
    Of stdout and stderr each, at most `max_output_bytes` (head and tail) is kept.
    `pass_fds` stay open in the child (bwrap's `--info-fd`).
    """
    scope = current_scope()
    start = time.monotonic()
    # A child inherits our PWD, and some CLIs (opencode) take their working
    # directory from it rather than from the real cwd: they must agree, or an
    # agent edits wherever capeval was started instead of its workdir.
    # Likewise git: a location variable inherited from capeval's own environment
    # is dropped (one set for this child, e.g. in an agent's `env`, is kept).
    child_env = {
        key: value
        for key, value in (os.environ if env is None else env).items()
        if key not in GIT_LOCATION_VARS or os.environ.get(key) != value
    }
    child_env["PWD"] = os.path.abspath(os.fspath(cwd))
    if scope is not _ROOT:
        child_env[SCOPE_VAR] = scope.token
    with _LOCK, _SigintHeld() as held:
        reason = scope.cancelled or (_SHUTDOWN[0] if _SHUTDOWN else None)
        if reason is not None:
            raise ProcessCancelled(f"not starting {Path(str(argv[0])).name}: {reason}")
        proc = subprocess.Popen(
            [os.fspath(a) for a in argv],
            cwd=os.fspath(cwd),
            env=child_env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
        # With start_new_session the child's pid is its process group id.
        scope.groups.add(proc.pid)
        scope.started = True
    out = _Capture(max_output_bytes)
    err = _Capture(max_output_bytes)
    try:
        # Inside the try: a Ctrl-C from here on kills the group it started,
        # including one that arrived while Popen was starting it.
        held.replay()
        reaper.track_group(proc.pid)  # killed by the reaper if capeval itself is killed
        readers = [
            threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True),
        ]
        if stdin is not None:
            readers.append(threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True))
        for t in readers:
            t.start()

        exited = threading.Event()
        threading.Thread(target=_await_exit, args=(proc, exited), daemon=True).start()

        timed_out = False
        if not exited.wait(timeout_s):
            timed_out = True
            _signal_group(proc.pid, signal.SIGTERM)
            if not exited.wait(kill_grace_s):
                _signal_group(proc.pid, signal.SIGKILL)
                exited.wait()
        # The leader has exited but is not reaped yet, so its pid (= our group id)
        # cannot have been reused: killing stragglers here cannot hit a stranger.
        _signal_group(proc.pid, signal.SIGKILL)
    except BaseException:
        # Ctrl-C in the thread that waits (`validate --graders`, a version probe):
        # the child's group, in a session of its own, never saw the SIGINT and
        # ran on after capeval had exited. Not reaped yet: its id is still ours.
        _signal_group(proc.pid, signal.SIGKILL)
        with _LOCK:
            scope.groups.discard(proc.pid)
        raise
    finally:
        # Before the reap below (or subprocess's own, after an exception), which
        # frees the group id for reuse: the reaper must never signal it after that.
        reaper.forget_group(proc.pid)
    returncode = proc.wait()
    with _LOCK:
        scope.groups.discard(proc.pid)
        cancelled = scope.cancelled is not None or bool(_SHUTDOWN)
    drained_by = time.monotonic() + _PIPE_DRAIN_S  # one wait for all pipes, not one each
    for t in readers:
        t.join(max(0.0, drained_by - time.monotonic()))
    if not any(t.is_alive() for t in readers):
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
    # Otherwise a process that left the group (setsid) still holds a pipe: closing
    # it would wait on the reader blocked in read(), i.e. on that process. The
    # daemon reader is left to finish when it exits; what was read so far is kept.
    duration_ms = (time.monotonic() - start) * 1000.0

    if timed_out:
        exit_code = TIMEOUT_EXIT_CODE
    elif returncode < 0:
        exit_code = 128 - returncode
    else:
        exit_code = returncode
    out_chunks, out_times = out.kept()
    ends = list(itertools.accumulate(len(c) for c in out_chunks))
    return ProcessResult(
        exit_code=exit_code,
        timed_out=timed_out,
        duration_ms=duration_ms,
        stdout=b"".join(out_chunks),
        stderr=b"".join(err.kept()[0]),
        cancelled=cancelled and not timed_out and returncode < 0,
        stdout_arrivals=tuple(zip(ends, out_times, strict=False)),
    )


def _await_exit(proc: subprocess.Popen[bytes], exited: threading.Event) -> None:
    """Wait for the leader to exit without reaping it (see run_process)."""
    try:
        if hasattr(os, "waitid"):
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        else:  # pragma: no cover - platforms without waitid reap here
            proc.wait()
    except ChildProcessError:  # pragma: no cover - already reaped
        pass
    finally:
        exited.set()


class _Capture:
    """One output stream: its head and tail up to `limit` bytes, each piece with
    the time it arrived; what lies between them is counted, not kept."""

    def __init__(self, limit: int | None) -> None:
        self._head_limit = None if limit is None else limit - limit // 2
        self._tail_limit = 0 if limit is None else limit // 2
        self._lock = threading.Lock()
        self._head: list[tuple[bytes, float]] = []
        self._head_size = 0
        self._tail: collections.deque[tuple[bytes, float]] = collections.deque()
        self._tail_size = 0
        self._dropped = 0

    def add(self, chunk: bytes, at: float) -> None:
        with self._lock:
            if self._head_limit is None or self._head_size + len(chunk) <= self._head_limit:
                self._head.append((chunk, at))
                self._head_size += len(chunk)
                return
            room = self._head_limit - self._head_size
            if room > 0 and not self._tail:
                self._head.append((chunk[:room], at))
                self._head_size += room
                chunk = chunk[room:]
            self._tail.append((chunk, at))
            self._tail_size += len(chunk)
            while self._tail_size > self._tail_limit:
                first, first_at = self._tail.popleft()
                excess = self._tail_size - self._tail_limit
                if len(first) > excess:
                    self._tail.appendleft((first[excess:], first_at))
                    self._dropped += excess
                    self._tail_size -= excess
                else:
                    self._dropped += len(first)
                    self._tail_size -= len(first)

    def kept(self) -> tuple[list[bytes], list[float]]:
        """The kept pieces in order (a marker where bytes were dropped) and their times."""
        with self._lock:
            pieces = list(self._head)
            if self._dropped:
                marker = f"\n[capeval: {self._dropped} bytes of output dropped here]\n"
                pieces.append((marker.encode(), self._tail[0][1] if self._tail else 0.0))
            pieces += self._tail
        return [p for p, _ in pieces], [t for _, t in pieces]


def _drain(pipe: IO[bytes] | None, capture: _Capture) -> None:
    if pipe is None:
        return
    with contextlib.suppress(OSError, ValueError):
        while chunk := pipe.read1(65536):  # type: ignore[attr-defined]
            capture.add(chunk, time.time() * 1000.0)


def _feed(pipe: IO[bytes] | None, data: bytes) -> None:
    if pipe is None:
        return
    with contextlib.suppress(OSError, ValueError):
        pipe.write(data)
    with contextlib.suppress(OSError, ValueError):
        pipe.close()
