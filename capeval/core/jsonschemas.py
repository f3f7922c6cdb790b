"""JSON Schema validators with JSON's numbers read strictly, shared by every file format.

JSON Schema counts 3.0 as an integer and Python's `json` reads NaN and
Infinity as numbers: a turn budget written 3.0, or a timeout of NaN, is a
typo the runner would trip over later, so both are refused at the door.
jsonschema is imported when a validator is first built, not by importers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def is_whole_number(value: Any) -> bool:
    """A JSON integer that is one: not a bool, not a float such as 3.0."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    """A JSON number that is one: not a bool, not `nan` or `inf`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)


def strict_validator(schema: Mapping[str, Any], *, finite_numbers: bool = True) -> Any:
    """A Draft 2020-12 validator whose `integer` excludes 3.0 (and `number` NaN, Infinity)."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("integer", lambda _c, value: is_whole_number(value))
    if finite_numbers:
        checker = checker.redefine("number", lambda _c, value: is_finite_number(value))
    return jsonschema.validators.extend(base, type_checker=checker)(schema)
