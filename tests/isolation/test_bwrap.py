"""The bwrap sandbox, for real: what the command can see, write, reach and leave behind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capeval.core.isolation import Isolation, Limits
from capeval.isolation.bridge import HttpBridge
from capeval.isolation.bwrap import BwrapSandbox
from capeval.isolation.sandbox import Confinement
from capeval.runner.httpfixture import HttpFixture
from tests.sandboxes import require


@pytest.fixture(autouse=True)
def _needs_bwrap() -> None:
    require("bwrap")


ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def box(tmp_path: Path, **iso: object) -> tuple[BwrapSandbox, Path]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    hidden = tmp_path / "workspace"
    hidden.mkdir(exist_ok=True)
    (hidden / "verify.sh").write_text("test -f done.txt\n")
    http = iso.pop("http", None)
    confinement = Confinement(
        name="t",
        writable=(work,),
        hidden=(hidden,),
        protected=(hidden,),
        http=http,  # type: ignore[arg-type]
    )
    return BwrapSandbox(Isolation(backend="bwrap", **iso), confinement), work  # type: ignore[arg-type]


def run(sandbox: BwrapSandbox, work: Path, script: str, timeout: float = 60) -> tuple[int, str]:
    done = sandbox.run(["bash", "-c", script], cwd=work, env={**ENV, "HOME": str(work)},
                       timeout_s=timeout)  # fmt: skip
    return done.exit_code, (done.stdout + done.stderr).decode()


def test_only_its_own_folders_are_writable_and_the_workspace_is_masked(tmp_path: Path) -> None:
    sandbox, work = box(tmp_path)
    code, out = run(
        sandbox,
        work,
        f"echo ok > done.txt; ls -A {tmp_path}/workspace; echo exit 0 >> {tmp_path}/workspace/verify.sh;"
        " touch /usr/escaped; echo end",
    )
    assert code == 0, out
    assert (work / "done.txt").read_text() == "ok\n"
    assert (tmp_path / "workspace" / "verify.sh").read_text() == "test -f done.txt\n"
    assert "No such file or directory" in out and "Read-only file system" in out
    assert not Path("/usr/escaped").exists()


def test_capevals_environment_is_nowhere_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPEVAL_TEST_OUTER_SECRET", "s3cr3t-value")
    sandbox, work = box(tmp_path)
    code, out = run(
        sandbox, work, "cat /proc/*/environ | tr '\\0' '\\n'; env; echo ---; ps -e -o comm="
    )
    assert code == 0, out
    assert "s3cr3t-value" not in out and "CAPEVAL_TEST_OUTER_SECRET" not in out
    # Only the sandbox's own processes: bwrap's init, the shell, ps.
    assert set(out.split("---")[1].split()) <= {"bwrap", "bash", "ps", "cat", "tr"}


def test_a_setsid_daemon_dies_with_the_sandbox(tmp_path: Path) -> None:
    sandbox, work = box(tmp_path)
    tag = f"1003.{os.getpid()}7"
    code, out = run(sandbox, work, f"(setsid env -i sleep {tag} &) ; echo started")
    assert code == 0, out
    left = subprocess.run(["pgrep", "-f", f"sleep {tag}"], capture_output=True, text=True)
    assert left.stdout.strip() == ""


def test_root_cannot_remount_the_host_writable(tmp_path: Path) -> None:
    sandbox, work = box(tmp_path)
    _, out = run(sandbox, work, "mount -o remount,rw / && touch /usr/escaped; echo $?")
    assert not Path("/usr/escaped").exists(), out


def test_with_network_none_the_hosts_loopback_is_out_of_reach(tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        sandbox, work = box(tmp_path, network="none")
        script = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo reached || echo refused"
        _code, out = run(sandbox, work, script)
        assert "refused" in out and "reached" not in out
        shared, work = box(tmp_path, network="shared")
        _, out = run(shared, work, script)
        assert "reached" in out
    finally:
        server.close()


def test_the_http_fixture_is_reachable_through_its_socket_with_network_none(
    tmp_path: Path,
) -> None:
    sock = tmp_path / "h.sock"
    with HttpFixture(unix_socket=sock) as fixture:
        bridge = HttpBridge(sock, fixture.port)
        sandbox, work = box(tmp_path, network="none", http=bridge)
        fetch = (
            f"{sys.executable} -c 'import urllib.request as u; "
            f'print(u.urlopen("{fixture.url}/token.txt").read().decode())\''
        )
        code, out = run(sandbox, work, fetch)
        token = fixture.token
    assert code == 0, out
    assert token in out


@pytest.mark.slow
def test_a_timeout_sends_sigterm_to_the_command_then_ends_the_sandbox(tmp_path: Path) -> None:
    sandbox, work = box(tmp_path)
    t0 = time.monotonic()
    done = sandbox.run(
        ["bash", "-c", "trap 'echo got TERM > term.txt; exit 3' TERM; sleep 60 & wait"],
        cwd=work,
        env={**ENV, "HOME": str(work)},
        timeout_s=3.0,  # time for bash to set its trap on a loaded machine
        kill_grace_s=5.0,
    )
    assert done.timed_out and done.exit_code == 124
    assert time.monotonic() - t0 < 15
    assert (work / "term.txt").read_text() == "got TERM\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroup limits need root (or a delegated cgroup)")
def test_pids_and_memory_limits_hold(tmp_path: Path) -> None:
    sandbox, work = box(tmp_path, limits=Limits(memory=64 << 20, pids=16))
    (work / "fork.py").write_text(
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    for _ in range(64):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(5)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError:\n"
        "    pass\n"
        "print('forked', n)\n"
    )
    (work / "alloc.py").write_text(
        "b = bytearray(256 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\nprint('got it')\n"
    )
    script = f"{sys.executable} fork.py; {sys.executable} alloc.py; echo memory exit $?"
    _, out = run(sandbox, work, script)
    forked = int(out.split("forked")[1].split()[0])
    assert forked < 16, out
    assert "got it" not in out and "memory exit 137" in out
