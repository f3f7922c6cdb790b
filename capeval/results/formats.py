"""The files a results folder holds, and how each is told from its head.

Users rename files, so a format is told by its content; the suffix only
breaks the tie when the content is too broken to tell. Three formats meet in
a results folder: JSON Lines row streams, v3 JSON documents, and the plans the
runner keeps beside its streams. `FORMATS` holds one entry each (modelled on
inspect_ai's registry of log recorders): how to recognise it from its first
line, and how to read its head without reading the whole file, which matters
for result files of hundreds of megabytes. The readers themselves live in
`capeval.results.jsonl`, `capeval.results.v3` and `capeval.runner.planfile`.

Callers ask different questions of the same head (which reader to use, is
this a result file at all, is this some run's row stream or plan), so this
module answers each with its own function, every one of them built on the
same entries and the same head read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from capeval.results.errors import JSON_ERRORS
from capeval.results.inputs import InputRefused, is_regular, read_input
from capeval.results.rowcheck import load_json

FormatName = Literal["jsonl", "v3", "plan"]
ResultFormat = Literal["jsonl", "v3"]

HEAD_CHUNK = 1 << 16
# DuckDB reads no longer object either (read_json's maximum_object_size).
LONGEST_ROW = 16 << 20
# A plan holds a run's flags and case ids: far below this; a bigger file is no plan.
LARGEST_PLAN = 4 * 1024 * 1024
_WHITESPACE = (" ", "\t", "\r", "\n")


@dataclass(frozen=True)
class Format:
    """One format: its suffixes, and how its first line (a parsed JSON object) shows it."""

    name: FormatName
    suffixes: tuple[str, ...]
    # Content alone says the file is read by this format's reader.
    claims: Callable[[Mapping[str, Any]], bool]
    # In a folder search: the object has this format's shape...
    shaped: Callable[[Mapping[str, Any]], bool]
    # ...and enough of it to be read (a shaped file that is not is skipped).
    complete: Callable[[Mapping[str, Any]], bool]


def _v3_claims(obj: Mapping[str, Any]) -> bool:
    # A row may carry a field named `version` of its own; a row has `passed`.
    return "cases" in obj or ("version" in obj and "passed" not in obj)


def _v3_shaped(obj: Mapping[str, Any]) -> bool:
    return obj.get("version") == 3 or isinstance(obj.get("cases"), list)


def _v3_complete(obj: Mapping[str, Any]) -> bool:
    return obj.get("version") is not None


def _plan_claims(obj: Mapping[str, Any]) -> bool:
    # A v3 export has a `version` and no `runId`, so an earlier export is no plan.
    return "version" not in obj and "runId" in obj and "repeats" in obj


def _row_claims(obj: Mapping[str, Any]) -> bool:
    return not _v3_claims(obj)


def _row_shaped(obj: Mapping[str, Any]) -> bool:
    return "id" in obj and "passed" in obj


def _always(obj: Mapping[str, Any]) -> bool:
    return True


def _never(obj: Mapping[str, Any]) -> bool:
    return False


V3 = Format("v3", (".json",), _v3_claims, _v3_shaped, _v3_complete)
# A plan is never a result: a folder search passes it by (see `capeval.results.discovery`).
PLAN = Format("plan", (".plan.json",), _plan_claims, _never, _never)
ROWS = Format("jsonl", (".jsonl", ".ndjson"), _row_claims, _row_shaped, _always)
# In the order a first line is tried against them.
FORMATS: dict[FormatName, Format] = {"v3": V3, "plan": PLAN, "jsonl": ROWS}
RESULT_SUFFIXES = (*ROWS.suffixes, *V3.suffixes)


def parse_first_line(text: bytes) -> tuple[bool, Any]:
    """(whether the first line of `text` is JSON, its value)."""
    try:
        return True, json.loads(text.split(b"\n", 1)[0])
    except JSON_ERRORS:
        return False, None


# -- the question the reference reader asks: which reader, never "none" -------------


def read_bytes(path: str | Path) -> bytes:
    """A result file's bytes, or a `ResultFileError` saying why it cannot be read."""
    from capeval.results.errors import ResultFileError

    try:
        return read_input(path)
    except InputRefused as exc:
        raise ResultFileError(path, exc.reason) from exc
    except OSError as exc:
        raise ResultFileError(path, f"cannot read: {exc.strerror or exc}") from exc


def format_of(path: str | Path) -> ResultFormat:
    """'jsonl' or 'v3': the reader the reference reader would read the file with."""
    return reading_format(read_bytes(path), Path(path))[0]


def reading_format(data: bytes, path: Path) -> tuple[ResultFormat, Any]:
    """The reader for a whole file's bytes, and the parsed document when telling it parsed all.

    Raises `ResultFileError` for an empty file named `.json`, the one case no
    reader can explain better.
    """
    from capeval.results.errors import ResultFileError

    stripped = data.strip()
    if not stripped:
        if path.suffix in V3.suffixes:
            raise ResultFileError(path, "file is empty; expected a v3 results object")
        return "jsonl", None
    one_line = b"\n" not in stripped
    try:
        # A document on one line is parsed as the v3 reader parses it (fields
        # written twice are seen), and only once.
        obj = load_json(stripped) if one_line else json.loads(stripped.split(b"\n", 1)[0])
        parsed = True
    except JSON_ERRORS:
        parsed, obj = False, None
    if not parsed:
        # A pretty-printed document, or a stream whose only line is torn.
        try:
            return "v3", load_json(stripped)
        except JSON_ERRORS:
            return ("jsonl" if path.suffix in ROWS.suffixes else "v3"), None
    if isinstance(obj, dict) and not V3.claims(obj):
        return "jsonl", None
    return "v3", (obj if one_line else None)


# -- the question of a folder search: a result file, and which --------------------

_V3_HEAD = re.compile(rb'"version"\s*:\s*3\b|"cases"\s*:\s*\[')


def read_head(handle: BinaryIO) -> bytes:
    """The first 64 KiB without leading whitespace, completed to the end of its first line.

    A row longer than 64 KiB (a long `error`) judged by a cut first line
    made a whole stream "not a result file". A v3 document written on one
    line (the whole file) is told by its head instead, never parsed whole here.
    """
    text = handle.read(HEAD_CHUNK).lstrip()
    if text and b"\n" not in text and not (text.startswith(b"{") and _V3_HEAD.search(text)):
        text += handle.readline(LONGEST_ROW)
    return text


def result_format(path: str | Path) -> ResultFormat | None:
    """'jsonl' or 'v3', or None for a file in a results folder that holds no results.

    From the head only. A damaged first line does not make a stream "not a
    result file": read as one, its bad line is an error naming file and
    line, never a silent skip of all its rows.
    """
    path = Path(path)
    if not is_regular(path):
        return None  # a pipe can be read once only; a device is no result file
    with open(path, "rb") as handle:
        text = read_head(handle)
    if not text:
        return None if path.suffix in V3.suffixes else "jsonl"
    parsed, obj = parse_first_line(text)
    if not parsed:
        # A pretty-printed document: v3 as the harness writes it, or any other
        # JSON a results folder may hold (a report, a case.json).
        if text.startswith(b"{") and _V3_HEAD.search(text):
            return "v3"
        return "jsonl" if any(_is_row_line(line) for line in text.split(b"\n")[1:]) else None
    if not isinstance(obj, dict):
        return None
    for fmt in (V3, ROWS):
        if fmt.shaped(obj):
            return "v3" if fmt is V3 and fmt.complete(obj) else ("jsonl" if fmt is ROWS else None)
    return None


def _is_row_line(line: bytes) -> bool:
    """Whether one line is a result row: only an unindented `{` line can be one (the
    indented lines of a pretty-printed document are parts of it)."""
    if not line.startswith(b"{"):
        return False
    parsed, obj = parse_first_line(line)
    return parsed and isinstance(obj, dict) and ROWS.shaped(obj)


# -- the runner's questions: some run's stream, some run's plan -------------------


def holds_rows(path: str | Path) -> bool:
    """Whether a file starts with a row: a whole JSON object that no v3 document starts with.

    A look at one line only (a v3 document, pretty-printed or not, is none);
    a FIFO or device is no row stream and is never read from.
    """
    if not is_regular(path):
        return False
    try:
        with open(path, "rb") as handle:
            parsed, obj = parse_first_line(read_head(handle))
    except OSError:
        return False
    return parsed and isinstance(obj, dict) and ROWS.claims(obj)


def is_plan(path: str | Path) -> bool:
    """Whether a file's content is some run's plan (read whole: plans are small)."""
    try:
        if not Path(path).is_file() or Path(path).stat().st_size > LARGEST_PLAN:
            return False
        doc = json.loads(Path(path).read_bytes())
    except (OSError, *JSON_ERRORS):
        return False
    return looks_like_plan(doc)


def looks_like_plan(doc: Any) -> bool:
    """A parsed document that is some run's plan."""
    return isinstance(doc, Mapping) and PLAN.claims(doc)


def looks_like_v3(doc: Any) -> bool:
    """A parsed document that is a v3 results file (an `--out` export where a plan should be)."""
    return isinstance(doc, Mapping) and V3.claims(doc) and "runId" not in doc


# -- JSON Lines: where the complete rows end ----------------------------------------


def tail_start(handle: BinaryIO, size: int) -> int:
    """Offset just after the last newline of the file (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - HEAD_CHUNK)
        handle.seek(start)
        chunk = handle.read(end - start)
        pos = chunk.rfind(b"\n")
        if pos >= 0:
            return start + pos + 1
        end = start
    return 0


def is_complete_row(line: bytes) -> bool:
    """Whether a last line without its newline is a whole row (else a crash tore it)."""
    try:
        return isinstance(json.loads(line), dict)
    except JSON_ERRORS:
        return False


def rows_end(handle: BinaryIO, size: int) -> tuple[int, bool]:
    """(where the last complete row of a stream ends, whether a torn last line follows)."""
    if size == 0:
        return 0, False
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return size, False
    start = tail_start(handle, size)
    handle.seek(start)
    return (size, False) if is_complete_row(handle.read(size - start)) else (start, True)


# -- v3: the members before `cases`, and where `cases` starts ---------------------


@dataclass(frozen=True)
class V3Head:
    fields: dict[str, Any]  # the top-level members before `cases`, in file order
    cases_offset: int  # byte offset of the `[` opening the top-level `cases` array
    repeated: bool = False  # a member before `cases` was written twice


def read_v3_head(handle: BinaryIO) -> V3Head | None:
    """The head of the document `handle` holds (read from its start), or None.

    Read chunk by chunk, only as far as `"cases": [`: a few KiB however large
    the file. None when it is no JSON object whose members up to a `cases`
    array are well-formed UTF-8 JSON Python can hold: a JSON Lines stream
    (its first row ends without `cases`), an array, a truncated or malformed
    header. Which of those it is, is the reference reader's to say. The text
    is held as Latin-1, one char per byte, so positions are byte offsets
    whatever UTF-8 the file holds; each value is decoded from its own bytes.
    """
    handle.seek(0)
    return _Walker(handle).head()


def v3_header(path: str | Path) -> dict[str, Any] | None:
    """The top-level fields a v3 document holds before its `cases` array, read from its head.

    None when the file is no JSON object with a `cases` array (a JSON Lines
    stream: its first row ends first), is a pipe (it can be read once only)
    or cannot be read or decoded up to `cases`.
    """
    if not is_regular(path):
        return None
    try:
        with open(path, "rb") as handle:
            head = read_v3_head(handle)
    except OSError:
        return None
    return head.fields if head is not None else None


def first_rows_search(path: str | Path, pattern: re.Pattern[bytes]) -> re.Match[bytes] | None:
    """`pattern` in the first 64 KiB of a file's rows: its start, or its `cases` array.

    A v3 file capeval writes holds its aggregates before `cases`, one per
    cell: past a hundred or so cells they fill the first 64 KiB, and a look
    there alone would find no row at all.
    """
    if not is_regular(path):
        return None  # a pipe can be read once only: its reader reads it
    with open(path, "rb") as handle:
        found = pattern.search(handle.read(HEAD_CHUNK))
        if found is not None:
            return found
        head = read_v3_head(handle)
        if head is None:
            return None  # no v3 document: its start was its first rows
        handle.seek(head.cases_offset)
        return pattern.search(handle.read(HEAD_CHUNK))


class _Walker:
    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.buf = ""
        self.eof = False
        self.decoder = json.JSONDecoder()

    def _more(self) -> None:
        chunk = self.handle.read(max(len(self.buf), HEAD_CHUNK))
        self.eof = not chunk
        self.buf += chunk.decode("latin-1")

    def _char(self, pos: int) -> str:
        while pos >= len(self.buf) and not self.eof:
            self._more()
        return self.buf[pos] if pos < len(self.buf) else ""

    def _skip(self, pos: int) -> int:
        while self._char(pos) in _WHITESPACE:
            pos += 1
        return pos

    def _value(self, pos: int) -> tuple[Any, int]:
        """The JSON value at `pos`, decoded from its bytes as UTF-8, and where it ends."""
        while True:
            try:
                _, end = self.decoder.raw_decode(self.buf, pos)
            except json.JSONDecodeError:
                if self.eof:
                    raise
                self._more()
                continue
            # A number cut by the end of the buffer decodes as its first digits
            # (`12` of `12345`): a value that ends at the buffer's end may go on.
            if end < len(self.buf) or self.eof:
                break
            self._more()
        return json.loads(self.buf[pos:end].encode("latin-1").decode("utf-8")), end

    def head(self) -> V3Head | None:
        try:
            return self._members()
        except (*JSON_ERRORS, UnicodeError, RecursionError):
            return None

    def _members(self) -> V3Head | None:
        pos = self._skip(0)
        if self._char(pos) != "{":
            return None
        fields: dict[str, Any] = {}
        repeated = False
        pos += 1
        while True:
            pos = self._skip(pos)
            if self._char(pos) != '"':
                return None  # `}`: an object without `cases` (a row), or not JSON
            key, pos = self._value(pos)
            pos = self._skip(pos)
            if self._char(pos) != ":":
                return None
            pos = self._skip(pos + 1)
            if key == "cases":
                if self._char(pos) != "[":
                    return None
                # Everything before `cases` must be UTF-8, whitespace included:
                # the reference reader refuses a file that is not.
                self.buf[:pos].encode("latin-1").decode("utf-8")
                return V3Head(fields, pos, repeated)
            repeated = repeated or key in fields
            fields[key], pos = self._value(pos)
            pos = self._skip(pos)
            # Only a comma may come between members: `{"version": 3 "cases": [...]}`
            # is not JSON, and the reference reader refuses it.
            if self._char(pos) != ",":
                return None
            pos += 1
