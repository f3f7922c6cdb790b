"""The traceability derivative: loading `evals/paperclip/eval-traceability.yaml` and its rules.

The derivative is the only place the corpus facts enter capeval, so the loader
refuses anything that drifted from the derivative's contract (docs/paperclip.md#the-derivative) instead of
running a quietly different suite. `check_derivative` is pure (a parsed object
in, every problem out); `load_derivative` adds the file read.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.core.nesting import NESTED_TOO_DEEPLY, too_deep
from capeval.core.paperclip.policy import (
    ASSERTION_CLASSES,
    CORPUS_CASE_IDS,
    DISPOSITIONS,
    GROUP_COUNTS,
    GROUPS,
    SCHEMA_VERSION,
    TASK_MODES,
    TOTAL_ROWS,
    GroupPolicy,
)
from capeval.core.paperclip.semantics import entry_problem
from capeval.core.problems import Problem, ProblemsError
from capeval.paperclip.corpus import CORPUS_FACTS
from capeval.paperclip.fixtures import FIXTURE_NAMES, ROLE_CLAIMS
from capeval.results.inputs import InputRefused, read_input

DERIVATIVE_PATH = Path("evals/paperclip/eval-traceability.yaml")

_TEXT = {"type": "string", "minLength": 1, "pattern": r"\S"}
_TEXTS = {"type": "array", "items": _TEXT}

ROW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": r"^[a-z]{2}-[a-z0-9-]+-[0-9]{2}$"},
        "title": _TEXT,
        "group": {"type": "string", "enum": sorted(GROUPS)},
        # A whole number: JSON Schema's "integer" also takes 10.0 (and 10.0 == 10), so
        # `_check_legacy_group` refuses it, and true or "10", with the fix in the message.
        "legacyGroup": {"type": "integer", "minimum": 1, "maximum": 16},
        "fixture": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9-]*$"},
        # actor, taskMode and fixture are checked by name in `_check_row_names`, with
        # the known values and the fix in the message; the schema only wants text.
        "actor": _TEXT,
        "taskMode": _TEXT,
        "scenario": _TEXT,
        "expectedOutcome": _TEXT,
        "primaryDisposition": {"type": "string", "enum": list(DISPOSITIONS)},
        "requiredGrants": {**_TEXTS, "minItems": 1, "uniqueItems": True},
        # A set written as a list: order is free, a repeat is refused by
        # `_check_assertion_classes` (which names the repeated class and the fix).
        "assertionClasses": {
            "type": "array",
            "items": {"type": "string", "enum": list(ASSERTION_CLASSES)},
            "minItems": 1,
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


def _row_label(rows: Any, index: int) -> str:
    """`rows[i] (id)`: the index finds the row in the file, the id names the case."""
    row = rows[index] if isinstance(rows, list) and index < len(rows) else None
    rid = row.get("id") if isinstance(row, Mapping) else None
    return f"rows[{index}] ({rid})" if isinstance(rid, str) else f"rows[{index}]"


def _schema_location(obj: Mapping[str, Any], parts: list[Any]) -> str:
    """A schema error's field, with the row's id beside its index when the error is in a row."""
    if len(parts) >= 2 and parts[0] == "rows" and isinstance(parts[1], int):
        rest = _path(parts[2:])
        label = _row_label(obj.get("rows"), parts[1])
        return f"{label}.{rest}" if rest else label
    return _path(parts)


def check_derivative(obj: Any, *, file: str = str(DERIVATIVE_PATH)) -> list[Problem]:
    """Every way `obj` (the parsed YAML) breaks the derivative's contract; empty when it is sound."""
    from jsonschema import Draft202012Validator

    problems: list[Problem] = []
    if not isinstance(obj, Mapping):
        return [Problem(file, "", "the top level must be a mapping with schemaVersion and rows")]
    problems.extend(_check_schema_version(obj, file))
    validator = Draft202012Validator(DOCUMENT_SCHEMA)
    for err in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        where = list(err.absolute_path)
        if where == ["schemaVersion"] or err.message == _NO_SCHEMA_VERSION:
            continue  # `_check_schema_version` says so, with the fix
        if where[:1] == ["rows"] and where[2:] == ["legacyGroup"] and err.validator == "type":
            continue  # `_check_legacy_group` says so, with the fix
        problems.append(Problem(file, _schema_location(obj, where), _schema_message(err)))
    rows = obj.get("rows")
    if not isinstance(rows, list):
        return problems
    if len(rows) != TOTAL_ROWS:
        problems.append(
            Problem(file, "rows", f"must hold exactly {TOTAL_ROWS} rows, found {len(rows)}")
        )
    problems.extend(_check_ids(rows, file))
    good = [r for r in rows if isinstance(r, Mapping)]
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
            label = _row_label(rows, i)
            problems.extend(_check_row_names(row, label, file))
            problems.extend(_check_semantics(row, label, file))
            problems.extend(_check_legacy_group(row, label, file))
            problems.extend(_check_assertion_classes(row, label, file))
            problems.extend(_check_row_policy(row, label, file))
            problems.extend(_check_corpus_facts(row, label, file))
    return problems


_NO_SCHEMA_VERSION = "'schemaVersion' is a required property"


def _check_schema_version(obj: Mapping[str, Any], file: str) -> list[Problem]:
    """`schemaVersion` must be the whole number 2: not 2.0 or true, as for `legacyGroup`.

    JSON Schema's `const` takes 2.0 (it equals 2), so the rule is checked here,
    once, whether the field is missing or wrong.
    """
    fix = f"write schemaVersion: {SCHEMA_VERSION} (a whole number, not quoted)"
    if "schemaVersion" not in obj:
        return [Problem(file, "schemaVersion", f"missing; {fix}")]
    found = obj["schemaVersion"]
    if _is_whole(found) and found == SCHEMA_VERSION:
        return []
    return [
        Problem(
            file,
            "schemaVersion",
            f"must be {SCHEMA_VERSION}, found {_shown(found)}; {fix}, and regenerate the "
            "derivative if it was written for another schema version",
        )
    ]


def _schema_message(err: Any) -> str:
    """The validator's message with the offending value spelled as in YAML/JSON.

    jsonschema opens its messages with the Python repr of the value (None, True,
    {'a': 1}), which is not what the user wrote in the file.
    """
    message = str(err.message)
    head = repr(err.instance)
    if message.startswith(head):
        return _shown(err.instance) + message[len(head) :]
    return message


def _check_ids(rows: list[Any], file: str) -> list[Problem]:
    """Duplicate ids with the rows that carry them, and corpus cases no row carries.

    A count that is off says something drifted; the ids and indexes say what,
    so the fix does not start with a search through 106 rows.
    """
    out: list[Problem] = []
    where: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        rid = row.get("id") if isinstance(row, Mapping) else None
        if isinstance(rid, str):
            where.setdefault(rid, []).append(i)
    for case_id, indexes in sorted(where.items()):
        if len(indexes) > 1:
            at = ", ".join(f"rows[{i}]" for i in indexes)
            out.append(
                Problem(
                    file,
                    "rows",
                    f"case id {case_id!r} appears {len(indexes)} times ({at}); ids must be "
                    "unique: give each row its own corpus case id",
                )
            )
    missing = [c for c in CORPUS_CASE_IDS if c not in where]
    if missing:
        out.append(
            Problem(
                file,
                "rows",
                f"missing corpus case id(s): {', '.join(missing)}; "
                "every corpus case needs exactly one row",
            )
        )
    return out


# The values a row may name, and where a new one would have to be added first.
_NAMED_VALUES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    (
        "actor",
        "actor role",
        tuple(sorted(ROLE_CLAIMS)),
        "ROLE_CLAIMS in capeval/paperclip/fixtures.py",
    ),
    ("taskMode", "task mode", TASK_MODES, "TASK_MODES in capeval/core/paperclip/policy.py"),
    ("fixture", "fixture", FIXTURE_NAMES, "capeval/paperclip/fixtures.py"),
)


def _check_row_names(row: Mapping[str, Any], label: str, file: str) -> list[Problem]:
    """Names the suite looks up (role, task mode, fixture) must be ones it knows.

    An unknown role would otherwise run as a role with no claims and an
    unknown fixture would crash the run: both are typos the loader can name.
    """
    out: list[Problem] = []
    for name, what, known, home in _NAMED_VALUES:
        value = row.get(name)
        if isinstance(value, str) and value not in known:
            out.append(
                Problem(
                    file,
                    f"{label}.{name}",
                    f"unknown {what} {value!r}; known: {', '.join(known)}. "
                    f"Use one of these (names are case-sensitive) or add it to {home}",
                )
            )
    return out


def _check_semantics(row: Mapping[str, Any], label: str, file: str) -> list[Problem]:
    """Each `expectedSemantics` entry must be a REST call the fake agent can read.

    An entry it cannot parse would become an unknown operation, refused as
    absent: the suite would pass it without testing anything.
    """
    entries = row.get("expectedSemantics")
    if not isinstance(entries, list):
        return []  # the schema already said so
    out: list[Problem] = []
    for j, entry in enumerate(entries):
        if not isinstance(entry, str) or not entry.strip():
            continue  # the schema already said so
        why = entry_problem(entry)
        if why is not None:
            out.append(
                Problem(
                    file,
                    f"{label}.expectedSemantics[{j}]",
                    f"{entry!r} is not a REST call: {why}; write it as METHOD /path "
                    'or METHOD "^regex$", as the corpus does',
                )
            )
    return out


def _policy(row: Mapping[str, Any]) -> GroupPolicy | None:
    group = row.get("group")
    return GROUPS.get(group) if isinstance(group, str) else None  # a list is unhashable


def _is_whole(value: Any) -> bool:
    """An int as YAML writes one: not 10.0 (a float) and not true (a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """A value as the YAML would spell it: 10.0, true, "10"."""
    return json.dumps(value, default=str)


def _check_legacy_group(row: Mapping[str, Any], label: str, file: str) -> list[Problem]:
    """`legacyGroup` must be a whole number; 10.0 and true are not, though both compare equal."""
    if "legacyGroup" not in row or _is_whole(row["legacyGroup"]):
        return []  # a missing field and a number out of range are the schema's to report
    policy = _policy(row)
    fix = (
        f"write {policy.legacy_group} (the legacy number of group {policy.code!r})"
        if policy is not None
        else "write the group's legacy number (1 to 16)"
    )
    return [
        Problem(
            file,
            f"{label}.legacyGroup",
            f"must be a whole number (no decimal point, not quoted, not true/false), "
            f"found {_shown(row['legacyGroup'])}; {fix}",
        )
    ]


def _check_assertion_classes(row: Mapping[str, Any], label: str, file: str) -> list[Problem]:
    """The classes a row carries: each once, and exactly its group's (in any order).

    The spec's policy names which classes a group's rows carry, not an order, so
    `[combined_multi_hop, authorization_policy]` is as good as the reverse.
    """
    got = row.get("assertionClasses")
    if not isinstance(got, list) or not all(isinstance(c, str) for c in got):
        return []  # the schema already said so
    field = f"{label}.assertionClasses"
    out: list[Problem] = []
    for cls, n in sorted(Counter(got).items()):
        if n > 1:
            out.append(Problem(file, field, f"lists {cls!r} {n} times; list each class once"))
    policy = _policy(row)
    if policy is None:
        return out  # the schema already named the unknown group
    want = policy.assertion_classes
    missing = [c for c in want if c not in got]
    extra = sorted({c for c in got if c not in want})
    if missing or extra:
        fixes = [f"add {', '.join(missing)}"] if missing else []
        fixes += [f"remove {', '.join(extra)}"] if extra else []
        out.append(
            Problem(
                file,
                field,
                f"group {policy.code!r} requires the classes {', '.join(want)} (in any order), "
                f"found {got!r}; {' and '.join(fixes)}",
            )
        )
    return out


def _check_row_policy(row: Mapping[str, Any], label: str, file: str) -> list[Problem]:
    policy = _policy(row)
    if policy is None:
        return []  # the schema already named the unknown group
    out: list[Problem] = []
    rid = row.get("id")
    if isinstance(rid, str) and not rid.startswith(f"{policy.code}-"):
        out.append(
            Problem(file, f"{label}.id", f"must start with its group prefix '{policy.code}-'")
        )
    checks = (
        ("legacyGroup", row.get("legacyGroup"), policy.legacy_group),
        ("primaryDisposition", row.get("primaryDisposition"), policy.disposition),
        ("requiredGrants", row.get("requiredGrants"), [policy.grant]),
    )
    for name, got, want in checks:
        if name == "legacyGroup" and not _is_whole(got):
            continue  # `_check_legacy_group` said so
        if got != want:
            out.append(
                Problem(
                    file,
                    f"{label}.{name}",
                    f"group {policy.code!r} requires {_shown(want)}, found {_shown(got)}",
                )
            )
    return out


def _check_corpus_facts(row: Mapping[str, Any], label: str, file: str) -> list[Problem]:
    """A corpus case's fixture and REST evidence must be the corpus's.

    The suite derives the fake agent's calls from them: a drifted entry or
    fixture runs a different case, which then fails for a reason the corpus
    never gave (or passes without testing it). Values other rules already
    refuse (an unknown fixture, an entry that is not a REST call) are theirs
    to report.
    """
    rid = row.get("id")
    facts = CORPUS_FACTS.get(rid) if isinstance(rid, str) else None
    if facts is None:
        return []  # not a corpus case id: `_check_ids` names what is missing
    out: list[Problem] = []
    fixture = row.get("fixture")
    if fixture in FIXTURE_NAMES and fixture != facts.fixture:
        out.append(
            Problem(
                file,
                f"{label}.fixture",
                f"corpus case {rid} runs on fixture {_shown(facts.fixture)}, found "
                f"{_shown(fixture)}; write fixture: {facts.fixture}",
            )
        )
    entries = row.get("expectedSemantics")
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        return out  # the schema already said so
    want = list(facts.expected_semantics)
    if entries == want:
        return out
    field = f"{label}.expectedSemantics"
    if len(entries) != len(want):
        out.append(
            Problem(
                file,
                field,
                f"corpus case {rid} has {len(want)} evidence entr{'y' if len(want) == 1 else 'ies'}, "
                f"found {len(entries)}; write the corpus's, in this order: "
                + " ; ".join(f"`{e}`" for e in want),
            )
        )
        return out
    for j, (got, corpus) in enumerate(zip(entries, want, strict=True)):
        if got != corpus and got.strip() and entry_problem(got) is None:
            out.append(
                Problem(
                    file,
                    f"{field}[{j}]",
                    f"found `{got}`, but corpus case {rid} has `{corpus}` here; "
                    "restore the corpus entry (the evidence is the corpus's, not the project's)",
                )
            )
    return out


def parse_rows(obj: Mapping[str, Any], *, file: str = str(DERIVATIVE_PATH)) -> list[Row]:
    problems = check_derivative(obj, file=file)
    if problems:
        raise ProblemsError(problems)
    # The classes in the group's policy order, whatever order the file lists them
    # in: the suite falls back to a row's first class, which must not hang on that order.
    return [
        Row.from_dict({**r, "assertionClasses": list(GROUPS[r["group"]].assertion_classes)})
        for r in obj["rows"]
    ]


def load_derivative(path: str | Path, *, label: str | None = None) -> list[Row]:
    """Read and validate the derivative; raises ProblemsError listing every reason."""
    import yaml

    path = Path(path)  # a notebook passes a string, as load_frame and connect allow
    shown = label or str(path)
    try:
        text = read_input(path).decode("utf-8")
    except InputRefused as exc:
        raise ProblemsError([Problem(shown, "", exc.reason)]) from exc
    except OSError as exc:
        raise ProblemsError([Problem(shown, "", f"cannot read: {exc.strerror}")]) from exc
    except UnicodeDecodeError as exc:
        raise ProblemsError(
            [
                Problem(
                    shown,
                    "",
                    f"not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8",
                )
            ]
        ) from exc
    try:
        obj, duplicates = _load_unique_keys(text)
    except _AliasRefused as exc:
        raise ProblemsError([Problem(shown, "", str(exc))]) from None
    except yaml.YAMLError as exc:
        raise ProblemsError([Problem(shown, "", f"not valid YAML: {exc}")]) from exc
    except RecursionError:
        raise ProblemsError([Problem(shown, "", NESTED_TOO_DEEPLY)]) from None
    if too_deep(obj):
        raise ProblemsError([Problem(shown, "", NESTED_TOO_DEEPLY)])
    if duplicates:
        # A YAML reader keeps the last of two equal keys without a word: a second
        # `title:` silently replaced the first, a second `schemaVersion` was the one
        # checked while the file shows the first. Which one is meant is the user's call.
        raise ProblemsError(
            [
                Problem(
                    shown,
                    "",
                    f"line {line}: duplicate key {key!r} (already at line {first} in the "
                    "same mapping); keep one (a YAML reader silently uses the last)",
                )
                for line, first, key in duplicates
            ]
        )
    return parse_rows(obj, file=shown)


class _AliasRefused(ValueError):
    """A YAML alias: the derivative has none, and a few nested ones expand to gigabytes."""


def _load_unique_keys(text: str) -> tuple[Any, list[tuple[int, int, Any]]]:
    """The parsed YAML and every key repeated within one mapping, as (line, first line, key).

    Aliases are refused before anything is expanded: 413 bytes of aliases
    nested 8 deep took 20 s and 1.3 GB to load, 9 deep never finished.
    """
    import yaml

    duplicates: list[tuple[int, int, Any]] = []

    class UniqueKeyLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise _AliasRefused(
                    f"line {event.start_mark.line + 1}: YAML alias *{event.anchor}; the "
                    "derivative uses none (aliases can expand without bound): write the "
                    "value out"
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue  # `<<` merges keys that this mapping may override
                    key = self.construct_object(key_node, deep=True)
                    try:
                        first = seen.setdefault(key, key_node.start_mark.line + 1)
                    except TypeError:
                        continue  # an unhashable key: the base loader says so
                    if first != key_node.start_mark.line + 1:
                        duplicates.append((key_node.start_mark.line + 1, first, key))
            return super().construct_mapping(node, deep=deep)

    loader = UniqueKeyLoader(text)
    try:
        return loader.get_single_data(), duplicates
    finally:
        loader.dispose()


def find_derivative(start: Path | None = None) -> Path:
    """The derivative in `start` (default: the current directory) or its nearest ancestor.

    Deliberately no fallback to the copy beside the installed package: a user
    who forgot `--file` outside a checkout would validate and run a derivative
    that is not theirs and believe the verdict. Raises ProblemsError saying
    where it looked and how to point at a file.
    """
    here = (start or Path.cwd()).resolve()
    for base in (here, *here.parents):
        candidate = base / DERIVATIVE_PATH
        if candidate.is_file():
            return candidate
    raise ProblemsError(
        [
            Problem(
                str(here),
                "",
                f"no {DERIVATIVE_PATH.as_posix()} here or in any parent directory; "
                "the derivative is checked in with capeval's sources: run capeval from a "
                "checkout of them, or pass --file PATH",
            )
        ]
    )
