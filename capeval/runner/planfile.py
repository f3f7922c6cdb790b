"""The plan stored beside a run's stream (`<stream>.plan.json`), and what it must hold.

`capeval run --resume` finishes the run the plan describes. A plan that is
not one the runner wrote used to be trusted: `{}` beside a stream with rows
ran today's default cases, variants and repeats under the old run id (the
stream then held two plans), and a list, a mistyped field or a v3 export in
its place crashed the resume. The shape is a JSON Schema, checked here with
no I/O; the runner reads the file and words the refusal.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from capeval.results.formats import PLAN, looks_like_v3

PLAN_SUFFIX = PLAN.suffixes[0]

# Flags that define which repeats a stream holds, stored for --resume, by the
# option field behind each (the flag names them in messages).
SHAPE_FLAGS: dict[str, str] = {
    "cases": "--case",
    "tiers": "--tier",
    "provider": "--provider",
    "model": "--model",
    "matrix": "--matrix",
    "agent": "--agent",
    "repeats": "--repeats",
    "max_turns": "--max-turns",
    "agent_timeout_s": "--agent-timeout",
    "verify_timeout_s": "--verify-timeout",
    "ask_permissions": "--ask-permissions",
    "allow_provider_fallback": "--allow-provider-fallback",
    "isolation": "--isolation",
    "shard": "--shard",
}
SHAPE_FIELDS: tuple[str, ...] = tuple(SHAPE_FLAGS)
# Flags plans have not always stored: a plan without one resumes with it not given.
LATER_FLAGS: tuple[str, ...] = ("isolation", "shard")


def _nullable(kind: str, description: str) -> dict[str, Any]:
    return {"type": [kind, "null"], "description": description}


_STRINGS = {"type": "array", "items": {"type": "string"}}
_SECONDS = _nullable("number", "a number of seconds or null")
_SWITCH = _nullable("boolean", "true, false or null")

# Fields plans have not always carried (`artifacts`, `resolved`, `root`,
# `config`) may be missing, so none is required here: `plan_problem` asks
# for the run's flags only where defaulting them would mix two plans.
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "an object (the plan capeval run writes)",
    "properties": {
        "cases": {**_STRINGS, "description": "a list of case ids"},
        "tiers": {**_STRINGS, "description": "a list of tier names"},
        "matrix": {**_STRINGS, "description": "a list of matrix cells"},
        "provider": _nullable("string", "a string or null"),
        "model": _nullable("string", "a string or null"),
        "agent": _nullable("string", "a string or null"),
        "repeats": {"type": "integer", "minimum": 1, "description": "a whole number of at least 1"},
        "max_turns": _nullable("integer", "a whole number or null"),
        "agent_timeout_s": _SECONDS,
        "verify_timeout_s": _SECONDS,
        "ask_permissions": _SWITCH,
        "allow_provider_fallback": _SWITCH,
        "isolation": _nullable("string", "a string (none, bwrap or docker) or null"),
        "shard": _nullable("string", "a string I/N (shard I of N) or null"),
        "sharding": {
            "type": "object",
            "description": "an object (index, count, rule, weights, planDigest, planned)",
            "required": ["index", "count", "rule", "weights", "planDigest"],
            "properties": {
                "index": {"type": "integer", "minimum": 1},
                "count": {"type": "integer", "minimum": 1},
                "rule": {"type": "string"},
                "weights": {"type": "object", "additionalProperties": {"type": "integer"}},
                "planDigest": {"type": "string", "minLength": 1},
                "planned": {"type": "integer", "minimum": 0},
            },
        },
        "runId": {"type": "string", "minLength": 1, "description": "a run id string"},
        "runStartedAt": {"type": "string", "description": "a timestamp string"},
        "artifacts": {
            "anyOf": [{"type": "string"}, {"const": False}],
            "description": "a folder path or false",
        },
        "root": {"type": "string", "description": "a folder path"},
        "config": {"type": "string", "description": "a file path"},
        "resolved": {
            "type": "object",
            "description": "an object",
            "properties": {
                "variants": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["id"],
                        "properties": {"id": {"type": "string"}},
                    },
                    "description": "a list of variant objects with an id",
                },
                "cases": {**_STRINGS, "description": "a list of case ids"},
                "agentTimeoutS": _SECONDS,
                "verifyTimeoutS": _SECONDS,
                "maxTurns": _nullable("integer", "a whole number or null"),
            },
        },
    },
}


def plan_problem(doc: Any, *, holds_rows: bool) -> str | None:
    """Why `doc` (a parsed plan file) cannot be resumed from, or None when it can."""
    from jsonschema.exceptions import best_match

    if looks_like_v3(doc):
        return "holds a v3 results file (written by --out), not the run's plan"
    error = best_match(_validator().iter_errors(doc))
    if error is not None:
        return _wrong_field(doc, list(error.absolute_path))
    required = [name for name in SHAPE_FIELDS if name not in LATER_FLAGS]
    missing = [name for name in required if name not in doc] if holds_rows else []
    if missing:
        return (
            f"no {missing[0]!r} field ({SHAPE_FLAGS[missing[0]]}), so which repeats the "
            "run wanted is unknown and today's defaults would be mixed into its rows"
        )
    return None


def _wrong_field(doc: Any, path: list[str | int]) -> str:
    """The innermost described field on `path` (the schema's error), and what it should be."""
    import json

    from capeval.core.case import json_type

    described: Mapping[str, Any] = PLAN_SCHEMA
    value, field = doc, []
    for part in path:
        inner = described.get("properties", {}).get(part) if isinstance(part, str) else None
        if inner is None:
            break
        described, value = inner, value[part]
        field.append(str(part))
    if not field:
        return f"top level is a JSON {json_type(doc)}, expected {described['description']}"
    shown = json.dumps(value)
    shown = shown if len(shown) <= 60 else shown[:56] + " ..."
    return f"field {'.'.join(field)!r} is {shown}, expected {described['description']}"


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    from capeval.core.jsonschemas import strict_validator

    return strict_validator(PLAN_SCHEMA)
