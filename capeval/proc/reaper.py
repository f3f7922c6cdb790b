"""A watchman process that cleans up after a capeval that was SIGKILLed.

Agents and graders run in their own sessions (`capeval.proc.process`), so
nothing stops them when capeval dies without a chance to run its handlers
(SIGKILL, the OOM killer, a CI job timeout): a hung agent then runs forever,
and the run's temp directories stay in `$TMPDIR`. Only another process can
clean up after a SIGKILL, so one is started per run; it holds the read end of
a pipe that only capeval writes to. The kernel closes the write end when
capeval dies, however it dies, so end-of-file is the death notice, and it
arrives only after everything capeval wrote before dying has been read.
Besides groups and folders, capeval tells it each repeat's environment mark
(`process.SCOPE_VAR`): a process that left its group (`setsid`, a daemon)
carries it, and is killed too.

Why not `prctl(PR_SET_PDEATHSIG)` on each child: it reaches only the direct
child, not the shells, test runners and servers an agent starts (the very
processes that hang); it fires when the *thread* that forked the child exits,
not the process, and children are forked from pool threads; it needs a
`preexec_fn`, which CPython documents as unsafe with threads and which takes
`subprocess` off its fast spawn path for every child; it is Linux-only; and
it cannot remove a directory. Why one process per run and not per repeat: a
Python start costs tens of milliseconds, the runner's whole per-repeat budget.

Why group ids are unregistered *before* capeval reaps a group's leader: until
it is reaped, the leader's pid (the group id) cannot be reused, and because a
pipe delivers in order, the reaper always learns of the unregistration before
it could learn of capeval's death. So it never signals a group id that may
since belong to a stranger. What is left is the milliseconds between
capeval's death and the reaper's reaction, in which a whole group would have
to end and its id be reused; and a child started in the microseconds before
its group is registered escapes if capeval dies just then.

Why the reaper does nothing when capeval closes the pipe after saying so:
on a normal exit, SIGINT or SIGTERM capeval stops and removes everything
itself, and the reaper must not change that. The reaper runs in its own
session, so a Ctrl-C or a signal sent to capeval's process group does not
take the watchman down with it.

This file is also the reaper's program, run as a script by the interpreter
in isolated mode (`-I -S`): it must import only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Collection, Iterator
from pathlib import Path

_END = b"\0"  # records end with NUL: the one byte no path can contain
_QUIT = b"q"  # capeval exits cleanly: forget everything, do nothing
# How long the reaper keeps retrying to remove a directory that processes
# killed a moment ago may still be writing into.
_RMTREE_TRIES_S = 2.0


class Reaper:
    """capeval's side of the pipe: tells the reaper what to clean up if capeval dies."""

    def __init__(self, proc: subprocess.Popen[bytes], fd: int) -> None:
        self._proc = proc
        self._fd: int | None = fd
        self._lock = threading.Lock()

    @classmethod
    def start(cls, detached: bool = False) -> Reaper | None:
        """Start the reaper process; None when it cannot be (the run goes on unguarded).

        `detached`: the reaper is no child of this process (it forks once more and
        its first process exits), for hosts that kill a dying process's children
        with it: a Ray worker does (`kill_child_processes_on_worker_exit`), and
        would take its watchman down before it could act.
        """
        script = Path(__file__)
        if not sys.executable or not script.is_file():  # e.g. imported from a zip
            return None
        read_end, write_end = os.pipe()  # close-on-exec: no agent inherits the write end
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(script), *(["--detach"] if detached else [])],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
            if detached:
                proc.wait()  # the first process only forks the reaper
        except OSError:
            os.close(write_end)
            return None
        finally:
            os.close(read_end)
        return cls(proc, write_end)

    def send(self, record: bytes) -> None:
        with self._lock:
            if self._fd is None:
                return
            data = record + _END
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:  # the reaper died: the run goes on, unguarded
                os.close(self._fd)
                self._fd = None

    def close(self) -> None:
        """Tell the reaper that capeval cleaned up itself, and let it exit."""
        self.send(_QUIT)
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        try:
            self._proc.wait(timeout=5.0)  # a detached reaper's first process is long gone
        except subprocess.TimeoutExpired:  # pragma: no cover - a reaper that hangs
            self._proc.kill()
            self._proc.wait()


_LOCK = threading.Lock()
_ACTIVE: Reaper | None = None
_USERS = 0


@contextlib.contextmanager
def running(detached: bool = False) -> Iterator[None]:
    """Guard the block: groups and dirs tracked inside it are cleaned up if capeval dies.

    Nested or concurrent blocks in one process share one reaper process
    (`detached`, see `Reaper.start`, applies to the first).
    """
    global _ACTIVE, _USERS
    with _LOCK:
        if _USERS == 0:
            _ACTIVE = Reaper.start(detached)
        _USERS += 1
    try:
        yield
    finally:
        with _LOCK:
            _USERS -= 1
            done, reaper = _USERS == 0, _ACTIVE
            if done:
                _ACTIVE = None
        if done and reaper is not None:
            reaper.close()


def _send(record: bytes) -> None:
    reaper = _ACTIVE
    if reaper is not None:
        reaper.send(record)


def track_group(pgid: int) -> None:
    """A process group to kill if capeval dies; call right after starting its leader."""
    _send(b"+g%d" % pgid)


def forget_group(pgid: int) -> None:
    """Call *before* reaping the group's leader: after that its id may be reused."""
    _send(b"-g%d" % pgid)


def track_dir(path: Path) -> None:
    _send(b"+d" + os.fsencode(os.path.abspath(path)))


def forget_dir(path: Path) -> None:
    _send(b"-d" + os.fsencode(os.path.abspath(path)))


def track_mark(var: str, mark: str) -> None:
    """An environment mark (`var=mark`) whose carriers to kill if capeval dies.

    Groups are not enough: a process that left its group (`setsid`, a daemon)
    is found only by the mark its environment inherited (`capeval.proc.strays`).
    """
    _send(b"+m" + os.fsencode(f"{var}={mark}"))


def forget_mark(var: str, mark: str) -> None:
    _send(b"-m" + os.fsencode(f"{var}={mark}"))


def remove_tree(path: str | bytes | os.PathLike[str]) -> None:
    """`shutil.rmtree` that also empties read-only folders; never raises.

    A fixture may ship a read-only folder (its copy keeps the mode), and an
    agent may `chmod -w` one: plain rmtree then cannot unlink the entries
    inside, and every repeat's temp dir stayed in `$TMPDIR` (root, which
    ignores modes, never saw it). Such a folder inside the tree is given back
    its owner's rwx and the entry retried; symlinks are never followed.
    """
    top = os.path.abspath(os.fsdecode(path))

    def retry(func: object, failed: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            if os.path.abspath(failed) != top:
                _owner_rwx(os.path.dirname(failed))
            if _owner_rwx(failed):  # a folder that could not be listed or entered
                remove_tree(failed)
            elif func in (os.unlink, os.remove, os.rmdir):
                func(failed)

    kwargs: dict[str, object] = {"onexc" if sys.version_info >= (3, 12) else "onerror": retry}
    with contextlib.suppress(OSError):
        shutil.rmtree(top, **kwargs)  # type: ignore[arg-type]


def _owner_rwx(folder: str) -> bool:
    """Give a real folder (not a link) its owner's rwx; True when its mode changed."""
    mode = os.lstat(folder).st_mode
    if not stat.S_ISDIR(mode) or mode & 0o700 == 0o700:
        return False
    os.chmod(folder, stat.S_IMODE(mode) | 0o700)
    return True


@contextlib.contextmanager
def temp_dir(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """A new temp directory, removed at the end of the block or by the reaper."""
    path = Path(os.path.abspath(tempfile.mkdtemp(prefix=prefix, dir=parent)))
    track_dir(path)
    try:
        yield path
    finally:
        remove_tree(path)
        forget_dir(path)


def carriers(marks: Collection[bytes], proc: str = "/proc") -> list[int]:
    """Live processes (not this one) whose environment holds one of `marks` (`VAR=value`).

    The one /proc scan for marks: `capeval.proc.strays` uses it too, while the
    watchman, which may import only the standard library, keeps it here. A
    zombie's environment reads empty, so the dead are never listed.
    """
    found = []
    try:
        entries = os.listdir(proc)
    except OSError:
        return []
    for name in entries:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(os.path.join(proc, name, "environ"), "rb") as fh:
                environ = fh.read().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if any(mark in environ for mark in marks):
            found.append(int(name))
    return sorted(found)


# A process can fork between a scan and the kill: scan again until one finds none.
SWEEP_ROUNDS = 5
SWEEP_PAUSE_S = 0.05


def kill_carriers(marks: Collection[bytes], proc: str = "/proc") -> set[int]:
    """SIGKILL what carries one of `marks`, scanning again until a scan finds none; who was found."""
    seen: set[int] = set()
    for _ in range(SWEEP_ROUNDS):
        pids = carriers(marks, proc)
        if not pids:
            break
        seen.update(pids)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(SWEEP_PAUSE_S)
    return seen


def _reap(groups: set[int], dirs: set[bytes], marks: Collection[bytes] = ()) -> None:
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    if marks:
        kill_carriers(marks)
    deadline = time.monotonic() + _RMTREE_TRIES_S
    for path in dirs:
        # A process killed a moment ago may still finish a write into the tree.
        while True:
            remove_tree(path)
            if not os.path.lexists(path) or time.monotonic() > deadline:
                break
            time.sleep(0.05)


def main() -> int:
    """The reaper: read records until capeval quits or dies; clean up only if it died."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if "--detach" in sys.argv[1:] and os.fork() > 0:
        os._exit(0)  # the reaper goes on in the child, no longer capeval's child
    groups: set[int] = set()
    dirs: set[bytes] = set()
    marks: set[bytes] = set()
    pending = b""
    while chunk := os.read(0, 65536):
        *records, pending = (pending + chunk).split(_END)
        for record in records:
            kind, arg = record[:2], record[2:]
            if record == _QUIT:
                return 0
            if kind == b"+g":
                groups.add(int(arg))
            elif kind == b"-g":
                groups.discard(int(arg))
            elif kind == b"+d":
                dirs.add(arg)
            elif kind == b"-d":
                dirs.discard(arg)
            elif kind == b"+m":
                marks.add(arg)
            elif kind == b"-m":
                marks.discard(arg)
    _reap(groups, dirs, marks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
