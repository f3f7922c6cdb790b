"""Resource limits of a bwrap sandbox: cgroups for memory, pids and CPUs; rlimits for the rest.

`memory`, `pids` and `cpus` limit the sandbox's whole process tree, so they
need a cgroup: one is made per sandboxed process, inside capeval's own (the
limits nest within whatever capeval itself runs under), under cgroup v1
(one hierarchy per controller) or v2 (one hierarchy, with the controllers
enabled for capeval's cgroup). The sandbox joins it before bwrap starts, so
nothing it forks escapes it, and whatever is left in it when the sandbox
ends is killed before the cgroup is removed. `cpu_seconds` (CPU time per
process) and `disk` (the largest file a process may write) are rlimits set
with util-linux's `prlimit`; `disk` also sizes the sandbox's private `/tmp`.

A limit the host cannot enforce is refused before the run starts
(`limits_problem`), never silently dropped.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shlex
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from capeval.core.isolation import Limits

CGROUP_LIMITS: dict[str, str] = {"memory": "memory", "pids": "pids", "cpus": "cpu"}
CPU_PERIOD_US = 100_000
_EMPTY_WAIT_S = 2.0


class LimitError(RuntimeError):
    """A limit this host cannot enforce; the message names the fix."""


@dataclass(frozen=True)
class Hierarchy:
    """Where capeval's own cgroup of one controller is, and which version it is."""

    version: int  # 1 or 2
    own: Path  # capeval's cgroup folder


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(mount point, mount root, fs type, super options) of every cgroup mount."""
    out = []
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(rest) < 3:
            continue
        if rest[0] in ("cgroup", "cgroup2"):
            opts = set(rest[2].split(","))
            out.append((_unescape(fields[4]), _unescape(fields[3]), rest[0], opts))
    return out


def _unescape(text: str) -> str:
    return text.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")


def find_hierarchies(
    mountinfo: str, self_cgroup: str, mount_prefix: str = ""
) -> dict[str, Hierarchy]:
    """capeval's cgroup per controller (memory, pids, cpu) from its mountinfo and
    /proc/self/cgroup; `mount_prefix` re-roots the mount points (tests)."""
    mounts = _mounts(mountinfo)
    paths: dict[str, str] = {}
    unified: str | None = None
    for line in self_cgroup.splitlines():
        hid, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hid == "0" and controllers == "":
            unified = path
        for name in controllers.split(","):
            if name:
                paths[name] = path
    out: dict[str, Hierarchy] = {}
    for controller in set(CGROUP_LIMITS.values()):
        for point, root, fstype, opts in mounts:
            if fstype == "cgroup" and controller in opts and controller in paths:
                own = _inside(point, root, paths[controller], mount_prefix)
                out[controller] = Hierarchy(1, own)
                break
        else:
            v2 = next((m for m in mounts if m[2] == "cgroup2"), None)
            if v2 is not None and unified is not None:
                own = _inside(v2[0], v2[1], unified, mount_prefix)
                offered = _read(own / "cgroup.controllers").split()
                if controller in offered:
                    out[controller] = Hierarchy(2, own)
    return out


def _inside(point: str, root: str, path: str, prefix: str) -> Path:
    rel = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
    base = Path(prefix + point)
    return base if rel in (".", "") else base / rel.lstrip("/")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@functools.lru_cache(maxsize=1)
def hierarchies() -> dict[str, Hierarchy]:
    """This process's cgroups of the controllers limits use (Linux; empty elsewhere)."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text()
        own = Path("/proc/self/cgroup").read_text()
    except OSError:
        return {}
    return find_hierarchies(mountinfo, own)


def limits_problem(limits: Limits, found: dict[str, Hierarchy] | None = None) -> str | None:
    """Why this host cannot enforce `limits` in a bwrap sandbox, or None."""
    found = hierarchies() if found is None else found
    for key, controller in CGROUP_LIMITS.items():
        if getattr(limits, key) is None:
            continue
        hierarchy = found.get(controller)
        if hierarchy is None:
            return (
                f"limits.{key} needs the cgroup {controller} controller, which this host does "
                f'not offer to capeval; remove limits.{key}, or use isolation = "docker"'
            )
        problem = _writable_problem(hierarchy, controller)
        if problem:
            return f"limits.{key}: {problem}"
    if (limits.cpu_seconds is not None or limits.disk is not None) and not shutil.which("prlimit"):
        key = "cpu_seconds" if limits.cpu_seconds is not None else "disk"
        return (
            f"limits.{key} is set with prlimit, which is not installed: install util-linux, "
            f"or remove limits.{key}"
        )
    return None


def _writable_problem(hierarchy: Hierarchy, controller: str) -> str | None:
    own = hierarchy.own
    if not os.access(own, os.W_OK):
        return (
            f"capeval cannot make cgroups in {own} (cgroup v{hierarchy.version}, not writable by "
            "this user): run capeval as root, or in a cgroup delegated to it (e.g. "
            "systemd-run --user --scope -p Delegate=yes capeval run ...), or remove the limit"
        )
    if hierarchy.version == 2:
        enabled = _read(own / "cgroup.subtree_control").split()
        has_procs = bool(_read(own / "cgroup.procs").strip())
        if controller not in enabled and has_procs and own != Path("/sys/fs/cgroup"):
            return (
                f"the {controller} controller is not enabled below capeval's cgroup {own}, and "
                "cgroup v2 cannot enable it while capeval's own processes are in it: start "
                "capeval in a delegated cgroup with the controller on (e.g. systemd-run --user "
                "--scope -p Delegate=yes capeval run ...)"
            )
    return None


@dataclass
class Cgroup:
    """The cgroups one sandboxed process tree runs in (one per v1 hierarchy, one for v2)."""

    dirs: list[Path] = field(default_factory=list)

    @classmethod
    def create(cls, name: str, limits: Limits) -> Cgroup:
        """Make and configure the cgroups for `limits`; raises LimitError."""
        found = hierarchies()
        group = cls()
        token = f"capeval-{name}-{secrets.token_hex(4)}"
        try:
            wanted = {c: h for k, c in CGROUP_LIMITS.items() if getattr(limits, k) is not None
                      for h in [found.get(c)] if h is not None}  # fmt: skip
            made: dict[Path, Path] = {}
            for controller, hierarchy in wanted.items():
                if hierarchy.own not in made:
                    if hierarchy.version == 2:
                        _enable(hierarchy.own, [c for c, h in wanted.items() if h.version == 2])
                    path = hierarchy.own / token
                    path.mkdir()
                    made[hierarchy.own] = path
                    group.dirs.append(path)
                _configure(made[hierarchy.own], controller, hierarchy.version, limits)
        except OSError as exc:
            group.remove()
            raise LimitError(f"cannot set up the sandbox's cgroup: {exc}") from None
        return group

    def join_script(self) -> str:
        """Shell commands that move the shell (then what it execs) into the cgroups."""
        return "".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))} && " for d in self.dirs)

    def join_argv(self) -> list[str]:
        """A prefix that moves the command into the cgroups before it starts."""
        if not self.dirs:
            return []
        return ["/bin/sh", "-c", f'{self.join_script()}exec "$@"', "capeval-sandbox"]

    def remove(self) -> None:
        """Kill what is left in the cgroups, then remove them."""
        for path in self.dirs:
            deadline = time.monotonic() + _EMPTY_WAIT_S
            while True:
                pids = [int(p) for p in _read(path / "cgroup.procs").split() if p.isdigit()]
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
        self.dirs = []


def _enable(own: Path, controllers: list[str]) -> None:
    enabled = _read(own / "cgroup.subtree_control").split()
    missing = [c for c in controllers if c not in enabled]
    if missing:
        (own / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))


def _configure(path: Path, controller: str, version: int, limits: Limits) -> None:
    if controller == "memory" and limits.memory is not None:
        if version == 1:
            (path / "memory.limit_in_bytes").write_text(str(limits.memory))
            swap = path / "memory.memsw.limit_in_bytes"
            if swap.exists():  # memory and swap together: no escape into swap
                swap.write_text(str(limits.memory))
        else:
            (path / "memory.max").write_text(str(limits.memory))
            swap = path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
    elif controller == "pids" and limits.pids is not None:
        (path / "pids.max").write_text(str(limits.pids))
    elif controller == "cpu" and limits.cpus is not None:
        quota = max(1000, int(limits.cpus * CPU_PERIOD_US))
        if version == 1:
            (path / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (path / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")


def rlimit_argv(limits: Limits) -> list[str]:
    """`prlimit ...` for the per-process limits, or nothing when none is set."""
    args = []
    if limits.cpu_seconds is not None:
        # SIGXCPU at the soft limit, SIGKILL a second later.
        args.append(f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}")
    if limits.disk is not None:
        args.append(f"--fsize={limits.disk}:{limits.disk}")
    return ["prlimit", *args, "--"] if args else []
