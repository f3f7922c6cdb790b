"""The one error every result-file reader raises.

A separate module so the JSON Lines reader, the v3 reader and the format
detector can share it without importing each other.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# What `json.loads` raises besides `JSONDecodeError`: a `ValueError` for an
# integer longer than Python converts, a `RecursionError` for deep nesting.
# Both are valid JSON DuckDB reads, so they must reach the user as a
# `ResultFileError`, never as a traceback (or exit 1, the gate's "regressed").
JSON_ERRORS = (ValueError, RecursionError)


class ResultFileError(ValueError):
    """A result file that cannot be read as it is.

    The message always names the file (and the line, for JSON Lines) so a user
    with a dozen result files knows which one to open and what to fix.
    """

    def __init__(self, path: str | Path, message: str, *, line: int | None = None) -> None:
        self.path = str(path)
        self.message = message
        self.line = line
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


class ResultFileWarning(UserWarning):
    """Something was skipped while reading, but no complete row was lost."""


def warn_passed_over(message: str, *, stacklevel: int) -> None:
    """Issue `message` as a ResultFileWarning, `stacklevel` counted from the caller.

    Every reader without an `on_warning` of its caller's says what it passed
    over this way, so a notebook can filter all of them by one category.
    """
    import warnings

    warnings.warn(message, ResultFileWarning, stacklevel=stacklevel + 1)


def json_error_detail(exc: BaseException) -> str:
    """What is wrong with text `json.loads` refused, for a message a user can act on."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return f"an integer longer than {sys.get_int_max_str_digits()} digits, too long to read"
