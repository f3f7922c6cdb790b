"""Keep secrets out of result files.

Rows are committed (the baseline), shared and pasted into reports, while an
agent's text preview or error can echo anything it saw, including its API
key. So every value of an environment variable whose name looks secret is
replaced before a row is written, wherever it appears in the row's free
text. The fields naming which repeat a row is (`keep`) are left whole: they
come from the config, and rewriting them would break cell matching and resume.

A secret rarely appears only verbatim, so each is also looked for:

* in the forms logs give it: JSON-escaped (a stream line), percent-encoded
  (a URL) and base64-encoded (`curl -v -u user:key` prints an
  `Authorization: Basic` header), and in any ASCII letter case;
* in part: previews, errors and tool results are cut to a length before a
  row is written, and a streaming agent sends its text in chunks, so a key
  cut in two leaves a head or a tail. A head of at least `MIN_FRAGMENT_LEN`
  bytes that ends where a cut ends a text (the end, an ellipsis, a quote or
  a line break), or such a tail where a cut starts one, goes too. A shorter
  piece says next to nothing about a long key; and a head in the middle of
  text is no cut (`/home/u/.aws/credentials` must not redact `/home/u/src`).

Matching is done on UTF-8 bytes, so files of any encoding can be redacted
with the rules rows use.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

from capeval.core.nesting import too_deep

SECRET_NAME_PARTS: tuple[str, ...] = (
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "_PASS",
    "CREDENTIAL",
)
REDACTED = "[REDACTED]"
# Very short values (e.g. "1", "true") would redact ordinary text everywhere.
MIN_SECRET_LEN = 4
# The shortest head or tail of a cut secret that is still redacted.
MIN_FRAGMENT_LEN = 8
# An encoded form this short would match ordinary text.
MIN_ENCODED_LEN = 8

_BASE64URL = bytes.maketrans(b"+/", b"-_")
# What follows a text cut short, or precedes a text whose head was cut:
# a quote (a JSON string, one streamed chunk), a line break, an ellipsis, or
# a backslash (a JSON-escaped line break or ellipsis).
_EDGE = re.compile(rb"[\"'\n\r\\]|\.\.\.|\xe2\x80\xa6")
_LONGEST_EDGE = 3
_PREFILTER_MAX = 1 << 16


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def secret_values(env: Mapping[str, str], *more: Mapping[str, str]) -> list[str]:
    """Values of secret-named variables in the environments given, longest first.

    A value of any variable can also carry a secret inside: a JSON config
    (`OPENCODE_CONFIG_CONTENT` with a provider's `apiKey`) or a URL with a
    password (`https://user:pass@proxy`); those parts are secrets too.
    """
    sources: Iterable[Mapping[str, str]] = (env, *more)
    found: set[str] = set()
    for env in sources:
        for name, value in env.items():
            if not isinstance(value, str):
                continue
            if is_secret_name(name):
                found.add(value)
            found.update(_embedded(value))
    # Longest first, so a secret containing another is replaced whole.
    return sorted((v for v in found if len(v) >= MIN_SECRET_LEN), key=len, reverse=True)


def _embedded(value: str) -> list[str]:
    text = value.strip()
    if text[:1] in ("{", "["):
        try:
            parsed = json.loads(text)
            return [] if too_deep(parsed) else list(_secret_leaves(parsed))
        except (ValueError, RecursionError):
            return []
    if "@" in text and "://" in text:
        try:
            password = urlsplit(text).password
        except ValueError:
            return []
        return [password] if password else []
    return []


def _secret_leaves(obj: Any, secret: bool = False) -> Iterable[str]:
    if isinstance(obj, str):
        if secret:
            yield obj
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from _secret_leaves(value, secret or is_secret_name(str(key)))
    elif isinstance(obj, list):
        for value in obj:
            yield from _secret_leaves(value, secret)


def _forms(secret: str) -> set[str]:
    """The secret as it is written verbatim, JSON-escaped (once or twice) and percent-encoded."""
    forms = {secret}
    for _ in range(2):
        for form in list(forms):
            for escaped in (json.dumps(form)[1:-1], json.dumps(form, ensure_ascii=False)[1:-1]):
                forms.update({escaped, escaped.replace("/", "\\/")})
    for encode in (quote, quote_plus):
        forms.update({encode(secret, safe=""), encode(secret, safe="/")})
    return forms


def _base64_cores(raw: bytes) -> set[bytes]:
    """The base64 characters fixed by `raw` alone, wherever it starts in the encoded data.

    Three alignments; the characters that mix in neighbouring bytes are dropped.
    """
    cores: set[bytes] = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw)
        core = encoded[4 if shift else 0 : (shift + len(raw)) // 3 * 4]
        if len(core) >= MIN_ENCODED_LEN:
            cores.update({core, core.translate(_BASE64URL)})
    return cores


def secret_needles(secrets: Iterable[str]) -> list[bytes]:
    """Every form of every secret, ASCII lower-cased UTF-8, longest first."""
    needles: set[bytes] = set()
    for secret in secrets:
        if len(secret) < MIN_SECRET_LEN:
            continue
        raw = secret.encode("utf-8", "surrogatepass")
        needles.add(raw)
        for form in _forms(secret):
            encoded = form.encode("utf-8", "surrogatepass")
            if len(encoded) >= MIN_ENCODED_LEN:
                needles.add(encoded)
        needles.update(_base64_cores(raw))
    return sorted((n.lower() for n in needles), key=len, reverse=True)


def secret_spans(data: bytes, needles: Sequence[bytes]) -> list[tuple[int, int]]:
    """Where `data` holds a needle, or a head or tail of one at a cut, merged and in order."""
    if not needles:
        return []
    by_head, by_tail, any_piece = _index(tuple(needles))
    low = data.lower()
    # Most strings of a row or summary are short and hold nothing: one scan
    # says so. On a long file, one find per piece is faster than the pattern.
    if len(low) < _PREFILTER_MAX and any_piece.search(low) is None:
        return []
    spans: list[tuple[int, int]] = []
    for head, group in by_head.items():
        at = low.find(head)
        while at >= 0:
            spans += (s for n in group if (s := _head_span(low, at, n)) is not None)
            at = low.find(head, at + 1)
    for tail, group in by_tail.items():
        at = low.find(tail)
        while at >= 0:
            spans += (s for n in group if (s := _tail_span(low, at + len(tail), n)) is not None)
            at = low.find(tail, at + 1)
    return _merge(spans)


_Index = tuple[dict[bytes, list[bytes]], dict[bytes, list[bytes]], "re.Pattern[bytes]"]


@functools.lru_cache(maxsize=16)
def _index(needles: tuple[bytes, ...]) -> _Index:
    """Needles by their first and last `MIN_FRAGMENT_LEN` bytes, and one pattern for all.

    Built once per set of secrets, not once per string: a repeat's summary
    holds thousands of strings, and grouping per string made redacting it
    16 times slower than before heads and tails were looked for.
    """
    by_head: dict[bytes, list[bytes]] = {}
    by_tail: dict[bytes, list[bytes]] = {}
    for needle in needles:
        by_head.setdefault(needle[:MIN_FRAGMENT_LEN], []).append(needle)
        if len(needle) > MIN_FRAGMENT_LEN:  # a shorter needle is only matched whole
            by_tail.setdefault(needle[-MIN_FRAGMENT_LEN:], []).append(needle)
    pieces = sorted({*by_head, *by_tail}, key=len, reverse=True)
    return by_head, by_tail, re.compile(b"|".join(re.escape(p) for p in pieces))


def _head_span(low: bytes, at: int, needle: bytes) -> tuple[int, int] | None:
    """The whole needle at `at`, or its longest head there that a cut ends."""
    if low.startswith(needle, at):
        return at, at + len(needle)
    found = None
    end = min(at + len(needle), len(low))
    if low[at:end] == needle[: end - at] and end == len(low):
        return at, end
    limit = at + len(needle)  # an edge starts before the needle would end
    edge = _EDGE.search(low, at + MIN_FRAGMENT_LEN, limit + _LONGEST_EDGE)
    while edge is not None and edge.start() < limit:
        if low[at : edge.start()] != needle[: edge.start() - at]:
            break  # a later edge cannot follow a longer head
        found = (at, edge.start())
        edge = _EDGE.search(low, edge.start() + 1, limit + _LONGEST_EDGE)
    return found


def _tail_span(low: bytes, end: int, needle: bytes) -> tuple[int, int] | None:
    """The longest tail of the needle ending at `end` that a cut starts."""
    first = max(0, end - len(needle))
    if first == 0 and low[:end] == needle[len(needle) - end :]:
        return 0, end
    for edge in _EDGE.finditer(low, max(0, first - _LONGEST_EDGE), end - MIN_FRAGMENT_LEN):
        start = edge.end()
        if start >= first and low[start:end] == needle[len(needle) - (end - start) :]:
            return start, end
    return None


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(s for s in spans if s[0] < s[1]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def replace_spans(data: bytes, spans: Iterable[tuple[int, int]]) -> bytes:
    parts: list[bytes] = []
    last = 0
    for start, end in spans:
        parts += [data[last:start], REDACTED.encode()]
        last = end
    parts.append(data[last:])
    return b"".join(parts)


def redact_data(data: bytes, needles: Sequence[bytes]) -> bytes:
    return replace_spans(data, secret_spans(data, needles)) if needles else data


def redact_text(text: str, secrets: Iterable[str]) -> str:
    return _redact_str(text, secret_needles(secrets))


def _redact_str(text: str, needles: Sequence[bytes]) -> str:
    if not needles:
        return text
    data = text.encode("utf-8", "surrogatepass")
    return redact_data(data, needles).decode("utf-8", "surrogatepass")


def redact(obj: Any, secrets: Iterable[str], *, keep: Collection[str] = ()) -> Any:
    """A copy of a JSON-like value with every secret replaced (nested keys too).

    Top-level fields named in `keep` are copied unchanged.
    """
    needles = secret_needles(secrets)
    if not needles:
        return obj
    if isinstance(obj, Mapping):  # a row's own field names are never secrets
        return {k: v if k in keep else _walk(v, needles) for k, v in obj.items()}
    return _walk(obj, needles)


def _walk(obj: Any, needles: list[bytes]) -> Any:
    if isinstance(obj, str):
        return _redact_str(obj, needles)
    if isinstance(obj, Mapping):
        return {
            _walk(k, needles) if isinstance(k, str) else k: _walk(v, needles)
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [_walk(v, needles) for v in obj]
    return obj
