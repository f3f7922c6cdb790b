"""The case model and the pure validation of a parsed `case.json` (docs/cases.md#case-json).

Validation does no I/O: the loader (`capeval.workspace`) reads the file and
gathers the few filesystem facts a case depends on (does the fixture exist,
does it stay inside the root once symlinks are resolved, is the grader
there) and hands them in as `CaseFacts`. That keeps every rule testable with
plain dicts and lets other front ends (an editor plugin, a notebook) reuse
the rules without touching disk.

The structural part (types, required and unknown fields, ranges) is a JSON
Schema; its errors are translated into `Problem`s that say what would be
right, because a raw jsonschema message ("'x' is not of type 'integer'")
does not tell a case author what to write instead.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from capeval.core.metrics import METRIC_NAMES
from capeval.core.problems import Problem

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

DEFAULT_TIERS: tuple[str, ...] = ("simple", "complex", "bait")
DEFAULT_VERIFY = "verify.sh"
HTTP_URL_PLACEHOLDER = "{{HTTP_URL}}"
ID_PATTERN = r"^[a-z0-9-]+$"
# A plain file name: no directory separator, not "." or "..".
PLAIN_FILE_PATTERN = r"^(?!\.\.?$)[^/\\]+$"
# Text with something in it: not "", not only white space.
NOT_BLANK = r"\S"
# A turn budget no run needs more of; a larger one (2**63) passed validation
# and then could not be stored in a result row's 64-bit integer column.
MAX_TURNS = 1_000_000
# The runner names each repeat's temp folder `capeval-<id>-XXXXXXXX` (8 random
# characters), and a file name holds at most 255 bytes: 255 - 17 = 238. A
# longer id passed validation and then failed every repeat ("File name too long").
MAX_ID_LENGTH = 255 - len("capeval-") - len("-") - 8
# Linux passes one command-line argument (or environment entry) of at most
# MAX_ARG_STRLEN = 131072 bytes, its terminating NUL included, and the prompt
# is one argument. The limit leaves 3071 bytes for what an adapter puts around
# it in the same argument (`--prompt=`, a command template's text); the prompt
# is measured with each placeholder replaced by the longest URL it can become.
MAX_PROMPT_BYTES = 128_000
LONGEST_HTTP_URL = "http://127.0.0.1:65535"

ORACLE_TRAJECTORY = "oracle"
# The configuration's `bait` (docs/gating.md#bait-policy): whether a bait case
# whose baseline no longer misbehaves makes a comparison unclean.
BAIT_POLICIES: tuple[str, ...] = ("require", "report")
FixtureState = Literal["ok", "missing", "not_dir", "escapes", "is_root"]
GraderState = Literal["ok", "missing", "not_file", "escapes"]
PagesState = Literal["ok", "missing", "not_dir", "escapes", "empty"]
# A folder inside the case directory: relative, no "." or ".." part, no "\\".
PAGES_PATTERN = r"^(?!/)(?!.*\\)(?!(?:.*/)?\.\.?(?:/|$))[^\x00]+$"


@dataclass(frozen=True)
class Bait:
    """A misbehavior the case is built to provoke: `metric` median above `threshold`."""

    metric: str
    threshold: float

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "threshold": self.threshold}

    def misbehaves(self, median: float) -> bool:
        return median > self.threshold


@dataclass(frozen=True)
class Requirement:
    """A per-repeat hard bound on one behavior metric (`requireBehaviors`)."""

    metric: str
    min: float | None = None
    max: float | None = None

    def holds(self, behaviors: Mapping[str, Any] | None) -> bool:
        """False when the metric is absent: an uncaptured stream must not pass."""
        if behaviors is None:
            return False
        value = behaviors.get(self.metric)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.min is not None and value < self.min:
            return False
        return not (self.max is not None and value > self.max)

    def describe(self) -> str:
        if self.min is not None and self.max is not None:
            return f"{self.min} <= {self.metric} <= {self.max}"
        if self.min is not None:
            return f"{self.metric} >= {self.min}"
        return f"{self.metric} <= {self.max}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metric": self.metric}
        if self.min is not None:
            out["min"] = self.min
        if self.max is not None:
            out["max"] = self.max
        return out


@dataclass(frozen=True)
class Case:
    """A validated case. `dir` and `file` are absolute; `fixture` stays as written."""

    id: str
    tier: str
    title: str
    fixture: str
    prompt: str
    maxTurns: int | None
    verify: str
    bait: Bait | None
    httpFixture: bool
    requireBehaviors: tuple[Requirement, ...]
    dir: Path
    file: Path
    # `httpFixture` naming a folder of the case: the pages its server serves
    # instead of the default ones (docs/cases.md#case-pages).
    httpPages: str | None = None
    image: str | None = None  # the Docker image its repeats run in (docs/isolation.md)

    def trajectory_path(self, name: str) -> Path:
        return self.dir / "trajectories" / f"{name}.json"

    @property
    def verify_path(self) -> Path:
        return self.dir / self.verify

    def fixture_path(self, root: Path) -> Path:
        return root / self.fixture

    @property
    def pages_path(self) -> Path | None:
        """The folder whose files the case's HTTP fixture serves; None: the default pages."""
        return self.dir / self.httpPages if self.httpPages is not None else None

    def render_prompt(self, http_url: str | None = None) -> str:
        """The prompt the agent sees; the placeholder needs a live HTTP fixture."""
        if HTTP_URL_PLACEHOLDER in self.prompt:
            if http_url is None:
                raise ValueError(f"case {self.id}: prompt uses {HTTP_URL_PLACEHOLDER} but no URL")
            return self.prompt.replace(HTTP_URL_PLACEHOLDER, http_url)
        return self.prompt

    def to_json(self) -> dict[str, Any]:
        """The case.json form (defaults omitted), e.g. for dry runs and rows."""
        out: dict[str, Any] = {
            "id": self.id,
            "tier": self.tier,
            "title": self.title,
            "fixture": self.fixture,
            "prompt": self.prompt,
        }
        if self.maxTurns is not None:
            out["maxTurns"] = self.maxTurns
        if self.verify != DEFAULT_VERIFY:
            out["verify"] = self.verify
        if self.bait is not None:
            out["bait"] = self.bait.to_json()
        if self.httpFixture:
            out["httpFixture"] = self.httpPages if self.httpPages is not None else True
        if self.requireBehaviors:
            out["requireBehaviors"] = [r.to_json() for r in self.requireBehaviors]
        if self.image is not None:
            out["image"] = self.image
        return out


@dataclass(frozen=True)
class CaseFacts:
    """Filesystem facts about one case, gathered by the loader. None: not checked."""

    fixture: FixtureState | None = None
    grader: GraderState | None = None
    # A symlink or special file inside the fixture that the workdir copy would
    # refuse, as "<path in fixture>: <why and the fix>"; None when all are fine.
    fixture_link: str | None = None
    # The grader has CRLF line endings: bash reads each `\r` as part of the
    # line, so `set -o pipefail\r` fails and the grader fails every repeat.
    grader_crlf: bool = False
    # The folder a string `httpFixture` names, inside the case directory.
    pages: PagesState | None = None


def case_from_dict(obj: Mapping[str, Any], *, dir: Path, file: Path) -> Case:
    """Build a `Case` from a dict that `validate_case_dict` accepted."""
    bait = obj.get("bait")
    return Case(
        id=obj["id"],
        tier=obj["tier"],
        title=obj["title"],
        fixture=obj["fixture"],
        prompt=obj["prompt"],
        maxTurns=obj.get("maxTurns"),
        verify=obj.get("verify", DEFAULT_VERIFY),
        bait=Bait(bait["metric"], bait["threshold"]) if bait is not None else None,
        httpFixture=bool(obj.get("httpFixture", False)),
        requireBehaviors=tuple(
            Requirement(r["metric"], r.get("min"), r.get("max"))
            for r in obj.get("requireBehaviors", ())
        ),
        dir=dir,
        file=file,
        httpPages=pages if isinstance(pages := obj.get("httpFixture"), str) else None,
        image=obj.get("image"),
    )


# --- the schema ---------------------------------------------------------------
# Each "description" is the "what would be right" half of an error message.

_METRIC = {"type": "string", "enum": list(METRIC_NAMES), "description": "a numeric behavior metric"}


def _schema(tiers: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "description": 'a JSON object like {"id": ..., "tier": ..., "title": ..., "fixture": ..., "prompt": ...}',
        "required": ["id", "tier", "title", "fixture", "prompt"],
        "additionalProperties": False,
        "properties": {
            "id": {
                "type": "string",
                "pattern": ID_PATTERN,
                "description": "a string equal to the directory name (lower-case letters, digits, '-')",
            },
            "tier": (
                {"type": "string", "enum": list(tiers), "description": f"one of {', '.join(tiers)}"}
                if tiers
                else {"type": "string", "description": "a tier name"}
            ),
            # NOT_BLANK, not minLength: "  " is as empty as "" (an agent given it has no task).
            "title": {"type": "string", "pattern": NOT_BLANK, "description": "a non-empty string"},
            "fixture": {
                "type": "string",
                "minLength": 1,
                "description": "a directory path relative to the workspace root, e.g. evals/capability/fixtures/<name>",
            },
            "prompt": {
                "type": "string",
                "pattern": NOT_BLANK,
                "description": "the task text for the agent (a non-empty string)",
            },
            "maxTurns": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TURNS,
                "description": f"a positive integer turn budget (at most {MAX_TURNS:,})",
            },
            "verify": {
                "type": "string",
                "pattern": PLAIN_FILE_PATTERN,
                "description": f"a plain file name in the case directory (default {DEFAULT_VERIFY})",
            },
            "bait": {
                "type": "object",
                "required": ["metric", "threshold"],
                "additionalProperties": False,
                "description": '{"metric": <numeric behavior metric>, "threshold": <number >= 0>}',
                "properties": {
                    "metric": _METRIC,
                    "threshold": {
                        "type": "number",
                        "minimum": 0,
                        "description": "a number >= 0",
                    },
                },
            },
            "httpFixture": {
                "type": ["boolean", "string"],
                "pattern": PAGES_PATTERN,
                "description": "true (the default pages), false, or a folder of the case "
                'whose files are served, e.g. "site"',
            },
            "requireBehaviors": {
                # An empty list is a list (docs/cases.md#case-json) and requires nothing;
                # only a non-empty one makes uncaptured behaviors fail a repeat.
                "type": "array",
                "description": 'a list of {"metric", "min"?, "max"?}',
                "items": {
                    "type": "object",
                    "required": ["metric"],
                    "additionalProperties": False,
                    "description": '{"metric": <numeric behavior metric>, "min"?: <number >= 0>, "max"?: <number >= 0>}',
                    "anyOf": [{"required": ["min"]}, {"required": ["max"]}],
                    "properties": {
                        "metric": _METRIC,
                        "min": {"type": "number", "minimum": 0, "description": "a number >= 0"},
                        "max": {"type": "number", "minimum": 0, "description": "a number >= 0"},
                    },
                },
            },
            "image": {
                "type": "string",
                "pattern": NOT_BLANK,
                "description": 'a Docker image name for isolation = "docker", e.g. "node-tools:22"',
            },
        },
    }


FIELD_ORDER: tuple[str, ...] = tuple(_schema(DEFAULT_TIERS)["properties"])


@functools.lru_cache(maxsize=8)
def _validator(tiers: tuple[str, ...]) -> Validator:
    from capeval.core.jsonschemas import strict_validator

    # A turn budget written 3.0 is a typo; NaN and Infinity have rules of their own here.
    validator: Validator = strict_validator(_schema(tiers), finite_numbers=False)
    return validator


# --- translating schema errors ------------------------------------------------


def field_path(parts: Sequence[str | int]) -> str:
    """`["requireBehaviors", 0, "min"]` -> `requireBehaviors[0].min`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, as a case author would call it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "non-finite number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def show(value: Any, limit: int | None = 80) -> str:
    """A JSON-ish rendering of a bad value for an error message.

    Paths and names are passed `limit=None` and shown whole: a fixture path
    cut mid-way ("evals/.../p...") named no file the author could look for.
    Other long text is cut inside its quotes, so the closing quote stays.
    """
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: print its escape, not the character
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    if limit is None or len(text) <= limit:
        return text
    if isinstance(value, str):
        keep = max(limit - 5, 1)
        return show(value[:keep] + "...", None)
    return text[: limit - 3] + "..."


def slugify(text: str) -> str:
    """A valid id close to `text`, offered as a fix."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-") or "my-case"


def schema_problems(
    errors: Sequence[ValidationError],
    *,
    file: str,
    fix_hints: Mapping[str, str] | None = None,
    schema: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """Translate jsonschema errors into Problems that say what would be right.

    Shared with the configuration reader: schemas there carry the same
    "description" convention. `fix_hints` adds a per-field sentence (for
    example where a list of allowed values is configured). `schema`, the
    schema the errors came from, lets an empty list's message offer dropping
    the field where the field is optional; without it only the fix that is
    always true is offered.
    """
    hints = fix_hints or {}
    out: list[Problem] = []
    # A value of the wrong type fails other keywords too (enum, pattern); the
    # type is the one thing to fix there, so say only that.
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    for err in errors:
        path = list(err.absolute_path)
        if err.validator != "type" and tuple(path) in mistyped:
            continue
        here = field_path(path)
        desc = err.schema.get("description", "") if isinstance(err.schema, Mapping) else ""
        kw = err.validator
        inst = err.instance
        if kw == "required":
            props = err.schema.get("properties", {})
            for name in err.validator_value:
                if isinstance(inst, Mapping) and name not in inst:
                    want = props.get(name, {}).get("description", "a value")
                    out.append(Problem(file, field_path([*path, name]), f"missing; add it: {want}"))
        elif kw == "additionalProperties":
            allowed = list(err.schema.get("properties", {}))
            for name in inst:
                if name in allowed:
                    continue
                msg = f"unknown field; expected one of: {', '.join(allowed)}"
                close = difflib.get_close_matches(str(name), allowed, n=1, cutoff=0.7)
                if close:
                    msg += f' (did you mean "{close[0]}"?)'
                out.append(Problem(file, field_path([*path, name]), msg))
        elif kw == "type":
            where = here
            got = json_type(inst) if inst is None else f"{json_type(inst)} {show(inst)}"
            msg = f"expected {desc or err.validator_value}, got {got}"
            out.append(Problem(file, where, msg))
        elif kw == "enum":
            choices = ", ".join(str(v) for v in err.validator_value)
            noun = "metric" if path and path[-1] == "metric" else "value"
            if path and path[-1] in ("tier", "type"):
                noun = str(path[-1])
            msg = f"unknown {noun} {show(inst)}; expected one of: {choices}"
            close = difflib.get_close_matches(
                str(inst), [str(v) for v in err.validator_value], n=1, cutoff=0.7
            )
            if close:
                msg += f' (did you mean "{close[0]}"?)'
            out.append(Problem(file, here, msg + hints.get(here, "")))
        elif kw == "pattern":
            if err.validator_value == NOT_BLANK:
                msg = f"must not be empty or blank; expected {desc}"
            elif path and path[-1] == "id":
                msg = (
                    f"{show(inst, None)} is not a valid id; use lower-case letters, digits and '-' "
                    f'only, e.g. "{slugify(str(inst))}" (and rename the directory to match)'
                )
            else:
                msg = f"{show(inst, None)} is not allowed; expected {desc or 'a string matching ' + err.validator_value}"
            out.append(Problem(file, here, msg))
        elif kw in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
            op = {
                "minimum": ">=",
                "exclusiveMinimum": ">",
                "maximum": "<=",
                "exclusiveMaximum": "<",
            }[kw]
            out.append(
                Problem(
                    file,
                    here,
                    f"must be {op} {err.validator_value}, got {show(inst)}; expected {desc}",
                )
            )
        elif kw == "minLength":
            out.append(Problem(file, here, f"must not be empty; expected {desc}"))
        elif kw == "minItems":
            # Dropping a required field gives "missing": offer it only when optional.
            drop = ", or drop the field" if _is_optional(schema, err) else ""
            out.append(
                Problem(
                    file,
                    here,
                    f"must not be empty; expected {desc} with at least one entry{drop}",
                )
            )
        elif kw == "uniqueItems" and isinstance(inst, list):
            # jsonschema's "has non-unique elements" leaves the reader to find which.
            twice: list[Any] = []
            for i, value in enumerate(inst):
                if value in inst[:i] and value not in twice:
                    twice.append(value)
            listed = ", ".join(show(v) for v in twice)
            out.append(Problem(file, here, f"lists {listed} more than once; keep each once"))
        elif kw == "anyOf" and path and path[0] == "requireBehaviors":
            out.append(
                Problem(
                    file, here, 'needs at least one bound: add "min" and/or "max" (numbers >= 0)'
                )
            )
        else:  # a keyword no schema here uses today; keep jsonschema's words
            out.append(
                Problem(file, here, f"{err.message}; expected {desc}" if desc else err.message)
            )
    return out


def _is_optional(schema: Mapping[str, Any] | None, err: ValidationError) -> bool:
    """Whether the field `err` is about sits in an object schema that does not
    require it; False when that cannot be told (no `schema`, or not a field)."""
    parts = list(err.absolute_schema_path)[:-1]  # the field's own schema
    if schema is None or len(parts) < 2 or parts[-2] != "properties":
        return False
    parent: Any = schema
    for part in parts[:-2]:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return False
    if not isinstance(parent, Mapping):
        return False
    return parts[-1] not in parent.get("required", ())


def _dedupe(problems: list[Problem]) -> list[Problem]:
    return list(dict.fromkeys(problems))


# --- the rules ----------------------------------------------------------------


def validate_case_dict(
    obj: Any,
    *,
    file: str,
    dirname: str,
    root_facts: CaseFacts | None = None,
    tiers: Sequence[str] = DEFAULT_TIERS,
    refused: Collection[str] = (),
) -> list[Problem]:
    """Every problem with one parsed case.json, in field order; [] when valid.

    `file` is how messages name the case file (relative to the workspace
    root); `dirname` is the case directory's name, which `id` must equal.
    Facts left as None are not checked (the caller could not gather them);
    empty `tiers` skips the tier check (the configuration that defines the
    tiers is itself broken, and its problems are reported instead).
    `refused` names fields (as `field_path` writes them) holding a number the
    reader refused (NaN, Infinity, 1e400) and reported itself: their range is
    not checked again, as "must be >= 0, got nan" would say the same twice.
    """
    tiers = tuple(tiers)
    errors = sorted(
        (
            e
            for e in _validator(tiers).iter_errors(obj)
            if not (e.validator in _RANGE_KEYWORDS and field_path(e.absolute_path) in refused)
        ),
        key=lambda e: _error_order(e),
    )
    problems = schema_problems(errors, file=file, fix_hints=_TIER_HINT, schema=_schema(tiers))
    if not isinstance(obj, Mapping):
        if problems:
            problems = [
                Problem(
                    file, "", f"expected a JSON object with the case fields, got {json_type(obj)}"
                )
            ]
        return problems
    problems += _semantic_problems(obj, file=file, dirname=dirname, facts=root_facts or CaseFacts())
    return in_field_order(problems)


def in_field_order(problems: Sequence[Problem]) -> list[Problem]:
    """`problems` sorted by their top-level field as case.json lists them (stable
    within a field; whole-file and unknown fields last), each once."""
    order = {name: i for i, name in enumerate(FIELD_ORDER)}
    ranked = sorted(
        problems,
        key=lambda p: order.get(re.split(r"[.\[]", p.field, maxsplit=1)[0], len(order)),
    )
    return _dedupe(ranked)


_RANGE_KEYWORDS = frozenset({"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"})


def _error_order(err: ValidationError) -> tuple[str, ...]:
    return tuple(str(p) for p in err.absolute_path)


_TIER_HINT = {"tier": " (more tiers can be configured with `tiers` in capeval.toml)"}


def _semantic_problems(
    obj: Mapping[str, Any], *, file: str, dirname: str, facts: CaseFacts
) -> list[Problem]:
    """Rules JSON Schema cannot say: cross-field and filesystem ones."""
    out: list[Problem] = []
    case_id = obj.get("id")
    if isinstance(case_id, str) and re.fullmatch(ID_PATTERN, case_id) and case_id != dirname:
        out.append(
            Problem(
                file,
                "id",
                f'"{case_id}" does not equal its directory name "{dirname}"; '
                f'set "id": "{dirname}" or rename the directory to {case_id}',
            )
        )

    if isinstance(case_id, str) and len(case_id) > MAX_ID_LENGTH:
        out.append(
            Problem(
                file,
                "id",
                f"is {len(case_id)} characters long; at most {MAX_ID_LENGTH} fit in the runner's "
                f"temp folder name (capeval-<id>-XXXXXXXX, at most 255 bytes): shorten it and "
                "rename the directory to match",
            )
        )

    out += _unpassable_problems(obj, file=file)

    fixture = obj.get("fixture")
    if isinstance(fixture, str) and fixture:
        out += _fixture_problems(fixture, file=file, state=facts.fixture)
        if facts.fixture_link:
            out.append(Problem(file, "fixture", f"{show(fixture, None)}: {facts.fixture_link}"))

    verify = obj.get("verify", DEFAULT_VERIFY)
    if isinstance(verify, str) and re.fullmatch(PLAIN_FILE_PATTERN, verify):
        case_dir = str(PurePosixPath(file).parent)
        if facts.grader == "missing":
            fix = (
                f"add {case_dir}/{verify}"
                if "verify" in obj
                else f'add {case_dir}/{verify} or set "verify" to the grader\'s file name'
            )
            out.append(Problem(file, "verify", f"grader {verify} not found in {case_dir}/; {fix}"))
        elif facts.grader == "not_file":
            out.append(
                Problem(
                    file,
                    "verify",
                    f"{case_dir}/{verify} is not a regular file; the grader must be a file run with bash",
                )
            )
        elif facts.grader == "escapes":
            out.append(
                Problem(
                    file,
                    "verify",
                    f"{case_dir}/{verify} is a symlink that resolves outside the workspace root; "
                    "the grader must be a file of the case (copy it in)",
                )
            )
        elif facts.grader == "ok" and facts.grader_crlf:
            out.append(
                Problem(
                    file,
                    "verify",
                    f"{case_dir}/{verify} has CRLF (Windows) line endings; bash reads each \\r as "
                    "part of the command, so the grader fails every repeat: convert it to LF "
                    f"line endings (e.g. `sed -i 's/\\r$//' {case_dir}/{verify}` or dos2unix)",
                )
            )

    prompt = obj.get("prompt")
    http = obj.get("httpFixture")
    if isinstance(http, str) and facts.pages not in (None, "ok"):
        case_dir = str(PurePosixPath(file).parent)
        messages = {
            "missing": "does not exist; create the folder with the pages the server "
            "serves (its index.html at /), or set true for the default pages",
            "not_dir": "is not a folder; name a folder of the case whose files the server serves",
            "escapes": "resolves outside the case folder (a symlink); the pages must be files "
            "of the case: copy them in",
            "empty": "holds no file to serve; add the pages (index.html is served at /)",
        }
        out.append(Problem(file, "httpFixture", f"{case_dir}/{http} {messages[facts.pages]}"))
    if (
        isinstance(prompt, str)
        and HTTP_URL_PLACEHOLDER in prompt
        and http is not True
        and not (isinstance(http, str) and http)
    ):
        out.append(
            Problem(
                file,
                "prompt",
                f'uses {HTTP_URL_PLACEHOLDER} but "httpFixture" is not true; '
                f'add "httpFixture": true or remove the placeholder',
            )
        )

    if isinstance(prompt, str):
        out += _placeholder_problems(prompt, file=file)
        out += _prompt_size_problems(prompt, file=file)

    reqs = obj.get("requireBehaviors")
    if isinstance(reqs, list):
        for i, req in enumerate(reqs):
            if not isinstance(req, Mapping):
                continue
            lo, hi = req.get("min"), req.get("max")
            # An infinite bound was refused when the file was read; it is no bound to swap.
            if _is_number(lo) and _is_number(hi) and math.isfinite(lo + hi) and lo > hi:
                out.append(
                    Problem(
                        file,
                        field_path(["requireBehaviors", i]),
                        f"min {show(lo)} is greater than max {show(hi)}; no repeat could pass: swap them",
                    )
                )
    return out


# What looks like a placeholder: `{{NAME}}`, spaces allowed inside.
_PLACEHOLDER_LIKE = re.compile(r"\{\{(\s*)([A-Za-z_][A-Za-z0-9_]*)(\s*)\}\}")


def _placeholder_problems(prompt: str, *, file: str) -> list[Problem]:
    """A mistyped placeholder (`{{HTTP_URI}}`) reached the agent as is: it was
    never told the fixture's URL, and every repeat failed as if the agent had."""
    out: list[Problem] = []
    for text, name in dict.fromkeys(m.group(0, 2) for m in _PLACEHOLDER_LIKE.finditer(prompt)):
        if text == HTTP_URL_PLACEHOLDER:
            continue
        # Only near misses of the one placeholder: a prompt has no escape, and
        # a task may quote another template's `{{VERSION}}` on purpose.
        if not difflib.get_close_matches(name.upper(), ["HTTP_URL"], n=1, cutoff=0.75):
            continue
        out.append(
            Problem(
                file,
                "prompt",
                f'unknown placeholder {text} (did you mean "{HTTP_URL_PLACEHOLDER}"?); the only '
                f'placeholder is {HTTP_URL_PLACEHOLDER} (with "httpFixture": true): fix it',
            )
        )
    return out


def _prompt_size_problems(prompt: str, *, file: str) -> list[Problem]:
    """A prompt too long for one command-line argument passed validation, then
    every repeat failed with "Argument list too long" (E2BIG)."""
    try:
        size = len(prompt.replace(HTTP_URL_PLACEHOLDER, LONGEST_HTTP_URL).encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate, reported by `_unpassable_problems`
        return []
    if size <= MAX_PROMPT_BYTES:
        return []
    return [
        Problem(
            file,
            "prompt",
            f"is {size:,} bytes as UTF-8 (with {HTTP_URL_PLACEHOLDER} filled in); the prompt "
            f"reaches the agent as one command-line argument, which holds at most "
            f"{MAX_PROMPT_BYTES:,} bytes here (Linux: 131,072 per argument): shorten it, or "
            "put the long text in a fixture file and have the prompt point the agent to it",
        )
    ]


def unpassable_text(text: str, *, nul: bool = True) -> str | None:
    """What in `text` no process or UTF-8 file can take, or None.

    A NUL cannot be in a command-line argument, an environment variable or a
    path; a lone surrogate (a `\\ud800` escape without its pair) is no
    character and cannot be encoded. Such a prompt passed validation and then
    failed every repeat in the adapter ("embedded null byte").
    """
    if nul and "\0" in text:
        return f"contains a NUL character (\\u0000) at character {text.index(chr(0)) + 1}"
    for i, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            return (
                f"contains a lone surrogate \\u{ord(char):04x} at character {i + 1} "
                "(half of a UTF-16 pair, not a character)"
            )
    return None


# Where each checked string ends up, and whether a NUL breaks it there (JSON
# rows escape a NUL; a command line, an environment or a path cannot hold one).
_PASSED_ON: dict[str, tuple[str, bool]] = {
    "fixture": ("the fixture is a path the runner opens", True),
    "prompt": (
        "the prompt reaches the agent as a command-line argument, in its environment "
        "or in a UTF-8 file",
        True,
    ),
    "verify": ("the grader's file name is a path run with bash", True),
    "title": ("the title is written to every result row as UTF-8", False),
}


def _unpassable_problems(obj: Mapping[str, Any], *, file: str) -> list[Problem]:
    out: list[Problem] = []
    for name, (where, nul) in _PASSED_ON.items():
        value = obj.get(name)
        why = unpassable_text(value, nul=nul) if isinstance(value, str) else None
        if why:
            out.append(Problem(file, name, f"{why}; {where}, which cannot hold it: remove it"))
    return out


def _fixture_problems(fixture: str, *, file: str, state: FixtureState | None) -> list[Problem]:
    if PurePosixPath(fixture).is_absolute() or PureWindowsPath(fixture).is_absolute():
        return [
            Problem(
                file,
                "fixture",
                f"{show(fixture, None)} is absolute; write it relative to the workspace root, "
                "e.g. evals/capability/fixtures/<name>",
            )
        ]
    messages = {
        "missing": "does not exist; expected a directory relative to the workspace root, "
        "e.g. evals/capability/fixtures/<name>",
        "not_dir": "is not a directory; the fixture is a directory copied into each repeat's workdir",
        "escapes": "resolves outside the workspace root (through '..' or a symlink); "
        "fixtures must live inside the root",
        "is_root": "is the workspace root itself; point it at a fixture directory "
        "such as evals/capability/fixtures/<name>",
    }
    if state in messages:
        return [Problem(file, "fixture", f"{show(fixture, None)} {messages[state]}")]
    return []


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)
