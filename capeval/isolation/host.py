"""Which backends work on this host, and why not (`capeval doctor`, and the run's refusals).

Each check starts the real tool: bwrap with the namespaces a repeat uses,
the Docker CLI against its daemon, and, for an image, `docker image
inspect`. A failure is put in words a user can act on: the package to
install, the kernel setting that forbids user namespaces, the daemon that
does not answer.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.core.isolation import Isolation, isolation_problem
from capeval.isolation.docker import cli_environment
from capeval.isolation.limits import limits_problem

CHECK_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Status:
    """Whether one backend (or a part of one) works here, and what it said or why not."""

    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def _run(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    try:
        proc = subprocess.run(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]} did not answer within {CHECK_TIMEOUT_S:g} s"
    except OSError as exc:
        return 127, "", str(exc)
    return proc.returncode, proc.stdout.strip(), proc.stderr.strip()


def _sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", *name.split(".")).read_text().strip()
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def bwrap_status() -> Status:
    exe = shutil.which("bwrap")
    if exe is None:
        return Status(
            "bwrap",
            False,
            "bwrap not found on PATH: install bubblewrap (Debian/Ubuntu: apt-get install "
            "bubblewrap; Fedora: dnf install bubblewrap)",
        )
    probe = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    probe += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"]
    probe += ["--die-with-parent", "--", "true"]
    code, _, err = _run(probe, {})
    if code == 0:
        _, version, _ = _run([exe, "--version"], {})
        return Status("bwrap", True, f"{version or 'bwrap'} at {exe}: namespaces work")
    return Status("bwrap", False, _bwrap_failure(err))


def _bwrap_failure(err: str) -> str:
    said = err.splitlines()[-1] if err else "no message"
    if os.geteuid() != 0:
        if _sysctl("kernel.unprivileged_userns_clone") == "0":
            return (
                f"bwrap cannot make namespaces ({said}): user namespaces are disabled for "
                "unprivileged users (kernel.unprivileged_userns_clone = 0); enable them "
                "(sysctl -w kernel.unprivileged_userns_clone=1) or run capeval as root"
            )
        if _sysctl("user.max_user_namespaces") == "0":
            return (
                f"bwrap cannot make namespaces ({said}): user.max_user_namespaces is 0; "
                "raise it (sysctl -w user.max_user_namespaces=15000) or run capeval as root"
            )
        if _sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1":
            return (
                f"bwrap cannot make namespaces ({said}): AppArmor restricts unprivileged user "
                "namespaces (kernel.apparmor_restrict_unprivileged_userns = 1); allow bwrap "
                "in an AppArmor profile, or run capeval as root"
            )
    return f"bwrap does not run here: {said}"


@functools.lru_cache(maxsize=1)
def docker_status() -> Status:
    exe = shutil.which("docker")
    if exe is None:
        return Status(
            "docker",
            False,
            "docker CLI not found on PATH: install it (Debian/Ubuntu: apt-get install "
            "docker.io), or Podman with its docker-compatible CLI",
        )
    env = cli_environment()
    where = env.get("DOCKER_HOST") or "the default socket (set DOCKER_HOST to choose another)"
    code, out, err = _run([exe, "version", "--format", "{{.Server.Version}}"], env)
    if code != 0 or not out:
        said = err.splitlines()[-1] if err else "no answer"
        return Status(
            "docker",
            False,
            f"no Docker daemon answers at {where}: {said}; start dockerd, or point "
            "DOCKER_HOST at a running daemon",
        )
    return Status("docker", True, f"daemon {out} at {where}")


@functools.lru_cache(maxsize=32)
def image_status(image: str) -> Status:
    env = cli_environment()
    code, out, err = _run(["docker", "image", "inspect", "--format", "{{.Id}}", image], env)
    if code != 0:
        said = err.splitlines()[-1] if err else "not found"
        return Status(
            f"image {image}",
            False,
            f"image {image!r} is not on the daemon ({said}): docker pull or build it first",
        )
    return Status(f"image {image}", True, out[:19])


@functools.lru_cache(maxsize=1)
def docker_limits() -> dict[str, bool]:
    """What the daemon says it can limit."""
    code, out, _ = _run(["docker", "info", "--format", "{{json .}}"], cli_environment())
    try:
        info = json.loads(out) if code == 0 else {}
    except ValueError:
        info = {}
    return {
        "memory": bool(info.get("MemoryLimit", True)),
        "pids": bool(info.get("PidsLimit", True)),
        "cpus": bool(info.get("CPUCfsQuota", True)),
    }


def bwrap_limits() -> dict[str, str | None]:
    """Each limit key: None when a bwrap sandbox can enforce it here, else why not."""
    from capeval.core.isolation import LIMIT_KEYS, Limits

    samples: dict[str, Any] = {
        "memory": 1 << 30,
        "pids": 64,
        "cpu_seconds": 60,
        "cpus": 1.0,
        "disk": 1 << 30,
    }
    return {key: limits_problem(Limits(**{key: samples[key]})) for key in LIMIT_KEYS}


def backend_status(backend: str) -> Status:
    if backend == "bwrap":
        return bwrap_status()
    if backend == "docker":
        return docker_status()
    return Status("none", True, "no sandbox: the agent runs as you, with your files")


def host_problem(iso: Isolation) -> str | None:
    """Why `iso` cannot run on this host, or None; the message names the fix."""
    problem = isolation_problem(iso)
    if problem:
        return problem
    if not iso.sandboxed:
        return None
    status = backend_status(iso.backend)
    if not status.ok:
        return f'isolation = "{iso.backend}": {status.detail}'
    if iso.backend == "bwrap":
        problem = limits_problem(iso.limits)
        return f'isolation = "bwrap": {problem}' if problem else None
    image = image_status(str(iso.image))
    if not image.ok:
        return f'isolation = "docker": {image.detail}'
    can = docker_limits()
    for key in ("memory", "pids", "cpus"):
        if getattr(iso.limits, key) is not None and not can[key]:
            return (
                f'isolation = "docker": the daemon cannot enforce limits.{key} (its cgroups '
                f"lack the controller); remove limits.{key} or use another daemon"
            )
    return None


def clear_cache() -> None:
    """Forget what was found (tests, and `doctor` after a change)."""
    for cached in (bwrap_status, docker_status, image_status, docker_limits):
        cached.cache_clear()
