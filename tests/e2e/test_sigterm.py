"""SIGTERM (a cancelled CI job, `timeout`) ends any command with exit 143 and leaves nothing behind.

Left to its default action, SIGTERM ended `capeval validate --graders` and
`capeval gate` on the spot (exit -15): repeat workdirs and temp copies of
result files stayed in $TMPDIR, and a grader's processes ran on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runhelpers import eventually, group_gone, write_case


def test_validate_graders_stopped_by_sigterm_cleans_up(tmp_path: Path) -> None:
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    root = tmp_path / "ws"
    pgid_file = tmp_path / "grader.pgid"
    grader = f"ps -o pgid= $$ > {pgid_file}.part; mv {pgid_file}.part {pgid_file}; sleep 60\n"
    write_case(root, "alpha", verify=grader)
    proc = subprocess.Popen(
        [sys.executable, "-m", "capeval.cli", "validate", "--root", str(root), "--graders"],
        env={**os.environ, "TMPDIR": str(tmpdir)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pgid: int | None = None
    try:
        assert eventually(pgid_file.is_file, within=60)
        pgid = int(pgid_file.read_text())
        assert any(tmpdir.iterdir())  # the repeat's workdir is there
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 143, err
        assert "capeval validate: terminated by SIGTERM" in err
        assert "Traceback" not in err
        assert group_gone(pgid, within=5)
        assert list(tmpdir.iterdir()) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        if pgid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)


@pytest.mark.slow
def test_a_gate_on_v3_files_stopped_by_sigterm_leaves_no_temp_copy(tmp_path: Path) -> None:
    # The gate copies a v3 file's `cases` array to a temp file for DuckDB;
    # killed by SIGTERM, 100 MB copies of it stayed in $TMPDIR.
    from capeval.results.v3 import write_v3
    from tests.rowfactory import result_row

    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    rows = [
        result_row(f"case-{i % 50}", i // 50, passed=bool(i % 3), text="x" * 400)
        for i in range(60_000)
    ]
    sides = []
    for name in ("base.json", "cand.json"):
        write_v3(tmp_path / name, rows, started_at="2026-12-06T00:00:00Z", finished_at=None)
        sides.append(tmp_path / name)
    proc = subprocess.Popen(
        [sys.executable, "-m", "capeval.cli", "gate", "--baseline", str(sides[0]),
         "--candidate", str(sides[1]), "--root", str(tmp_path)],
        env={**os.environ, "TMPDIR": str(tmpdir)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert eventually(lambda: any(tmpdir.glob("capeval-cases-*")), within=60)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert "capeval gate: terminated by SIGTERM" in err
    assert list(tmpdir.iterdir()) == []
