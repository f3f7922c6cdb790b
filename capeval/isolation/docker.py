"""The `docker` backend: one container per sandboxed command (docs/isolation.md#docker).

`docker run --rm --init` of the configured image, with only the command's own
folders mounted (at their own paths, so paths in the command mean the same
in the container), the agent CLI's install tree and capeval itself mounted
read-only, `--network host|bridge|none`, `--memory`, `--pids-limit`,
`--cpus`, every capability dropped, no new privileges, and no variable of
the host's environment but those of the sandbox's allow-list, each passed
by name (`-e NAME`) so no value shows on a command line. The Docker CLI is
found on `PATH` and talks to whatever daemon `DOCKER_HOST` (or its context)
names: a local daemon on another socket, a rootless one, Podman's
compatible socket or CLI. A remote daemon must see the same paths (the
repeat's folders are bind-mounted).

The container is removed however the command ends: `--rm` on a normal exit,
`docker rm -f` after a timeout or a cancel (the CLI forwards SIGTERM, but a
killed CLI leaves its container running).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import capeval
from capeval.isolation.bridge import INSIDE
from capeval.isolation.paths import install_tree, outermost
from capeval.isolation.sandbox import Sandbox
from capeval.proc.process import ProcessResult, run_process

# What the Docker CLI itself reads from capeval's environment.
CLI_VARS: tuple[str, ...] = (
    "PATH",
    "HOME",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_TLS_VERIFY",
    "DOCKER_CERT_PATH",
    "DOCKER_API_VERSION",
    "CONTAINER_HOST",
)
NETWORK_FLAGS = {"shared": "host", "bridge": "bridge", "none": "none"}
REMOVE_TIMEOUT_S = 60.0
# `docker run`'s own failures, not the command's: the image, the daemon, the mounts.
DOCKER_ERROR_EXIT = 125


def docker_cli() -> str:
    return shutil.which("docker") or "docker"


def cli_environment(source: Mapping[str, str] | None = None) -> dict[str, str]:
    src = os.environ if source is None else source
    return {k: src[k] for k in CLI_VARS if k in src}


def capeval_parent() -> Path:
    return Path(capeval.__file__).resolve().parent.parent


class DockerSandbox(Sandbox):
    backend = "docker"
    resolves_in_image = True

    def python(self) -> list[str]:
        return ["python3"]

    def python_env(self) -> dict[str, str]:
        return {"PYTHONPATH": str(capeval_parent())}

    def arguments(
        self, name: str, cwd: Path, env: Mapping[str, str], tools: Sequence[str | Path]
    ) -> list[str]:
        """`docker run`'s options, up to the image."""
        iso, box = self.isolation, self.confinement
        args = ["run", "--rm", "--init", "--name", name, "--hostname", "capeval"]
        args += ["--network", NETWORK_FLAGS[iso.network]]
        args += ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
        if os.geteuid() != 0:  # files it writes in the workdir stay capeval's
            args += ["--user", f"{os.geteuid()}:{os.getegid()}"]
        limits = iso.limits
        if limits.memory is not None:
            args += ["--memory", str(limits.memory), "--memory-swap", str(limits.memory)]
        if limits.pids is not None:
            args += ["--pids-limit", str(limits.pids)]
        if limits.cpus is not None:
            args += ["--cpus", f"{limits.cpus:g}"]
        if limits.cpu_seconds is not None:
            args += ["--ulimit", f"cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}"]
        if limits.disk is not None:
            args += ["--ulimit", f"fsize={limits.disk}:{limits.disk}"]
        for path in box.writable:
            args += ["-v", f"{path}:{path}"]
        readable = [*box.readable, capeval_parent() / "capeval"]
        readable += [install_tree(t) for t in tools if os.path.isabs(str(t))]
        writable = set(box.writable)
        for path in outermost(Path(p) for p in readable):
            if path not in writable:
                args += ["-v", f"{path}:{path}:ro"]
        if box.http is not None and not self.shares_network:
            args += ["-v", f"{box.http.socket}:{INSIDE}"]
        args += ["-w", str(cwd)]
        for key, value in env.items():
            if key == "PATH":
                continue  # the image's PATH: the host's names no folder in it
            if key in CLI_VARS:
                args += ["-e", f"{key}={value}"]  # the CLI's own value would win otherwise
            else:
                args += ["-e", key]  # the value from the CLI's environment, off its command line
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
        from capeval.proc.process import SCOPE_VAR

        name = f"capeval-{self.confinement.name}-{secrets.token_hex(4)}"
        # The repeat's mark goes in too: the watchman and the end-of-repeat sweep
        # find the container's processes by it (they are host processes).
        inner = {**env, SCOPE_VAR: ""}
        payload = self.payload(argv)
        command = [
            docker_cli(),
            *self.arguments(name, cwd, inner, tools),
            "--entrypoint",
            payload[0],
            str(self.isolation.image),
            *payload[1:],
        ]
        outer = {**cli_environment(), **{k: v for k, v in env.items() if k not in CLI_VARS}}
        result: ProcessResult | None = None
        try:
            result = run_process(
                command, cwd=cwd, env=outer, timeout_s=timeout_s, kill_grace_s=kill_grace_s
            )
            return result
        finally:
            if result is None or result.timed_out or result.cancelled or result.exit_code >= 128:
                _remove(name)


def _remove(name: str) -> None:
    """`docker rm -f NAME`, quietly: the container may be gone already.

    Not through `run_process`: after a timeout or Ctrl-C the repeat's scope
    refuses new children, and this one must still run.
    """
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            [docker_cli(), "rm", "-f", name],
            env=cli_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=REMOVE_TIMEOUT_S,
            check=False,
        )
