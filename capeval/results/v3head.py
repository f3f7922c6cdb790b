"""The head of a v3 results document: its top-level fields before `cases`, and where
`cases` starts.

Two readers need it without reading a whole file of hundreds of megabytes:
the gate's fast path (to hand DuckDB the `cases` array alone, by byte range)
and the same-run check (to tell a run from its header's `startedAt`). The
head is read chunk by chunk, only as far as `"cases": [`. The text is held as
Latin-1, one char per byte, so positions are byte offsets whatever UTF-8 the
file holds; each value is decoded from its own bytes as UTF-8.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, BinaryIO

from capeval.results.errors import JSON_ERRORS

_CHUNK = 1 << 16
_WHITESPACE = (" ", "\t", "\r", "\n")


@dataclass(frozen=True)
class V3Head:
    fields: dict[str, Any]  # the top-level members before `cases`, in file order
    cases_offset: int  # byte offset of the `[` opening the top-level `cases` array


def read_v3_head(handle: BinaryIO) -> V3Head | None:
    """The head of the document `handle` holds (read from its start), or None.

    None when it is no JSON object whose members up to a `cases` array are
    well-formed UTF-8 JSON Python can hold: a JSON Lines stream (its first
    row ends without `cases`), an array, a truncated or malformed header.
    Which of those it is, is the reference reader's to say.
    """
    handle.seek(0)
    return _Walker(handle).head()


class _Walker:
    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.buf = ""
        self.eof = False
        self.decoder = json.JSONDecoder()

    def _more(self) -> None:
        chunk = self.handle.read(max(len(self.buf), _CHUNK))
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
                return V3Head(fields, pos)
            fields[key], pos = self._value(pos)
            pos = self._skip(pos)
            # Only a comma may come between members: `{"version": 3 "cases": [...]}`
            # is not JSON, and the reference reader refuses it.
            if self._char(pos) != ",":
                return None
            pos += 1
