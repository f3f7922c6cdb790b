"""Which backends work here, and why not, in words a user can act on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from capeval.core.isolation import Isolation, Limits
from capeval.isolation import host


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    host.clear_cache()
    yield
    host.clear_cache()


def test_no_bwrap_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host.shutil, "which", lambda name: None)
    status = host.bwrap_status()
    assert not status.ok and "install bubblewrap" in status.detail
    problem = host.host_problem(Isolation(backend="bwrap"))
    assert problem is not None and problem.startswith('isolation = "bwrap": bwrap not found')


def test_no_docker_cli_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host.shutil, "which", lambda name: None)
    status = host.docker_status()
    assert not status.ok and "docker.io" in status.detail


def test_no_daemon_names_the_socket_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if host.shutil.which("docker") is None:
        pytest.skip("docker CLI not installed (apt-get install docker.io; .ci/run installs it)")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    status = host.docker_status()
    assert not status.ok
    assert f"unix://{tmp_path}/none.sock" in status.detail and "start dockerd" in status.detail


def test_what_cannot_run_anywhere_comes_first() -> None:
    problem = host.host_problem(Isolation(backend="docker"))
    assert problem is not None and "needs an image" in problem


def test_none_always_works_and_needs_no_check() -> None:
    assert host.host_problem(Isolation()) is None
    assert host.backend_status("none").ok


def test_bwrap_says_which_limits_it_enforces_here() -> None:
    found = host.bwrap_limits()
    assert set(found) == {"memory", "pids", "cpu_seconds", "cpus", "disk"}
    assert all(v is None or "limits." in v for v in found.values())


def test_a_limit_the_host_cannot_enforce_is_refused_before_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(host, "bwrap_status", lambda: host.Status("bwrap", True, "ok"))
    monkeypatch.setattr(host, "limits_problem", lambda limits: "limits.pids needs the cgroup")
    problem = host.host_problem(Isolation(backend="bwrap", limits=Limits(pids=5)))
    assert problem == 'isolation = "bwrap": limits.pids needs the cgroup'
