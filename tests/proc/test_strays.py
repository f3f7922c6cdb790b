"""Finding a run's stray processes by the mark in their environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from capeval.proc import strays

HAS_PROC = Path("/proc/self/environ").exists()


@pytest.mark.skipif(not HAS_PROC, reason="reads /proc")
def test_a_process_carrying_the_mark_never_lists_itself(tmp_path: Path) -> None:
    # A capeval that itself carries a mark (run inside another capeval's
    # repeat) must find its strays, not itself: kill_marked would SIGTERM it.
    mark = strays.new_mark()
    probe = textwrap.dedent(
        """
        import os, subprocess, sys
        from capeval.proc import strays
        child = subprocess.Popen(["sleep", "30"])
        try:
            print(os.getpid(), child.pid, strays.marked_pids("CAPEVAL_TEST_MARK", sys.argv[1]))
        finally:
            child.kill()
            child.wait()
        """
    )
    env = {**os.environ, "CAPEVAL_TEST_MARK": mark}
    out = subprocess.run(
        [sys.executable, "-c", probe, mark], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    own, child, found = out.stdout.split(" ", 2)
    assert json.loads(found) == [int(child)] and int(own) not in json.loads(found)
