"""How deep a document a user hands capeval may nest, and one way to say it is too deep.

No file capeval reads needs more than a handful of levels, yet Python's
parsers and every recursive walk after them (schema validation, rendering)
fail with a RecursionError traceback somewhere past a thousand, which a
command would report as exit 1 (the gate's "regressed"). Each reader parses,
then asks `too_deep` here, and refuses with `NESTED_TOO_DEEPLY` (exit 2) both
when the parser itself gave up and when the parsed value nests past the limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Far past any real case, trajectory, configuration, row or derivative (they
# nest fewer than 10 levels), far below where a recursive walk fails.
MAX_DEPTH = 100
NESTED_TOO_DEEPLY = f"is nested too deeply to read (more than {MAX_DEPTH} levels)"


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and mappings in `value` nest more than `limit` levels (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
