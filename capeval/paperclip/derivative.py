"""The traceability derivative: loading `evals/paperclip/eval-traceability.yaml` and its rules.

The derivative is the only place the corpus facts enter capeval, so the loader
refuses anything that drifted from section 1 of the conformance spec instead of
running a quietly different suite. `check_derivative` is pure (a parsed object
in, every problem out); `load_derivative` adds the file read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.paperclip.policy import (
    ASSERTION_CLASSES,
    DISPOSITIONS,
    GROUP_COUNTS,
    GROUPS,
    SCHEMA_VERSION,
    TASK_MODES,
    TOTAL_ROWS,
)
from capeval.problems import Problem, ProblemsError

DERIVATIVE_PATH = Path("evals/paperclip/eval-traceability.yaml")

_TEXT = {"type": "string", "minLength": 1, "pattern": r"\S"}
_TEXTS = {"type": "array", "items": _TEXT}

ROW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": r"^[a-z]{2}-[a-z0-9-]+-[0-9]{2}$"},
        "title": _TEXT,
        "group": {"type": "string", "enum": sorted(GROUPS)},
        "legacyGroup": {"type": "integer", "minimum": 1, "maximum": 16},
        "fixture": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9-]*$"},
        "actor": _TEXT,
        "taskMode": {"type": "string", "enum": list(TASK_MODES)},
        "scenario": _TEXT,
        "expectedOutcome": _TEXT,
        "primaryDisposition": {"type": "string", "enum": list(DISPOSITIONS)},
        "requiredGrants": {**_TEXTS, "minItems": 1, "uniqueItems": True},
        "assertionClasses": {
            "type": "array",
            "items": {"type": "string", "enum": list(ASSERTION_CLASSES)},
            "minItems": 1,
            "uniqueItems": True,
        },
        "expectedSemantics": {**_TEXTS, "minItems": 1},
    },
    "required": [
        "id",
        "title",
        "group",
        "legacyGroup",
        "fixture",
        "actor",
        "taskMode",
        "scenario",
        "expectedOutcome",
        "primaryDisposition",
        "requiredGrants",
        "assertionClasses",
        "expectedSemantics",
    ],
    "additionalProperties": False,
}

DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "schemaVersion": {"const": SCHEMA_VERSION},
        "rows": {"type": "array", "items": ROW_SCHEMA},
    },
    "required": ["schemaVersion", "rows"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Row:
    id: str
    title: str
    group: str
    legacyGroup: int
    fixture: str
    actor: str
    taskMode: str
    scenario: str
    expectedOutcome: str
    primaryDisposition: str
    requiredGrants: tuple[str, ...]
    assertionClasses: tuple[str, ...]
    expectedSemantics: tuple[str, ...]

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Row:
        fields: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v
            for k, v in obj.items()
            if k in cls.__dataclass_fields__
        }
        return cls(**fields)

    def has(self, assertion_class: str) -> bool:
        return assertion_class in self.assertionClasses


def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def check_derivative(obj: Any, *, file: str = str(DERIVATIVE_PATH)) -> list[Problem]:
    """Every way `obj` (the parsed YAML) breaks section 1; empty when it is sound."""
    from jsonschema import Draft202012Validator

    problems: list[Problem] = []
    if not isinstance(obj, Mapping):
        return [Problem(file, "", "the top level must be a mapping with schemaVersion and rows")]
    if obj.get("schemaVersion") != SCHEMA_VERSION:
        problems.append(
            Problem(
                file,
                "schemaVersion",
                f"must be {SCHEMA_VERSION}, found {obj.get('schemaVersion')!r}; "
                "regenerate the derivative for schema version 2",
            )
        )
    validator = Draft202012Validator(DOCUMENT_SCHEMA)
    for err in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        if list(err.absolute_path) == ["schemaVersion"]:
            continue  # reported above with a friendlier message
        problems.append(Problem(file, _path(err.absolute_path), err.message))
    rows = obj.get("rows")
    if not isinstance(rows, list):
        return problems
    if len(rows) != TOTAL_ROWS:
        problems.append(
            Problem(file, "rows", f"must hold exactly {TOTAL_ROWS} rows, found {len(rows)}")
        )
    good = [r for r in rows if isinstance(r, Mapping)]
    ids = Counter(r.get("id") for r in good)
    for case_id, n in sorted(ids.items(), key=lambda kv: str(kv[0])):
        if n > 1:
            problems.append(
                Problem(file, "rows", f"case id {case_id!r} appears {n} times; ids must be unique")
            )
    groups = Counter(r.get("group") for r in good if isinstance(r.get("group"), str))
    if len(groups) != len(GROUPS):
        problems.append(
            Problem(
                file,
                "rows",
                f"must cover exactly {len(GROUPS)} groups, found {len(groups)} "
                f"({', '.join(sorted(str(g) for g in groups))})",
            )
        )
    for code, want in GROUP_COUNTS.items():
        if groups.get(code, 0) != want:
            problems.append(
                Problem(
                    file,
                    "rows",
                    f"group {code!r} must have {want} rows, found {groups.get(code, 0)}",
                )
            )
    for i, row in enumerate(rows):
        if isinstance(row, Mapping):
            problems.extend(_check_row_policy(row, f"rows[{i}]", file))
    return problems


def _check_row_policy(row: Mapping[str, Any], where: str, file: str) -> list[Problem]:
    policy = GROUPS.get(row.get("group"))  # type: ignore[arg-type]
    if policy is None:
        return []  # the schema already named the unknown group
    out: list[Problem] = []
    rid = row.get("id")
    label = f"{where} ({rid})"
    if isinstance(rid, str) and not rid.startswith(f"{policy.code}-"):
        out.append(
            Problem(file, f"{label}.id", f"must start with its group prefix '{policy.code}-'")
        )
    checks = (
        ("legacyGroup", row.get("legacyGroup"), policy.legacy_group),
        ("primaryDisposition", row.get("primaryDisposition"), policy.disposition),
        ("requiredGrants", row.get("requiredGrants"), [policy.grant]),
        ("assertionClasses", row.get("assertionClasses"), list(policy.assertion_classes)),
    )
    for name, got, want in checks:
        if got != want:
            out.append(
                Problem(
                    file,
                    f"{label}.{name}",
                    f"group {policy.code!r} requires {want!r}, found {got!r}",
                )
            )
    return out


def parse_rows(obj: Mapping[str, Any], *, file: str = str(DERIVATIVE_PATH)) -> list[Row]:
    problems = check_derivative(obj, file=file)
    if problems:
        raise ProblemsError(problems)
    return [Row.from_dict(r) for r in obj["rows"]]


def load_derivative(path: Path, *, label: str | None = None) -> list[Row]:
    """Read and validate the derivative; raises ProblemsError listing every reason."""
    import yaml

    shown = label or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProblemsError([Problem(shown, "", f"cannot read: {exc.strerror}")]) from exc
    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ProblemsError([Problem(shown, "", f"not valid YAML: {exc}")]) from exc
    return parse_rows(obj, file=shown)


def find_derivative(start: Path | None = None) -> Path:
    """The derivative of the nearest ancestor workspace, else the one shipped beside the package."""
    here = (start or Path.cwd()).resolve()
    for base in (here, *here.parents):
        candidate = base / DERIVATIVE_PATH
        if candidate.is_file():
            return candidate
    return Path(__file__).resolve().parents[2] / DERIVATIVE_PATH
