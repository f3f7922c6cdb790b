"""Commands that write a file never replace a device, and never follow a link out.

Regression: `capeval report -o /dev/null`, run as root, renamed a regular file
over the machine's /dev/null. The devices here are nodes the tests make in a
temp folder (mknod, as root), never the machine's own.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.clirun import capeval

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "evals" / "capability" / "samples"
BASE, CAND = SAMPLES / "run1-dev-sloppy.jsonl", SAMPLES / "run4-dev-fixed.jsonl"


@pytest.fixture
def null_device(tmp_path: Path) -> Path:
    node = tmp_path / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD)")
    return node


@pytest.fixture
def link_out(tmp_path: Path) -> tuple[Path, Path]:
    """A link in a results folder pointing at a file outside it."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    results = tmp_path / "results"
    results.mkdir()
    return results, victim


@pytest.mark.slow
def test_report_to_a_device_writes_into_it_and_leaves_it_a_device(null_device: Path) -> None:
    proc = capeval("report", "--baseline", BASE, "--candidate", CAND, "-o", null_device)
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert f"wrote {null_device}" in proc.stderr
    assert stat.S_ISCHR(null_device.stat().st_mode)


@pytest.mark.slow
def test_report_through_a_link_out_of_its_folder_is_refused(link_out: tuple[Path, Path]) -> None:
    results, victim = link_out
    (results / "report.md").symlink_to(victim)
    proc = capeval("report", "--baseline", BASE, "--candidate", CAND, "-o", results / "report.md")
    assert proc.returncode == 2
    assert "outside the folder the link is in" in proc.stderr and "Traceback" not in proc.stderr
    assert victim.read_text() == "keep me"


@pytest.mark.slow
def test_plot_through_a_link_out_of_its_folder_is_refused(link_out: tuple[Path, Path]) -> None:
    results, victim = link_out
    (results / "h.png").symlink_to(victim)
    proc = capeval("plot", "heatmap", SAMPLES, "-o", results / "h.png")
    assert proc.returncode == 2, proc.stderr
    assert "outside the folder the link is in" in proc.stderr
    assert victim.read_text() == "keep me"


def test_a_run_stream_on_a_device_is_refused(null_device: Path, tmp_path: Path) -> None:
    proc = capeval("run", "--jsonl", null_device, "-q", cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    assert "the row stream must be one" in proc.stderr
    assert stat.S_ISCHR(null_device.stat().st_mode)


def test_a_baseline_on_a_device_is_refused(null_device: Path) -> None:
    proc = capeval("baseline", "freeze", "--out", null_device, cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    assert "a baseline must be one" in proc.stderr
    assert stat.S_ISCHR(null_device.stat().st_mode)
    assert not Path(f"{null_device}.new").exists()
