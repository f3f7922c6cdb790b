"""What DuckDB reads of a result file: the file itself, or a v3 file's `cases` alone.

A v3 file is one JSON object, which DuckDB would have to hold whole in
memory. Instead its top-level keys are walked up to `"cases": [`, and the byte
range of that array is copied (by the kernel, `copy_file_range`) to a
temporary file DuckDB streams as a JSON array. A file DuckDB cannot read
exactly (a torn last line, a v3 file whose `cases` is not its last key or
whose header is not as the reference reads it, a pipe, a name DuckDB would
expand as a glob) is left to the reference reader.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.results import formats
from capeval.results.duckdb_paths import reads_as_pattern
from capeval.results.formats import HEAD_CHUNK
from capeval.results.inputs import is_regular


class FastPathUnavailable(Exception):
    """DuckDB could not read these files exactly; use the reference reader."""


@dataclass(frozen=True, slots=True)
class Source:
    path: Path
    fmt: str  # "jsonl" | "v3"
    cases_offset: int = 0  # v3: byte offset of the `[` of `cases`
    cases_end: int = 0  # v3: byte offset of the closing `}` of the document
    # Its first row predates `taskToolCallCount`: read what the legacy rule needs.
    legacy: bool = False


def probe(path: Path) -> Source:
    """Tell JSONL from v3 and find a v3's `cases` array, reading only the head."""
    if not is_regular(path):
        # A pipe (`--candidate <(...)`, /dev/stdin) can be read once only, and
        # opening a FIFO nobody writes into would block: the reference reader reads it.
        raise FastPathUnavailable
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            # A pipe (`--candidate <(...)`, /dev/stdin) can be read once only:
            # probing it here would leave the reference reader without its head.
            raise FastPathUnavailable
        size = info.st_size
        head = formats.read_head(handle)
        if not head:
            raise FastPathUnavailable  # empty: let the reference reader decide
        parsed, obj = formats.parse_first_line(head)
        if parsed and isinstance(obj, dict) and formats.ROWS.claims(obj):
            if formats.rows_end(handle, size)[1]:
                raise FastPathUnavailable  # a torn last line is the reference reader's to report
            return Source(path, "jsonl", legacy=predates(obj))
        v3 = formats.read_v3_head(handle)
        # `version: 3` must come before `cases`, each member once, and Python
        # must read every member before it; otherwise the reference reader judges the file.
        if v3 is None or v3.fields.get("version") != 3 or v3.repeated:
            raise FastPathUnavailable
        handle.seek(max(0, size - HEAD_CHUNK))
        tail = handle.read()
        stripped = tail.rstrip()
        if not stripped.endswith(b"}"):
            raise FastPathUnavailable  # text after the document: the reference reader refuses it
        end = len(stripped) - 1
        handle.seek(v3.cases_offset + 1)
        first = handle.read(HEAD_CHUNK).decode("utf-8", "replace").lstrip()
        try:
            row = json.JSONDecoder().raw_decode(first)[0]
        except ValueError:
            row = None  # longer than the head: read as it comes
        return Source(
            path, "v3", v3.cases_offset, max(0, size - HEAD_CHUNK) + end, legacy=predates(row)
        )


def predates(row: Any) -> bool:
    """Whether a row's behaviors predate `taskToolCallCount` (a file of the original harness)."""
    behaviors = row.get("behaviors") if isinstance(row, dict) else None
    return isinstance(behaviors, dict) and behaviors.get("taskToolCallCount") is None


def literal_path(path: Path) -> str:
    """The path as DuckDB must be given it to read that one file and no other."""
    text = os.path.abspath(path)
    if reads_as_pattern(text):
        raise FastPathUnavailable(f"{path}: a file name DuckDB would read as a glob pattern")
    return text


def slice_all(sources: Sequence[Source], temps: list[str]) -> dict[Source, str]:
    """Each v3 source's `cases` copied out, the copies side by side.

    The kernel copies with the GIL released, so one file per core halves the
    v3 gate's copying: two 242 MiB files took 0.37 s one after the other and
    0.19 s side by side on the 2-core development VM.
    """
    if len(sources) < 2:
        return {s: slice_cases(s, temps) for s in sources}
    from concurrent.futures import ThreadPoolExecutor  # v3 files only

    with ThreadPoolExecutor(max_workers=min(len(sources), os.cpu_count() or 1)) as pool:
        names = list(pool.map(lambda s: slice_cases(s, temps), sources))
    return dict(zip(sources, names, strict=True))


def slice_cases(source: Source, temps: list[str]) -> str:
    """Copy a v3 file's `cases` array (and whatever trails it) to a temp file DuckDB can stream."""
    import tempfile  # v3 files only: not on the JSONL gate's start-up

    fd, name = tempfile.mkstemp(prefix="capeval-cases-", suffix=".json")
    temps.append(name)
    try:
        with open(source.path, "rb") as handle:
            remaining = source.cases_end - source.cases_offset
            offset = source.cases_offset
            while remaining > 0:
                try:
                    copied = os.copy_file_range(handle.fileno(), fd, remaining, offset)
                except OSError:
                    handle.seek(offset)
                    os.write(fd, handle.read(remaining))
                    break
                if copied == 0:
                    break
                offset += copied
                remaining -= copied
    finally:
        os.close(fd)
    return name
