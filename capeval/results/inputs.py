"""Files a user names as input: what capeval reads from, and what it refuses to.

A result file, a run summary or a derivative is a regular file, or a pipe
(`--candidate <(zcat run.jsonl.gz)`, `/dev/stdin`). Anything else is refused
before it is opened, naming the file: `/dev/zero` as a result file read until
memory ran out, and a directory or socket has no bytes to give. A pipe is
read once, as it comes; a FIFO nobody writes into would block a command
forever, so a pipe that stays silent (no byte and no end) for
`pipe_wait_s()` seconds is refused too.
"""

from __future__ import annotations

import os
import select
import stat
from pathlib import Path
from typing import BinaryIO

PIPE_WAIT_S = 10.0
PIPE_WAIT_ENV = "CAPEVAL_PIPE_WAIT_S"


def pipe_wait_s() -> float:
    """How long a pipe may stay silent before it is refused (`CAPEVAL_PIPE_WAIT_S` overrides)."""
    try:
        return max(0.0, float(os.environ.get(PIPE_WAIT_ENV, PIPE_WAIT_S)))
    except ValueError:
        return PIPE_WAIT_S


class InputRefused(OSError):
    """A path that is no file to read from; the message names it and the fix."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


def _kind(mode: int) -> str | None:
    """Why a file of this mode cannot be read as input (None: it can)."""
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory; pass a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a file; pass a file (or a pipe)"
    return "is a socket, not a file; pass a file (or a pipe)"


def is_regular(path: str | Path) -> bool:
    """Whether `path` is a regular file, asked without opening it (a FIFO's open may block)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def check_input(path: str | Path) -> None:
    """Raise InputRefused (or the OSError of a missing file) unless `path` can be read."""
    reason = _kind(os.stat(path).st_mode)
    if reason is not None:
        raise InputRefused(path, reason)


def open_input(path: str | Path, wait_s: float | None = None) -> BinaryIO:
    """A binary handle on a regular file or a pipe that is writing; refuses anything else."""
    check_input(path)
    if is_regular(path):
        return open(path, "rb")
    wait_s = pipe_wait_s() if wait_s is None else wait_s
    # O_NONBLOCK: opening a FIFO's read end waits for a writer, maybe forever.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        ready, _, _ = select.select([fd], [], [], wait_s)
        if not ready:
            raise InputRefused(
                path, f"is a pipe nothing wrote into for {wait_s:g} s; start its writer first"
            )
        os.set_blocking(fd, True)
        return open(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | Path, wait_s: float | None = None) -> bytes:
    """All of a file's bytes, or of a pipe's until its writer closes it."""
    with open_input(path, wait_s) as handle:
        return handle.read()
