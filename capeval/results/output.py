"""Writing a file the user named: every command's output goes through here.

A report, a plot, a v3 export, a baseline or a plan is written to a temp file
beside the target and renamed over it, so a reader (a CI step, a gate run in
parallel) sees the old file or the new one, never half of one. A rename over
something that is not a regular file would replace it: run as root,
`capeval report -o /dev/null` once left the machine with a regular file at
`/dev/null`, and every later `git` call failed. So the kind of the target
decides:

- a regular file, or no file yet: temp file, fsync, rename;
- a character device or a FIFO (`/dev/null`, `/dev/stdout`, a pipe a CI
  step reads): written in place, never renamed over;
- a directory, a socket or a block device: refused;
- a symlink: its target is written, as above, when it resolves into the
  link's own folder or below; a link pointing anywhere else is refused,
  so a link planted in a results folder cannot redirect a write.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO


class OutputRefused(OSError):
    """A target that must not be written; the message names the path and what to pass instead."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}; pass a path to a regular file (or /dev/stdout)")
        self.path = path
        self.reason = reason


def _refuse(path: Path, why: str) -> OutputRefused:
    return OutputRefused(path, why)


def resolve_target(path: Path) -> tuple[Path, int | None]:
    """The file a write to `path` lands in, and its mode (None: it does not exist yet)."""
    path = Path(path)
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        # Nothing there yet; creating its folder will say which part is wrong.
        return path, None
    if stat.S_ISLNK(st.st_mode):
        target = path.resolve()
        if not target.is_relative_to(path.parent.resolve()):
            raise _refuse(path, f"is a symlink to {target}, outside the folder the link is in")
        try:
            return target, target.stat().st_mode
        except FileNotFoundError:
            return target, None
    return path, st.st_mode


def _in_place(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def check_writable_target(path: Path) -> None:
    """Raise OutputRefused when `path` could never be written (checked before long work)."""
    target, mode = resolve_target(Path(path))
    if mode is None or stat.S_ISREG(mode) or _in_place(mode):
        return
    kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file, device or FIFO"
    raise _refuse(target, f"is {kind}")


@contextlib.contextmanager
def output_file(path: Path, *, fsync: bool = True) -> Iterator[BinaryIO]:
    """A binary handle whose contents become `path` when the block ends without error.

    On an error nothing at `path` changes (a temp file is removed); a device
    or FIFO has then received what was written so far, as any stream would.
    """
    path = Path(path)
    check_writable_target(path)
    target, mode = resolve_target(path)
    if mode is not None and _in_place(mode):
        # O_WRONLY without O_CREAT or O_TRUNC: a device stays the device.
        with open(os.open(target, os.O_WRONLY), "wb") as handle:
            yield handle
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # Not mkstemp: its 0600 would survive the rename, and a result file (the
    # committed baseline, a CI artifact) must be readable as any file the user
    # writes: 0666 less the umask.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(fd, "wb") as handle:
            yield handle
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_output(
    path: Path, data: str | bytes, *, errors: str = "strict", fsync: bool = True
) -> None:
    """Write `data` (text is UTF-8) to `path` as `output_file` does."""
    payload = data.encode("utf-8", errors) if isinstance(data, str) else data
    with output_file(path, fsync=fsync) as handle:
        handle.write(payload)


def write_output_with(path: Path, writer: Callable[[BinaryIO], object]) -> None:
    """Let `writer` fill `path` through a handle (a figure's savefig, a zip)."""
    with output_file(path) as handle:
        writer(handle)


def move_output(source: Path, path: Path) -> None:
    """Put the finished file `source` at `path`: a rename where that is safe, else a copy.

    `source` is gone afterwards either way.
    """
    check_writable_target(path)
    target, mode = resolve_target(Path(path))
    if mode is None or stat.S_ISREG(mode):
        try:
            os.replace(source, target)
            return
        except OSError as exc:
            if exc.errno != 18:  # EXDEV: another filesystem; copy instead
                raise
    with open(source, "rb") as src:
        write_output_with(path, lambda handle: _copy(src, handle))
    Path(source).unlink(missing_ok=True)


def _copy(src: BinaryIO, dst: BinaryIO) -> None:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
