"""Problems: the unit of every user-facing complaint about input.

Cases, configuration and the workspace are checked as a whole, so checks
collect `Problem`s instead of raising on the first one; a user fixing a
broken workspace then sees everything at once. Callers that cannot go on
raise `ProblemsError` carrying the full list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong: where (file, then field inside it) and what would be right.

    `file` is relative to the workspace root when it lives there. `field` is a
    dotted key path (`bait.metric`, `requireBehaviors[0].min`,
    `agents.old.type`); it is empty when the problem concerns the whole file.
    """

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        if self.field:
            return f"{self.file}: {self.field}: {self.message}"
        return f"{self.file}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"file": self.file, "field": self.field, "message": self.message}


UTF8_BOM = b"\xef\xbb\xbf"


def bom_message(syntax: str) -> str:
    """For a file some editors saved with a byte order mark: it looks right when
    opened, and the parsers' own words (line 1, column 1) do not say what to change."""
    return (
        f"starts with a byte order mark (BOM), which {syntax} does not allow; "
        "save the file as UTF-8 without BOM"
    )


class ProblemsError(Exception):
    """Input is unusable; `.problems` says every reason, not just the first."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
