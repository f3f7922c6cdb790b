"""The one error every result-file reader raises.

A separate module so the JSON Lines reader, the v3 reader and the format
detector can share it without importing each other.
"""

from __future__ import annotations

from pathlib import Path


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
