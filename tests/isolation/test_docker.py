"""The docker sandbox: the `docker run` it builds, and, against a real daemon, what it confines."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from capeval.core.isolation import Isolation, Limits
from capeval.isolation.bridge import INSIDE, HttpBridge
from capeval.isolation.docker import DockerSandbox
from capeval.isolation.sandbox import Confinement
from capeval.runner.httpfixture import HttpFixture
from tests.sandboxes import docker_image

ENV = {"LANG": "C.UTF-8"}


def box(tmp_path: Path, image: str = "img:1", **iso: object) -> tuple[DockerSandbox, Path]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    hidden = tmp_path / "workspace"
    hidden.mkdir(exist_ok=True)
    http = iso.pop("http", None)
    confinement = Confinement(
        name="t",
        writable=(work,),
        hidden=(hidden,),
        protected=(hidden,),
        http=http,  # type: ignore[arg-type]
    )
    return DockerSandbox(Isolation(backend="docker", image=image, **iso), confinement), work  # type: ignore[arg-type]


def test_the_run_passes_values_by_name_and_mounts_only_its_folders(tmp_path: Path) -> None:
    sandbox, work = box(tmp_path, network="none", limits=Limits(memory=1 << 30, pids=64, cpus=1.5))
    env = {"PATH": "/host/bin", "HOME": str(work), "ANTHROPIC_API_KEY": "sk-secret"}
    args = sandbox.arguments("capeval-x", work, env, tools=("/opt/agent/bin/claude",))
    assert "sk-secret" not in " ".join(args)
    assert args[args.index("ANTHROPIC_API_KEY") - 1 :][:2] == ["-e", "ANTHROPIC_API_KEY"]
    assert f"HOME={work}" in args and "PATH" not in " ".join(a for a in args if "=" in a)
    assert args[args.index("--network") + 1] == "none"
    assert args[args.index("--memory") + 1] == str(1 << 30)
    assert args[args.index("--pids-limit") + 1] == "64" and args[args.index("--cpus") + 1] == "1.5"
    assert args[args.index("--cap-drop") :][:2] == ["--cap-drop", "ALL"]
    mounts = [args[i + 1] for i, a in enumerate(args) if a == "-v"]
    assert f"{work}:{work}" in mounts and "/opt/agent/bin:/opt/agent/bin:ro" in mounts
    assert not any(str(tmp_path / "workspace") in m for m in mounts)


def test_network_shared_is_the_hosts_and_bridge_is_dockers(tmp_path: Path) -> None:
    for network, flag in (("shared", "host"), ("bridge", "bridge")):
        sandbox, work = box(tmp_path, network=network)
        args = sandbox.arguments("n", work, {}, ())
        assert args[args.index("--network") + 1] == flag


@pytest.mark.slow
def test_a_container_sees_its_workdir_only_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = docker_image()
    monkeypatch.setenv("CAPEVAL_TEST_OUTER_SECRET", "s3cr3t-value")
    sandbox, work = box(tmp_path, image=image)
    tag = f"1003.{os.getpid()}9"
    script = (
        f"echo ok > done.txt; ls {tmp_path}/workspace; cat /proc/*/environ | tr '\\0' '\\n'; "
        f"(setsid env -i sleep {tag} &); echo end"
    )
    done = sandbox.run(["bash", "-c", script], cwd=work, env={**ENV, "HOME": str(work)},
                       timeout_s=60)  # fmt: skip
    out = (done.stdout + done.stderr).decode()
    assert done.exit_code == 0, out
    assert (work / "done.txt").read_text() == "ok\n"
    assert "No such file or directory" in out and "s3cr3t-value" not in out
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", f"sleep {tag}"], capture_output=True, text=True)
    assert left.stdout.strip() == ""


@pytest.mark.slow
def test_a_timed_out_container_is_removed(tmp_path: Path) -> None:
    image = docker_image()
    sandbox, work = box(tmp_path, image=image)
    done = sandbox.run(["sleep", "60"], cwd=work, env={**ENV, "HOME": str(work)}, timeout_s=3,
                       kill_grace_s=1)  # fmt: skip
    assert done.timed_out and done.exit_code == 124
    listed = subprocess.run(
        ["docker", "ps", "-a", "--filter", "name=capeval-t-", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
    )
    assert listed.stdout.strip() == ""


@pytest.mark.slow
def test_network_none_reaches_the_fixture_through_its_socket_only(
    tmp_path: Path,
) -> None:
    image = docker_image()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    sock = tmp_path / "h.sock"
    try:
        with HttpFixture(unix_socket=sock) as fixture:
            bridge = HttpBridge(sock, fixture.port)
            sandbox, work = box(tmp_path, image=image, network="none", http=bridge)
            script = (
                f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo reached || echo refused; "
                f"python3 -c 'import urllib.request as u; "
                f'print(u.urlopen("{fixture.url}/token.txt").read().decode())\''
            )
            done = sandbox.run(["bash", "-c", script], cwd=work,
                               env={**ENV, "HOME": str(work)}, timeout_s=60)  # fmt: skip
            token = fixture.token
    finally:
        server.close()
    out = (done.stdout + done.stderr).decode()
    assert done.exit_code == 0, out
    assert "refused" in out and token in out
    assert INSIDE.startswith("/tmp/")
