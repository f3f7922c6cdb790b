"""The `bwrap` backend: bubblewrap on Linux (docs/isolation.md#bwrap).

The command sees the host's filesystem read-only, with masks: a fresh
`/tmp`, `/var/tmp`, `/run` and `/dev/shm`, an empty folder over the user's
home, the workspace, the results and the run's temp folder; then, bound at
their own paths, its writable folders (workdir, temp dir, capture dir, home)
and its read-only ones (the grader's copy of the case). What it needs from
under a mask (the Python running capeval, an agent CLI's install tree, a
`PATH` entry) is shown again read-only (`capeval.isolation.paths`).

It gets new PID, IPC, UTS and cgroup namespaces, so it sees only its own
processes in `/proc` and cannot signal capeval, the watchman or another
repeat; with `network = "none"` a network namespace too. As root, every
capability is dropped (a root without them cannot remount the host
writable). bwrap starts with exactly the sandbox's environment, so nothing
of capeval's shows in `/proc/1/environ`. When the command ends, bwrap's
namespace init is killed, and with it every process of the sandbox,
`setsid` daemons included; `--die-with-parent` does the same if capeval
dies. bwrap itself ignores SIGTERM (the command gets the default back with
`env --default-signal`), so a timeout's SIGTERM to the process group reaches
the command alone and it ends as it would unconfined; SIGKILL follows after
the grace period.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import capeval
from capeval.isolation.bridge import INSIDE
from capeval.isolation.limits import Cgroup, rlimit_argv
from capeval.isolation.paths import exposures, install_tree, outermost, real, within
from capeval.isolation.sandbox import Sandbox
from capeval.proc.process import ProcessResult, run_process

# Always masked: shared scratch space and runtime sockets (a Docker socket is
# root on the host).
MASKED: tuple[str, ...] = ("/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm")
_NS_GONE_WAIT_S = 2.0


def masks(hidden: Sequence[Path], home: str | None = None) -> list[Path]:
    """Every folder masked, outermost only; files are handled apart (`hidden_files`)."""
    found = [Path(p) for p in MASKED]
    if home:
        found.append(real(home))
    if os.geteuid() == 0:
        found.append(Path("/root"))
    found += [real(p) for p in hidden if os.path.isdir(p)]
    return outermost(p for p in found if os.path.isdir(p) and not os.path.islink(p))


def hidden_files(hidden: Sequence[Path], folders: Sequence[Path]) -> list[Path]:
    """Hidden files (a baseline outside the workspace) no masked folder already covers."""
    files = [real(p) for p in hidden if os.path.isfile(p)]
    return [f for f in files if not any(within(f, m) for m in folders)]


def needed_paths(tools: Sequence[str | Path]) -> list[Path]:
    """What a sandboxed command may need from under a mask."""
    found = [Path(sys.prefix), Path(sys.base_prefix), real(sys.executable).parent]
    found.append(Path(capeval.__file__).resolve().parent)
    found += [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(p)]
    found += [install_tree(t) for t in tools]
    found.append(real("/etc/resolv.conf"))  # often a link into /run
    return found


class BwrapSandbox(Sandbox):
    backend = "bwrap"

    def arguments(self, cwd: Path, tools: Sequence[str | Path] = ()) -> list[str]:
        """bwrap's arguments (before `--` and the command)."""
        box = self.confinement
        args = [
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            *_host_view(
                box.hidden,
                box.protected,
                tuple(str(t) for t in tools),
                os.environ.get("HOME"),
                os.environ.get("PATH", ""),
                self.isolation.limits.disk,
            ),
        ]
        for path in box.writable:
            args += ["--bind", str(path), str(path)]
        for path in box.readable:
            args += ["--ro-bind", str(path), str(path)]
        if box.http is not None and not self.shares_network:
            args += ["--bind", str(box.http.socket), INSIDE]
        args += ["--chdir", str(cwd), "--hostname", "capeval"]
        args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if self.isolation.network == "none":
            args.append("--unshare-net")
        if os.geteuid() == 0:
            args += ["--cap-drop", "ALL"]
        args.append("--die-with-parent")
        return args

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout_s: float | None,
        kill_grace_s: float = 5.0,
        tools: Sequence[str | Path] = (),
    ) -> ProcessResult:
        limits = self.isolation.limits
        group = Cgroup.create(self.confinement.name, limits) if _cgroup_limits(limits) else None
        info_read, info_write = os.pipe()
        try:
            # bwrap itself ignores SIGTERM, and the command gets it back: a timeout's
            # SIGTERM to the process group then reaches the command alone, which can
            # end as it would unconfined. Died bwrap at once, the kernel would kill
            # the sandbox mid-cleanup (--die-with-parent).
            reset = _default_signal()
            ignore = "trap '' TERM; " if reset else ""
            joined = group.join_script() if group is not None else ""
            command = [
                "/bin/sh",
                "-c",
                f'{ignore}{joined}exec "$@"',
                "capeval-sandbox",
                *rlimit_argv(limits),
                "bwrap",
                "--info-fd",
                str(info_write),
                *self.arguments(cwd, tools),
                "--",
                *reset,
                *self.payload(argv),
            ]
            try:
                return run_process(
                    command,
                    cwd=cwd,
                    env=env,
                    timeout_s=timeout_s,
                    kill_grace_s=kill_grace_s,
                    pass_fds=(info_write,),
                )
            finally:
                os.close(info_write)
                info_write = -1
                _end_namespace(_child_pid(info_read))
        finally:
            if info_write >= 0:
                os.close(info_write)
            os.close(info_read)
            if group is not None:
                group.remove()


@functools.lru_cache(maxsize=64)
def _host_view(
    hidden: tuple[Path, ...],
    protected: tuple[Path, ...],
    tools: tuple[str, ...],
    home: str | None,
    path: str,
    disk: int | None,
) -> tuple[str, ...]:
    """The masks and what is shown again under them: the same for every repeat of a run
    (its folders are bound after these), so worked out once."""
    folders = masks(hidden, home)
    args: list[str] = []
    for folder in folders:
        if folder == Path("/tmp") and disk is not None:
            args += ["--size", str(disk)]
        args += ["--tmpfs", str(folder)]
    for file in hidden_files(hidden, folders):
        args += ["--ro-bind", "/dev/null", str(file)]
    for shown in exposures(needed_paths(tools), folders, protected):
        args += ["--ro-bind", str(shown), str(shown)]
    return tuple(args)


@functools.lru_cache(maxsize=1)
def _default_signal() -> tuple[str, ...]:
    """`env --default-signal=TERM` (coreutils 8.31 and later), or () where env lacks it."""
    env = shutil.which("env")
    if env is None:
        return ()
    try:
        done = subprocess.run(
            [env, "--default-signal=TERM", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    return (env, "--default-signal=TERM") if done.returncode == 0 else ()


def _cgroup_limits(limits: object) -> bool:
    return any(getattr(limits, key) is not None for key in ("memory", "pids", "cpus"))


def _child_pid(fd: int) -> int | None:
    """The pid (ours) of bwrap's init in the sandbox, from `--info-fd`; None if it never started."""
    data = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 65536):
            data += chunk
    try:
        pid = json.loads(data or b"{}").get("child-pid")
    except ValueError:
        return None
    return pid if isinstance(pid, int) and pid > 1 else None


def _end_namespace(pid: int | None) -> None:
    """Kill the sandbox's init, which takes every process of its PID namespace with it.

    Its parent (bwrap) is gone by now and `--die-with-parent` has asked the
    kernel to kill it; this makes sure, and waits until the namespace is empty,
    so that no daemon of the sandbox outlives its repeat.
    """
    if pid is None:
        return
    deadline = time.monotonic() + _NS_GONE_WAIT_S
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        if _is_zombie_or_gone(pid):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def _is_zombie_or_gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] == ["Z"]
