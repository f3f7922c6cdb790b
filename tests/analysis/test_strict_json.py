"""The native reader's strict JSON (capeval/analysis/native/strict_json.h) and its row shapes.

The native reader validates every line itself, without a JSON library, and
reads lines shaped like the row before by their values alone. Neither may
ever accept a line the reference reader would read differently: a refusal
is always safe (the slower readers take the files), an acceptance must give
the reference reader's cells. These tests hold it to that on lines built to
sit on every rule's edge, on random JSON, and on random byte edits.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from capeval.analysis import fastload
from capeval.analysis.fastload import FastPathUnavailable, load_sides
from capeval.core.metrics import METRIC_NAMES
from capeval.results.errors import ResultFileError
from tests.analysis.test_compare_differential import _fields
from tests.analysis.test_native_reader import _native_built, _row  # noqa: F401  (the fixture skips or fails)

GOOD = json.dumps(_row(repeat=0))


def _native(path: Path) -> Any:
    """The native reader's cells, or None when it refuses the file."""
    try:
        return fastload._load_native([[path]], with_values=True, headline=True)
    except FastPathUnavailable:
        return None


def _reference(path: Path) -> Any:
    try:
        return load_sides([[path]], with_values=True, headline=True, fast=False)[0]
    except ResultFileError as exc:
        return exc


def _check(path: Path) -> bool:
    """Accepted only if the reference reads the same cells; True when accepted."""
    native = _native(path)
    if native is None:
        return False
    reference = _reference(path)
    assert not isinstance(reference, Exception), (
        f"native accepted what the reference refuses: {reference}"
    )
    assert list(native[0]) == list(reference[0])
    for key, cell in native[0].items():
        assert _fields(cell, full=True) == _fields(reference[0][key], full=True), key
    return True


def _file(tmp: Path, lines: list[bytes]) -> Path:
    path = tmp / "r.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _with_extra(value_json: str, row: str = GOOD) -> str:
    """A row with one more field, one no verdict reads, holding `value_json` as written."""
    return row[:-1] + ', "extra": ' + value_json + "}"


# Each must be refused however it is reached: as the file's first line (read
# in full) or after a row of the same shape (read by its values).
INVALID_EXTRAS = {
    "leading zero": "01",
    "bare minus": "-",
    "fraction without digits": "1.",
    "fraction without integer": ".5",
    "exponent without digits": "1e",
    "plus sign": "+1",
    "hex number": "0x10",
    "NaN": "NaN",
    "Infinity": "-Infinity",
    "overflowing double": "1e400",
    "single quotes": "'a'",
    "unquoted word": "abc",
    "True": "True",
    "truncated literal": "nul",
    "unknown escape": '"\\x41"',
    "short unicode escape": '"\\u12"',
    "lone high surrogate escape": '"\\ud800"',
    "lone low surrogate escape": '"\\udc00"',
    "reversed surrogate pair": '"\\udc00\\ud800"',
    "tab inside a string": '"a\tb"',
    "unterminated string": '"abc',
    "trailing comma in a list": "[1,]",
    "trailing comma in an object": '{"a":1,}',
    "missing colon": '{"a" 1}',
    "unquoted key": "{a:1}",
    "list of nothing": "[,]",
    "nesting past the limit": "[" * 70 + "]" * 70,
    "two values": "1 2",
    "comment": "1 /* no */",
}
INVALID_BYTES = {
    "overlong slash": b'"\xc0\xaf"',
    "overlong three bytes": b'"\xe0\x80\xaf"',
    "UTF-8 surrogate": b'"\xed\xa0\x80"',
    "past U+10FFFF": b'"\xf4\x90\x80\x80"',
    "truncated sequence": b'"\xe2\x82"',
    "lone continuation": b'"\x80"',
    "invalid byte": b'"\xff"',
    "NUL in a string": b'"a\x00b"',
    "NUL outside": b"1\x00",
}


@pytest.mark.parametrize("kind", sorted(INVALID_EXTRAS) + sorted(INVALID_BYTES))
@pytest.mark.parametrize("after_a_shape", [False, True])
def test_invalid_json_is_refused_wherever_it_stands(
    tmp_path: Path, kind: str, after_a_shape: bool
) -> None:
    extra = INVALID_BYTES.get(kind) or INVALID_EXTRAS[kind].encode()
    bad = _with_extra("0").encode()[: -len(b"0}")] + extra + b"}"
    lines = [_with_extra("1").encode(), bad] if after_a_shape else [bad]
    assert _native(_file(tmp_path, lines)) is None


VALID_EXTRAS = {
    "nested values": '{"a": [1, -2.5e-3, true, false, null, "x"], "b": {}}',
    "every escape": '"\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00"',
    "DEL and text": '"\x7f caf\u00e9 \u4e2d \U0001f600"',
    "big integer": "123456789012345678901234567890",
    "small and negative": "-0.0",
    "exponents": "[1E5, 2e+3, 3e-2]",
    "nesting at 60": "[" * 60 + "]" * 60,
    "whitespace everywhere": "[ 1 ,\t2 ,\r3 ]",
}


@pytest.mark.parametrize("kind", sorted(VALID_EXTRAS))
def test_valid_json_in_fields_no_verdict_reads_is_accepted(tmp_path: Path, kind: str) -> None:
    line = _with_extra(VALID_EXTRAS[kind]).encode()
    # First line, and again after a row of the same shape.
    assert _check(_file(tmp_path, [line, line.replace(b'"repeat": 0', b'"repeat": 1')]))


def test_escaped_keys_and_values_are_read_as_their_text(tmp_path: Path) -> None:
    row = (
        '{"res\\u0075ltKey": "v1::\\u00e9t\\u00e9", "id": "\\u00e9t\\u00e9", '
        '"provider": "p\\/q", "model": "m\\n", "passed": true, "repeat": 0, '
        '"behaviors": {' + ", ".join(f'"{m}": 3' for m in METRIC_NAMES) + "}}"
    )
    assert _check(_file(tmp_path, [row.encode(), row.replace("true", "false").encode()]))
    native = _native(tmp_path / "r.jsonl")
    (cell,) = native[0].values()
    assert cell.caseId == "\u00e9t\u00e9" and cell.resolved == (("p/q", "m\n"),)


def test_whitespace_and_crlf_around_rows_are_read(tmp_path: Path) -> None:
    spaced = json.dumps(_row(repeat=1), indent=None, separators=(" , ", " : "))
    lines = [GOOD.encode(), b"  \t" + spaced.encode() + b" \r", GOOD.encode() + b"\r"]
    assert _check(_file(tmp_path, lines))


@pytest.mark.parametrize("length", [1, 5, 14, 15, 16, 17, 30, 31, 32, 33, 60])
def test_a_change_anywhere_in_the_bytes_around_values_is_seen(tmp_path: Path, length: int) -> None:
    """The second line is read by the first's shape only if every byte around its values matches.

    Keys of these lengths put the bytes before a value on each side of the
    16- and 32-byte compares. Each variant changes one byte of the bytes
    before one value: a renamed key (another field, or one a verdict reads
    lost), a space, a different quote.
    """
    name = "k" * length
    first = GOOD[:-1] + f', "{name}": 1, "passed": true' + "}"
    first = first.replace('"passed": true, ', "", 1)  # passed moves after the long key
    segment_start = first.index(f', "{name}"')
    segment_end = first.index("1", segment_start + len(name))
    for at in range(segment_start, segment_end):
        for byte in (" ", "x", '"', "p"):
            second = first[:at] + byte + first[at + 1 :]
            if second == first:
                continue
            _check(_file(tmp_path, [first.encode(), second.encode()]))
    renamed = first.replace('"passed": true', '"passes": true')
    assert not _check(_file(tmp_path, [first.encode(), renamed.encode()]))


def test_rows_of_several_shapes_interleaved_are_all_read(tmp_path: Path) -> None:
    shapes = [
        _row(repeat=0),
        {**_row(repeat=1), "behaviors": None},
        {k: v for k, v in reversed(list(_row(repeat=2).items()))},
        {**_row(repeat=3), "error": "boom", "extra": [1, 2]},
        {**_row(repeat=4), "tokenUsage": None},
        _row(repeat=5, tier="hard", title="T"),
    ]
    lines = [json.dumps(shapes[(i * 7) % len(shapes)]).encode() for i in range(40)]
    assert _check(_file(tmp_path, lines))


def test_a_value_of_another_type_in_a_known_shape_is_refused(tmp_path: Path) -> None:
    for field, value in (("passed", '"yes"'), ("id", "7"), ("repeat", "1.5"), ("bait", "[")):
        second = json.dumps(_row(repeat=1))
        start = second.index(f'"{field}": ') if f'"{field}"' in second else -1
        if start < 0:
            continue
        end = second.index(",", start)
        second = second[: start + len(field) + 4] + value + second[end:]
        assert _native(_file(tmp_path, [GOOD.encode(), second.encode()])) is None, field


# Lone surrogates excepted: Python reads them, the native reader leaves them to it.
texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values, ascii_only=st.booleans(), compact=st.booleans())
def test_random_json_in_a_field_no_verdict_reads_is_accepted(
    value: Any, ascii_only: bool, compact: bool
) -> None:
    separators = (",", ":") if compact else (", ", ": ")
    text = json.dumps(value, ensure_ascii=ascii_only, separators=separators)
    line = _with_extra(text).encode()
    with tempfile.TemporaryDirectory() as tmp:
        assert _check(_file(Path(tmp), [line, line]))


# Bytes that make or break JSON, and the first bytes of valid and invalid UTF-8.
EDIT_BYTES = [*b'"\\{}[],:0123456789-.eE+ \t\rtfnu', 0, 0x1F, 0x7F, 0x80, 0xC3, 0xE0, 0xED, 0xF0]
EDIT_BYTES += [0xF4, 0xFF]


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(
            st.sampled_from(["set", "insert", "delete"]),
            st.floats(0, 1),
            st.sampled_from(EDIT_BYTES),
        ),
        min_size=1,
        max_size=3,
    ),
    first=st.booleans(),
)
@example(edits=[("set", 0.5, ord("}"))], first=False)
def test_random_byte_edits_are_refused_or_read_as_the_reference_reads_them(
    edits: list[tuple[str, float, int]], first: bool
) -> None:
    row = json.dumps(
        _row(
            repeat=1,
            tier="t",
            title="caf\u00e9",
            bait={"metric": "networkCommandCount", "threshold": 0},
        ),
        ensure_ascii=False,
    ).encode()
    edited = bytearray(row)
    for kind, where, byte in edits:
        at = min(int(where * len(edited)), len(edited) - 1)
        if kind == "set":
            edited[at] = byte
        elif kind == "insert":
            edited.insert(at, byte)
        else:
            del edited[at]
    edited_line = bytes(edited).replace(b"\n", b" ")
    lines = [edited_line, row] if first else [row, edited_line]
    with tempfile.TemporaryDirectory() as tmp:
        _check(_file(Path(tmp), lines))
