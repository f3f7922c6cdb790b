"""Processes that left their process group, found by a mark in their environment and killed.

The runner kills a child's whole process group on a timeout, and whatever is
left in it when the child exits. That is not the whole tree: Gemini CLI and
opencode run every shell tool call in a session of its own (`setsid`), and a
grader or agent may start a daemon, so a `sleep`, a dev server or a watcher
survives, outlives its repeat (whose workdir is then deleted under it) and
the run.

Every process a child starts inherits its environment, so the caller marks
that environment (a variable set to a token no one else shares) and, once
the child is gone, kills every process that still carries the mark, wherever
it moved (its own session, reparented to init). Two marks are in use: one
per agent launch (killed as the CLI ends, before the grader looks at the
workdir) and one per repeat (`process.SCOPE_VAR`, killed as the repeat
ends). Linux only (it reads `/proc`); elsewhere nothing is found and the
sweep does nothing.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from pathlib import Path

from capeval.proc.reaper import SWEEP_PAUSE_S, carriers, kill_carriers

PROC = Path("/proc")
# SIGTERM first, so that exit traps run: a login shell's `pyenv rehash` killed
# outright leaves its lock behind, and every later shell on the machine waits
# 60 s for it.
TERM_GRACE_S = 1.0


def new_mark() -> str:
    """A fresh token for one launch: no other launch (or run) can share it."""
    return secrets.token_hex(16)


def marked_pids(var: str, mark: str, proc: Path = PROC) -> list[int]:
    """Live processes (not this one) whose environment holds `var=mark`."""
    return carriers({f"{var}={mark}".encode()}, str(proc))


def kill_marked(var: str, mark: str, proc: Path = PROC, grace_s: float = TERM_GRACE_S) -> int:
    """Stop every process still carrying `var=mark`: SIGTERM, then SIGKILL; how many were found."""
    pids = marked_pids(var, mark, proc)
    if not pids:
        return 0
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and marked_pids(var, mark, proc):
        time.sleep(SWEEP_PAUSE_S)
    return len(set(pids) | kill_carriers({f"{var}={mark}".encode()}, str(proc)))
