"""Keep secrets out of result files.

Rows are committed (the baseline), shared and pasted into reports, while an
agent's text preview or error can echo anything it saw, including its API
key. So every value of an environment variable whose name looks secret is
replaced before a row is written, wherever it appears in the row's free
text. The fields naming which repeat a row is (`keep`) are left whole: they
come from the config, and rewriting them would break cell matching and resume.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from typing import Any

SECRET_NAME_PARTS: tuple[str, ...] = ("KEY", "TOKEN", "SECRET", "PASSWORD")
REDACTED = "[REDACTED]"
# Very short values (e.g. "1", "true") would redact ordinary text everywhere.
MIN_SECRET_LEN = 4


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def secret_values(*envs: Mapping[str, str]) -> list[str]:
    """Values of secret-named variables in `envs` (default: this process), longest first."""
    sources: Iterable[Mapping[str, str]] = envs or (os.environ,)
    found = {
        value
        for env in sources
        for name, value in env.items()
        if is_secret_name(name) and isinstance(value, str) and len(value) >= MIN_SECRET_LEN
    }
    # Longest first, so a secret containing another is replaced whole.
    return sorted(found, key=len, reverse=True)


def redact_text(text: str, secrets: Iterable[str]) -> str:
    for value in secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact(obj: Any, secrets: Iterable[str], *, keep: Collection[str] = ()) -> Any:
    """A copy of a JSON-like value with every secret replaced (nested keys too).

    Top-level fields named in `keep` are copied unchanged.
    """
    values = list(secrets)
    if not values:
        return obj
    if isinstance(obj, Mapping):  # a row's own field names are never secrets
        return {k: v if k in keep else _walk(v, values) for k, v in obj.items()}
    return _walk(obj, values)


def _walk(obj: Any, values: list[str]) -> Any:
    if isinstance(obj, str):
        return redact_text(obj, values)
    if isinstance(obj, Mapping):
        return {
            _walk(k, values) if isinstance(k, str) else k: _walk(v, values) for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [_walk(v, values) for v in obj]
    return obj
