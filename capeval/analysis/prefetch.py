"""The gate's native scan, begun while click and capeval's own modules import.

`capeval gate` in CI is a fresh process: about 0.15 s of importing before the
command knows its files, then the scan of the files, which on large result
files is most of the run. The command line already names the files, so the
launcher (`capeval.launch`) hands it here first, and the scan runs on its
own thread (native code, GIL released) while the imports go on.

It is a guess, and only ever used when it is exactly right: `take` hands
over the records only when the command asks for the same scan (same files
in the same order, same options) of files that did not change since the
guess began (device, inode, size and modification time, before and after
the scan). Anything else discards it, and a guess still running is
cancelled so it does not compete with the real scan.

Only a plain command line is guessed at: `gate` or `compare` followed by the
options they share, JSON Lines files named on both sides. Standard library
only at import time: the launcher imports this before click.
"""

from __future__ import annotations

import atexit
import os
import signal
import stat
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

# Whether each command asks the scan for values (for advisory statistics) by default.
_COMMANDS = {"gate": False, "compare": True}
_VALUED = {"--baseline", "--candidate", "--bait", "--root", "--seed"}
_FLAGS = {"--json", "--allow-provider-fallback"}

_LOCK = threading.Lock()
_pending: _Scan | None = None
_latest: threading.Thread | None = None  # the last guess's thread, taken or not

Identity = tuple[int, int, int, int]


class ScanRequest(NamedTuple):
    """One native scan: the files of each side, and what to read of them.

    The guess and the reader build it alike; equal requests are the same scan.
    """

    sides: list[list[str]]
    metrics: list[str]
    with_values: bool
    headline: bool
    threads: int

    def run(self, native: Any, *, chunk_bytes: int = 0, token: int | None = None) -> Any:
        """The native reader's records; raises its `Unavailable` when it refuses the files."""
        return native.scan(
            self.sides,
            self.metrics,
            "taskToolCallCount",  # a row without it predates it: the DuckDB reader's
            headline=self.headline,
            with_values=self.with_values,
            threads=self.threads,
            chunk_bytes=chunk_bytes,  # tests cut files into many chunks; 0: by size
            token=token,
        )


class _Scan:
    """One guessed scan: its request, what the files were, and its outcome."""

    def __init__(self, native: Any, request: ScanRequest, before: list[Identity]) -> None:
        self.native = native
        self.request = request
        self.before = before
        # Taken here, on the main thread: a `cancel()` from now on stops the
        # scan, even one that comes before the thread is running.
        self.token = native.token()
        self.after: list[Identity] | None = None
        self.records: list[dict[str, Any]] | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="capeval-prefetch", daemon=True)

    def _run(self) -> None:
        # SIGINT and SIGTERM stay with the main thread (and its handlers); the
        # scan's own threads inherit this mask.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            self.records = self.request.run(self.native, token=self.token)
        except Exception as exc:  # handed to `take`, which raises it where the scan was asked for
            self.error = exc
            if self.native.token() == self.token:
                # Refused, not cancelled: the DuckDB reader takes the files
                # next, so warm its engine now, as the launcher does when it
                # guesses nothing. (A cancelled scan is one nobody waits for,
                # perhaps at exit, when a DuckDB import must not begin.)
                from capeval.analysis import engine

                engine.start()
        self.after = _identities(self.request.sides)


def _identities(sides: Sequence[Sequence[str]]) -> list[Identity] | None:
    out: list[Identity] = []
    for paths in sides:
        for path in paths:
            try:
                info = os.stat(path)
            except (OSError, ValueError):
                return None
            if not stat.S_ISREG(info.st_mode):
                return None
            out.append((info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))
    return out


def threads() -> int:
    """The cores this process may run on: how many threads a scan uses."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def request_of(argv: Sequence[str]) -> ScanRequest | None:
    """The scan `capeval <argv>` will ask for, when the command line says so plainly.

    `argv` is what follows the program's name. None for anything else: another
    command, an option this does not know, a baseline left to the
    configuration, a file that is not JSON Lines.
    """
    if not argv or argv[0] not in _COMMANDS:
        return None
    with_values = _COMMANDS[argv[0]]
    sides: dict[str, list[str]] = {"--baseline": [], "--candidate": []}
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        name, equals, value = arg.partition("=")
        if name in _VALUED:
            if not equals:
                if not args:
                    return None
                value = args.pop(0)
            if name in sides:
                sides[name].append(str(Path(value)))
        elif arg in _FLAGS:
            continue
        elif arg in ("--advisory", "--no-advisory"):
            with_values = arg == "--advisory"
        else:
            return None  # --help, a positional, an option of another version...
    paths = [sides["--baseline"], sides["--candidate"]]
    if not all(paths) or not all(p.endswith(".jsonl") for side in paths for p in side):
        return None
    from capeval.core.metrics import METRIC_NAMES

    return ScanRequest(paths, list(METRIC_NAMES), with_values, False, threads())


def start(argv: Sequence[str]) -> bool:
    """Begin the scan `argv` will ask for, when it can be told and read natively."""
    global _pending
    request = request_of(argv)
    if request is None:
        return False
    from capeval.analysis.native_reader import native_reader

    native = native_reader()
    before = _identities(request.sides)
    if native is None or before is None:
        return False
    scan = _Scan(native, request, before)
    with _LOCK:
        if _pending is not None:
            return False
        _pending = scan
    global _latest
    _latest = scan.thread
    scan.thread.start()
    atexit.register(_discard)
    return True


def running() -> bool:
    """Whether a guessed scan is still at work (perhaps cancelled, not yet stopped)."""
    return _latest is not None and _latest.is_alive()


def _discard() -> None:
    """At exit: stop a scan nobody took, so no native thread outlives the interpreter."""
    global _pending
    with _LOCK:
        scan, _pending = _pending, None
    if scan is not None:
        scan.native.cancel()
        scan.thread.join()


def take(request: ScanRequest) -> list[dict[str, Any]] | None:
    """The guessed scan's records, if it was this scan of these unchanged files.

    Raises what the scan raised (the native reader's `Unavailable`), exactly
    as asking for the scan now would. None when there is nothing to take.
    """
    global _pending
    with _LOCK:
        scan, _pending = _pending, None
    if scan is None:
        return None
    if request != scan.request:
        scan.native.cancel()
        scan.thread.join()
        return None
    try:
        scan.thread.join()
    except BaseException:  # Ctrl-C while waiting: stop the scan, then exit as asked
        scan.native.cancel()
        raise
    if not (scan.before == scan.after == _identities(request.sides)):
        return None
    if scan.error is not None:
        raise scan.error
    return scan.records
