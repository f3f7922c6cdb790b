"""File names as DuckDB's readers take them.

`read_json` and its kin expand a file name as a pattern (`*`, `?`, `[..]`,
`{a,b}`) and a leading `~` as a home folder, with no way to escape either:
`run[1].jsonl` reads `run1.jsonl`, `c*.jsonl` every file it matches. Each
reader that hands DuckDB a user's path asks here first, then reads such a
file some other way (a temp copy, the reference reader).
"""

from __future__ import annotations

from pathlib import Path

PATTERN_CHARS = frozenset("*?[]{}~")


def reads_as_pattern(path: str | Path) -> bool:
    """Whether DuckDB could read other files (or none) for this name."""
    return not PATTERN_CHARS.isdisjoint(str(path))
