"""`capeval view` as a real process: it serves until Ctrl-C (exit 0) or SIGTERM (exit 143)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.view.runs import small_run

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("sig", "code", "words"),
    [(signal.SIGINT, 0, "capeval view: stopped"), (signal.SIGTERM, 143, "terminated by SIGTERM")],
)
def test_the_server_answers_then_stops_on_a_signal(
    tmp_path: Path, sig: signal.Signals, code: int, words: str
) -> None:
    small_run(tmp_path / "results")
    proc = subprocess.Popen(
        [sys.executable, "-m", "capeval.cli", "view", str(tmp_path / "results"), "--no-open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "BROWSER": "true"},
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        with urllib.request.urlopen(url + "data/index.js", timeout=30) as response:
            assert response.read().startswith(b'capevalData("index",')
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == code, err
        assert words in err and "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
