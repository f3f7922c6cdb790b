"""`capeval doctor`: what works on this host, why not, and what a sandbox really blocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandboxes import docker_image, require

REPO = Path(__file__).resolve().parents[2]


def doctor(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "capeval", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd or REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )


def test_it_says_which_backends_work_and_why_not(tmp_path: Path) -> None:
    proc = doctor(
        "--no-probe", "--json", "--backend", "docker",
        env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"}, cwd=tmp_path,
    )  # fmt: skip
    doc = json.loads(proc.stdout)
    by_name = {b["name"]: b for b in doc["backends"]}
    assert set(by_name) == {"none", "bwrap", "docker"}
    assert by_name["none"]["ok"] is True
    assert by_name["docker"]["ok"] is False
    assert f"unix://{tmp_path}/no.sock" in by_name["docker"]["detail"]
    assert proc.returncode == 1 and doc["ok"] is False
    assert any(p.startswith("docker: ") for p in doc["problems"])
    assert doc["probes"] == []


def test_a_root_that_is_no_workspace_is_bad_input(tmp_path: Path) -> None:
    proc = doctor("--root", str(tmp_path / "nowhere"), "--no-probe")
    assert proc.returncode == 2 and "capeval doctor: " in proc.stderr


@pytest.mark.slow
def test_the_bwrap_probe_reports_every_escape_blocked(tmp_path: Path) -> None:
    require("bwrap")
    if os.geteuid() != 0:
        pytest.skip("the probe's fork and memory escapes need cgroup limits: run as root")
    proc = doctor("--backend", "bwrap", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "probe in bwrap (network none, limits memory 256M, pids 128):" in proc.stdout
    for escape in ("grader via /proc/PPID/cwd", "row stream", "setsid env -i daemon",
                   "fork past the pids limit", "memory past the limit", "verdicts"):  # fmt: skip
        assert f"  blocked  {escape}: " in proc.stdout
    assert "OPEN" not in proc.stdout and proc.stdout.rstrip().endswith("=> ok")


@pytest.mark.slow
def test_the_docker_probe_uses_the_configured_image(tmp_path: Path) -> None:
    image = docker_image()
    root = tmp_path / "ws"
    (root / "evals/capability/cases").mkdir(parents=True)
    (root / "capeval.toml").write_text(f'isolation = "docker"\nimage = {json.dumps(image)}\n')
    proc = doctor("--root", str(root), "--json", cwd=tmp_path)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [p["backend"] for p in doc["probes"]] == ["docker"]
    assert doc["image"]["ok"] is True
    assert all(e["blocked"] is True for e in doc["probes"][0]["escapes"])
