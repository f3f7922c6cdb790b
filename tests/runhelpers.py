"""Tiny workspaces for the runner's end-to-end tests (no tests of its own).

Each test builds the cases it needs, so runner tests do not depend on the
demo cases' content or timing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import casefactory

REPO = Path(__file__).resolve().parents[1]

PASSING_GRADER = 'test "$(cat done.txt 2>/dev/null)" = ok\n'


def write_case(
    root: Path,
    case_id: str,
    *,
    trajectories: dict[str, list[dict[str, Any]]] | None = None,
    verify: str = PASSING_GRADER,
    **fields: Any,
) -> Path:
    """`casefactory.write_case` set up for a run: the `oracle` trajectory writes
    done.txt and the grader checks it; the fixture holds a README."""
    return casefactory.write_case(
        root,
        case_id,
        verify=verify,
        fixture={"README.md": f"{case_id}\n"},
        trajectories={"oracle": [write_done()], **(trajectories or {})},
        **{"title": f"case {case_id}", "prompt": "write ok to done.txt", **fields},
    )


def write_done(text: str = "done") -> dict[str, Any]:
    return {
        "text": text,
        "toolCalls": [{"name": "write_file", "arguments": {"path": "done.txt", "content": "ok"}}],
    }


def shell(command: str, text: str = "") -> dict[str, Any]:
    return {"text": text, "toolCalls": [{"name": "run_shell", "arguments": {"command": command}}]}


def capeval(
    root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capeval.cli", "run", "--root", str(root), *args],
        cwd=root,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_capeval(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "capeval.cli", "run", "--root", str(root), *args],
        cwd=root,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(
    proc: subprocess.Popen[str], ready: Callable[[], bool], within: float = 600.0
) -> None:
    """Wait for `ready` to hold while the started run goes on.

    Waits for events, not for a time: it returns as soon as `ready` holds and
    fails at once, with the run's output, if the run ends first. `within`
    only bounds a run that hangs, so it is far above what any repeat here
    takes, however loaded the machine.
    """
    reached = eventually(lambda: ready() or proc.poll() is not None, within=within)
    if ready():
        return
    assert reached, "the run never got to the point the test waits for"
    out, err = proc.communicate(timeout=within)
    raise AssertionError(
        f"the run ended (exit {proc.returncode}) before the point the test waits for:\n{out}{err}"
    )


def interrupt_when(
    proc: subprocess.Popen[str], ready: Callable[[], bool], within: float = 600.0
) -> str:
    """Ctrl-C a started run once `ready` holds; its stderr. Never leaves it running."""
    try:
        wait_until(proc, ready, within)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=within)
    finally:
        if proc.poll() is None:
            proc.kill()
    return err


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def eventually(predicate: Callable[[], bool], within: float = 5.0) -> bool:
    """Poll `predicate` until it holds (True) or `within` seconds pass (False)."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie waiting to be reaped is dead for our purposes."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:  # gone between the two looks (ENOENT, or ESRCH mid-read)
        return False


def group_gone(pgid: int, within: float = 3.0) -> bool:
    """True once no process is left in the group (killed members may linger
    briefly as zombies until init reaps them, hence the wait)."""

    def empty() -> bool:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        return False

    return eventually(empty, within)
