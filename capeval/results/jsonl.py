"""The JSON Lines row stream: one result row per line, durable as each repeat ends.

A run may crash (or be killed) at any moment, so the file is only ever
appended to, each row is flushed and fsynced before `write` returns, and a
torn last line left by a crash mid-write is set aside on reopen instead of
being glued to the next row. The reader mirrors that: a torn last line is a
warning, anything else that is not a row is an error naming file and line.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from capeval.results.errors import (
    JSON_ERRORS,
    ResultFileError,
    json_error_detail,
    warn_passed_over,
)
from capeval.results.formats import HEAD_CHUNK, is_complete_row, tail_start
from capeval.results.inputs import InputRefused, read_input
from capeval.results.rowcheck import load_json, parses_made_twice, plain, row_problem, twice_problem


def torn_sidecar(path: str | Path) -> Path:
    """Where the writer keeps the bytes of a torn line it removed (never deleted)."""
    path = Path(path)
    return path.with_name(path.name + ".torn")


class StreamBusy(ResultFileError):
    """Another process holds the stream: two runs appending to one file would mix their rows."""


class StreamChanged(ResultFileError):
    """The stream is not as this writer left it: another process wrote into it.

    `offset` is where the writer's last row ended: every byte after it is not
    capeval's.
    """

    def __init__(self, path: str | Path, size: int, offset: int) -> None:
        self.size = size
        self.offset = offset
        super().__init__(
            path,
            f"changed by another process since capeval's last row: it is {size} bytes, but "
            f"capeval's rows end at byte {offset}; no row was appended after bytes capeval "
            "did not write",
        )


class JsonlWriter:
    """Appends rows to a JSON Lines file; one writer may be shared by threads.

    Reopening an existing file appends. If that file ends in a partial line (a
    crash mid-write), the partial bytes are moved to `<file>.torn` and cut
    from the stream, with a warning, so every later row starts on its own
    line. A final line that is a complete row merely missing its newline is
    kept and terminated.

    The writer holds an exclusive lock on the file (flock) until it is
    closed, so a second writer, in this process or another, is refused with
    `StreamBusy` instead of interleaving its rows. A process that ignores the
    lock (an agent appending forged rows, or half a line) is caught before the
    next row: the file must be exactly as long as the writer left it, or
    `write` raises `StreamChanged` instead of gluing its row onto theirs.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []
        self._lock = threading.Lock()
        try:
            mode = self.path.stat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            mode = None  # creating it says what is wrong
        except OSError as exc:
            raise ResultFileError(self.path, f"cannot use as the row stream: {exc}") from exc
        if mode is not None and not stat.S_ISREG(mode):
            # A run appends to its stream and reads it back (--resume, the
            # final table): a device or a pipe would lose the rows.
            raise ResultFileError(
                self.path,
                "is not a regular file; the row stream must be one (capeval appends to it and "
                "reads it back); pass --jsonl with a file path",
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Unbuffered: a failed write must leave nothing queued that a later
            # write (or close) could still flush after the rollback in `write`.
            self._handle: Any = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise ResultFileError(
                self.path,
                f"cannot write the row stream here: {exc.strerror or exc}; choose a writable path",
            ) from exc
        try:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._handle.close()
            raise StreamBusy(
                self.path,
                "is being written by another capeval run; wait for it to finish, or write "
                "to another path",
            ) from None
        self._repair_tail()
        self._offset = os.fstat(self._handle.fileno()).st_size

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        warn_passed_over(message, stacklevel=3)

    def _repair_tail(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "r+b") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
            start = tail_start(handle, size)
            handle.seek(start)
            tail = handle.read(size - start)
            if is_complete_row(tail):
                handle.seek(size)
                handle.write(b"\n")
            else:
                sidecar = torn_sidecar(self.path)
                with open(sidecar, "ab") as keep:
                    keep.write(tail + b"\n")
                    keep.flush()
                    os.fsync(keep.fileno())
                handle.truncate(start)
                handle.seek(0)
                line = sum(
                    chunk.count(b"\n") for chunk in iter(lambda: handle.read(HEAD_CHUNK), b"")
                )
                self._warn(
                    f"{self.path}:{line + 1}: torn last line ({len(tail)} bytes, left by a "
                    f"crash mid-write) moved to {sidecar.name}; appending after the last "
                    "complete row"
                )
            handle.flush()
            os.fsync(handle.fileno())

    def write(self, row: dict[str, Any]) -> None:
        """Append one row and make it durable before returning."""
        if not isinstance(row, dict):
            raise TypeError(f"a result row must be a dict, got {type(row).__name__}")
        # Serialise outside the lock: a row that cannot be stored fails here
        # without touching the file.
        data = json.dumps(row, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n"
        with self._lock:
            if self._handle is None:
                raise ValueError(f"{self.path}: writer is closed")
            fd = self._handle.fileno()
            start = os.fstat(fd).st_size
            if start != self._offset:
                raise StreamChanged(self.path, start, self._offset)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except OSError as exc:
                # A full disk accepts part of a row, then refuses. Rows written
                # later would follow those bytes and turn them into a corrupt
                # line mid-stream, so the partial row is cut off again.
                try:
                    os.ftruncate(fd, start)
                    kept = "the rows before it are intact"
                except OSError:
                    kept = "the rows before it are intact; its partial last line is torn"
                raise ResultFileError(
                    self.path, f"could not append a row: {exc.strerror or exc}; {kept}"
                ) from exc
            self._offset = start + len(data)

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_jsonl(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of a JSON Lines result file, and warnings about what was skipped.

    Only a torn last line (no trailing newline, not valid JSON) is skipped;
    blank lines are ignored; any other bad line raises `ResultFileError`
    naming the file and line, because silently dropping a row in the middle
    would change pass rates.
    """
    path = Path(path)
    try:
        data = read_input(path)
    except InputRefused as exc:
        raise ResultFileError(path, exc.reason) from exc
    except OSError as exc:
        raise ResultFileError(path, f"cannot read: {exc.strerror or exc}") from exc
    return parse_jsonl(data, path)


def parse_jsonl(data: bytes, path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """`read_jsonl` on bytes already read; `path` is only used in messages."""
    lines = data.split(b"\n")
    last = len(lines) - 1  # index of the text after the final newline ('' if terminated)
    rows: list[dict[str, Any]] = []
    found: list[str] = []
    for index, raw in enumerate(lines):
        if not raw.strip():
            continue
        mark = parses_made_twice()
        try:
            row = load_json(raw)
        except JSON_ERRORS as exc:
            # Only unparseable text can be a crash's torn line: a complete line
            # too long or too deep for Python is still a row the user must fix.
            torn = isinstance(exc, json.JSONDecodeError | UnicodeDecodeError)
            if index == last and torn:
                found.append(
                    f"{path}:{index + 1}: skipped a torn last line ({len(raw)} bytes, no "
                    "newline): a crash mid-write; every complete row before it was read"
                )
                continue
            detail = json_error_detail(exc)
            why = (
                f"line is not valid JSON ({detail}); only the last line of a row stream "
                "may be torn by a crash"
                if torn
                else f"line cannot be read as JSON: {detail}"
            )
            raise ResultFileError(
                path,
                f"{why}. Repair or delete this line by hand; the other rows are intact",
                line=index + 1,
            ) from exc
        if parses_made_twice() != mark:
            problem = twice_problem(row, row.get("id") if isinstance(row, dict) else None)
            if problem is not None:
                raise ResultFileError(path, problem, line=index + 1)
            row = plain(row)
        problem = row_problem(row)
        if problem is not None:
            raise ResultFileError(path, problem, line=index + 1)
        rows.append(row)
    return rows, found
