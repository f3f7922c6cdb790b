"""Reference trajectories: the scripts the `scripted` agent plays.

A trajectory stands in for a model: it says what the agent writes and which
tools it calls, turn by turn, and the player executes every call for real.
That lets the whole pipeline (runner, behaviors, baits, gate, plots) run
offline and deterministically, and lets a case prove its grader is honest.

The file format (documented in docs/cases.md#trajectory-format):

    {"description"?: str,
     "turns": [{"text"?: str, "thinkMs"?: int,
                "toolCalls"?: [{"id"?: str, "name": <tool>, "arguments": {...}}]}],
     "exitCode"?: int, "status"?: "done"|"failed"|"cancelled", "error"?: str}

Arguments may contain templates, filled in when the call runs:
`{{HTTP_URL}}` (the repeat's HTTP fixture), `{{result:<callId>}}` (the text
an earlier call returned) and `{{result:<callId>|re:<regex>}}` (its first
capture group, or the whole match when the regex has none). Per-repeat values
such as the HTTP token can only be known this way.

A case's oracle may instead be a shell script, `solution/solve.sh` (the
Terminal-Bench/Harbor convention): it is played as one `run_shell` turn,
`bash <case>/solution/solve.sh` in the workdir, and the run fails when the
script exits non-zero (`shell_trajectory`).

This module is imported by the player subprocess, so its top level uses only
the standard library; validation (jsonschema) is imported when called.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from capeval.core.problems import Problem

TOOLS: tuple[str, ...] = (
    "run_shell",
    "read_file",
    "write_file",
    "edit_file",
    "grep",
    "list_dir",
    "web_fetch",
    "task",
)
STATUSES: tuple[str, ...] = ("done", "failed", "cancelled")

HTTP_URL = "{{HTTP_URL}}"
# The trajectory the default run plays and grader honesty is judged on, and
# the shell script that may stand in for it (docs/cases.md#oracles).
ORACLE = "oracle"
SOLVE_SCRIPT = "solution/solve.sh"
# `{{result:ID}}` or `{{result:ID|re:REGEX}}`; a regex cannot contain "}}".
RESULT_REF = re.compile(r"\{\{result:([A-Za-z0-9_.-]+)(?:\|re:(.*?))?\}\}")


class TrajectoryError(ValueError):
    """A trajectory that cannot be played; names the file, the field and the fix."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class TemplateError(ValueError):
    """A template that cannot be filled in when its call runs (e.g. no regex match)."""


@dataclass(frozen=True)
class Call:
    """One scripted tool call; `nested` holds a `task` call's sub-agent calls."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    nested: tuple[Call, ...] = ()


@dataclass(frozen=True)
class ScriptTurn:
    text: str
    calls: tuple[Call, ...]
    thinkMs: int = 0


@dataclass(frozen=True)
class Trajectory:
    name: str
    turns: tuple[ScriptTurn, ...]
    exitCode: int = 0
    status: str = "done"
    error: str | None = None
    description: str = ""
    # A failing call ends the run as failed (a shell oracle: the script's exit
    # code is the verdict), instead of being a result the agent goes on from.
    stop_on_error: bool = False

    def calls(self) -> Iterator[Call]:
        """Every call in document order, nested task calls right after their task."""
        for turn in self.turns:
            for call in turn.calls:
                yield from _walk(call)


def _walk(call: Call) -> Iterator[Call]:
    yield call
    for child in call.nested:
        yield from _walk(child)


# --- parsing (no validation: the adapter validates before the player runs) ----


def parse_trajectory(obj: Mapping[str, Any], name: str) -> Trajectory:
    """Build a Trajectory from a dict that `validate_trajectory` accepted.

    Calls without an id get `t<turn>c<index>` (nested: `<task id>.<index>`),
    so every result can be referenced and every recorded call has an id.
    """
    turns = []
    for t, turn in enumerate(obj.get("turns", [])):
        calls = tuple(
            _parse_call(c, f"t{t}c{i}") for i, c in enumerate(turn.get("toolCalls") or [])
        )
        turns.append(ScriptTurn(str(turn.get("text", "")), calls, int(turn.get("thinkMs", 0))))
    exit_code = int(obj.get("exitCode", 0))
    status = obj.get("status") or ("done" if exit_code == 0 else "failed")
    return Trajectory(
        name=name,
        turns=tuple(turns),
        exitCode=exit_code,
        status=str(status),
        error=obj.get("error"),
        description=str(obj.get("description", "")),
    )


def _parse_call(obj: Mapping[str, Any], default_id: str) -> Call:
    call_id = str(obj.get("id") or default_id)
    args = dict(obj.get("arguments") or {})
    nested: tuple[Call, ...] = ()
    if obj["name"] == "task":
        nested = tuple(
            _parse_call(c, f"{call_id}.{i}") for i, c in enumerate(args.get("calls") or [])
        )
    return Call(call_id, obj["name"], args, nested)


def shell_trajectory(script: Path, name: str = ORACLE) -> Trajectory:
    """The trajectory a shell oracle is played as: one `run_shell` turn running it.

    `bash <script>` with the workdir as cwd, so `$0` is the script's path in
    the case (data files can sit beside it) and its exit code decides the run.
    """
    return Trajectory(
        name=name,
        turns=(
            ScriptTurn(
                f"Running {SOLVE_SCRIPT}.",
                (Call("solve", "run_shell", {"command": f"bash {shlex.quote(str(script))}"}),),
            ),
        ),
        description=SOLVE_SCRIPT,
        stop_on_error=True,
    )


def played_file(case_dir: Path, name: str) -> Path:
    """The file the scripted agent plays for trajectory `name` in a case.

    `trajectories/<name>.json`; for the oracle, `solution/solve.sh` when the
    case ships no `trajectories/oracle.json`. The JSON path when neither exists.
    """
    path = case_dir / "trajectories" / f"{name}.json"
    if name == ORACLE and not path.is_file():
        script = case_dir / SOLVE_SCRIPT
        if script.is_file():
            return script
    return path


def oracle_files(case_dir: Path) -> list[Path]:
    """The oracles a case ships: `trajectories/oracle.json` and/or `solution/solve.sh`."""
    found = [case_dir / "trajectories" / f"{ORACLE}.json", case_dir / SOLVE_SCRIPT]
    return [path for path in found if path.is_file()]


# --- templates ----------------------------------------------------------------


def render(value: Any, *, http_url: str | None, result: Callable[[str], str]) -> Any:
    """Fill in templates in every string inside `value` (recursively).

    `result(call_id)` returns an earlier call's text (waiting for it if a
    background task is still running). Raises TemplateError when a template
    cannot be filled: a call must not run with a half-rendered argument.
    """
    if isinstance(value, str):
        return _render_str(value, http_url, result)
    if isinstance(value, list):
        return [render(v, http_url=http_url, result=result) for v in value]
    if isinstance(value, dict):
        return {k: render(v, http_url=http_url, result=result) for k, v in value.items()}
    return value


def _render_str(text: str, http_url: str | None, result: Callable[[str], str]) -> str:
    if HTTP_URL in text:
        if http_url is None:
            raise TemplateError(f"{HTTP_URL} is used but this repeat has no HTTP fixture")
        text = text.replace(HTTP_URL, http_url)

    def fill(match: re.Match[str]) -> str:
        call_id, pattern = match.group(1), match.group(2)
        source = result(call_id)
        if pattern is None:
            return source
        found = re.search(pattern, source)
        if found is None:
            raise TemplateError(
                f"{match.group(0)}: the regex found no match in the result of {call_id!r} "
                f"(result starts {source[:80]!r})"
            )
        return found.group(1) if found.re.groups else found.group(0)

    return RESULT_REF.sub(fill, text)


def references(value: Any) -> Iterator[tuple[str, str | None]]:
    """Every `(call id, regex or None)` a value's templates refer to."""
    if isinstance(value, str):
        for m in RESULT_REF.finditer(value):
            yield m.group(1), m.group(2)
    elif isinstance(value, list):
        for v in value:
            yield from references(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from references(v)


# --- loading and validation ---------------------------------------------------

_CALL_DESC = '{"id"?: <string>, "name": <tool>, "arguments": {...}}'
_PATH = {"type": "string", "minLength": 1, "description": "a path relative to the workdir"}
_TEXT = {"type": "string", "description": "a string"}


def _args(required: list[str], props: dict[str, Any], example: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": props,
        "description": example,
    }


_ARGUMENTS: dict[str, dict[str, Any]] = {
    "run_shell": _args(
        ["command"],
        {
            "command": {"type": "string", "minLength": 1, "description": "a bash command"},
            "timeoutMs": {
                "type": "integer",
                "minimum": 1,
                "description": "a positive timeout in milliseconds",
            },
        },
        '{"command": <bash command>, "timeoutMs"?: <int>}',
    ),
    "read_file": _args(["path"], {"path": _PATH}, '{"path": <file>}'),
    "write_file": _args(
        ["path", "content"],
        {"path": _PATH, "content": _TEXT},
        '{"path": <file>, "content": <text>}',
    ),
    "edit_file": _args(
        ["path", "old", "new"],
        {
            "path": _PATH,
            "old": {"type": "string", "minLength": 1, "description": "the exact text to replace"},
            "new": _TEXT,
        },
        '{"path": <file>, "old": <text occurring once>, "new": <text>}',
    ),
    "grep": _args(
        ["pattern"],
        {
            "pattern": {"type": "string", "minLength": 1, "description": "a Python regex"},
            "path": _PATH,
            "glob": {"type": "string", "description": "a file-name glob such as *.py"},
        },
        '{"pattern": <regex>, "path"?: <dir or file>, "glob"?: <glob>}',
    ),
    "list_dir": _args([], {"path": _PATH}, '{"path"?: <dir>}'),
    "web_fetch": _args(
        ["url"],
        {
            "url": {"type": "string", "minLength": 1, "description": "an http:// URL on loopback"},
            "prompt": _TEXT,
        },
        '{"url": <url>, "prompt"?: <text>}',
    ),
    "task": _args(
        ["description", "calls"],
        {
            "description": _TEXT,
            "calls": {
                "type": "array",
                "items": {"$ref": "#/$defs/call"},
                "description": "a list of tool calls the sub-agent makes",
            },
            "background": {"type": "boolean", "description": "true or false"},
        },
        '{"description": <text>, "calls": [<tool call>...], "background"?: <bool>}',
    ),
}

SCHEMA: dict[str, Any] = {
    "$defs": {
        "call": {
            "type": "object",
            "required": ["name", "arguments"],
            "additionalProperties": False,
            "description": _CALL_DESC,
            "properties": {
                "id": {
                    "type": "string",
                    "pattern": r"^[A-Za-z0-9_-]+$",
                    "description": "letters, digits, '_' or '-'",
                },
                "name": {"type": "string", "enum": list(TOOLS), "description": "a tool name"},
                "arguments": {"type": "object", "description": "an object"},
            },
            "allOf": [
                {
                    "if": {"properties": {"name": {"const": tool}}, "required": ["name"]},
                    "then": {"properties": {"arguments": schema}},
                }
                for tool, schema in _ARGUMENTS.items()
            ],
        }
    },
    "type": "object",
    "required": ["turns"],
    "additionalProperties": False,
    "description": '{"turns": [...], "exitCode"?: <int>, "status"?: <status>}',
    "properties": {
        "description": _TEXT,
        "turns": {
            "type": "array",
            "minItems": 1,
            "description": "a list of turns",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "description": '{"text"?: <text>, "toolCalls"?: [...], "thinkMs"?: <int>}',
                "properties": {
                    "text": _TEXT,
                    "thinkMs": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "simulated model time in milliseconds (an int >= 0)",
                    },
                    "toolCalls": {
                        "type": "array",
                        "items": {"$ref": "#/$defs/call"},
                        "description": "a list of tool calls",
                    },
                },
            },
        },
        "exitCode": {
            "type": "integer",
            "minimum": 0,
            "maximum": 255,
            "description": "the agent's exit code (0-255)",
        },
        "status": {"type": "string", "enum": list(STATUSES), "description": "a status"},
        "error": _TEXT,
    },
}


def validate_trajectory(obj: Any, *, file: str) -> list[Problem]:
    """Every problem with a parsed trajectory file; empty when it can be played.

    Beyond the schema: call ids are unique, and a `{{result:ID}}` refers to a
    call that comes earlier in the file (a later one has not run yet), with a
    regex that compiles.
    """
    import jsonschema

    from capeval.core.case import schema_problems

    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    problems = schema_problems(errors, file=file)
    if problems:
        return problems
    seen: set[str] = set()
    for t, turn in enumerate(obj["turns"]):
        for i, call in enumerate(turn.get("toolCalls") or []):
            problems += _check_call(call, f"turns[{t}].toolCalls[{i}]", f"t{t}c{i}", seen, file)
    return problems


def _check_call(
    call: Mapping[str, Any], where: str, default_id: str, seen: set[str], file: str
) -> list[Problem]:
    from capeval.core.problems import Problem

    problems: list[Problem] = []
    args = call["arguments"]
    own = {k: v for k, v in args.items() if k != "calls"}
    for ref, pattern in references(own):
        if ref not in seen:
            problems.append(
                Problem(
                    file,
                    f"{where}.arguments",
                    f"{{{{result:{ref}}}}} refers to no earlier call; give an earlier call "
                    f'"id": "{ref}" (ids: {", ".join(sorted(seen)) or "none yet"})',
                )
            )
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                problems.append(
                    Problem(file, f"{where}.arguments", f"bad regex {pattern!r} in template: {exc}")
                )
    call_id = call.get("id") or default_id
    if call_id in seen:
        problems.append(
            Problem(file, f"{where}.id", f"duplicate call id {call_id!r}; ids must be unique")
        )
    if call["name"] == "task":
        for j, child in enumerate(args.get("calls") or []):
            problems += _check_call(
                child, f"{where}.arguments.calls[{j}]", f"{call_id}.{j}", seen, file
            )
    seen.add(call_id)
    return problems


def load_played(path: Path, *, name: str, file: str | None = None) -> Trajectory:
    """`load_trajectory`, or for a `.sh` oracle the shell trajectory; raises TrajectoryError."""
    if path.suffix != ".sh":
        return load_trajectory(path, name=name, file=file)
    from capeval.core.problems import Problem

    label = file or str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TrajectoryError([Problem(label, "", f"cannot read: {exc}")]) from None
    if b"\r\n" in data:
        # bash reads each \r as part of the command: the oracle would fail every time.
        raise TrajectoryError(
            [
                Problem(
                    label,
                    "",
                    "has CRLF (Windows) line endings; bash reads each \\r as part of the "
                    f"command: convert it to LF line endings (e.g. `sed -i 's/\\r$//' {label}`)",
                )
            ]
        )
    return shell_trajectory(path.resolve(), name)


def load_trajectory(path: Path, *, name: str | None = None, file: str | None = None) -> Trajectory:
    """Read, validate and parse a trajectory file; raises TrajectoryError.

    `file` is how the path is named in errors (repo-relative when known).
    """
    from capeval.core.nesting import NESTED_TOO_DEEPLY, too_deep
    from capeval.core.problems import Problem, bom_message

    label = file or str(path)
    name = name or path.stem
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TrajectoryError(
            [Problem(label, "", f"no trajectory {name!r}: the file does not exist; create it")]
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TrajectoryError([Problem(label, "", f"cannot read: {exc}")]) from None
    if text.startswith("\ufeff"):
        raise TrajectoryError([Problem(label, "", bom_message("JSON"))])
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrajectoryError(
            [
                Problem(
                    label, "", f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
                )
            ]
        ) from None
    except RecursionError:
        raise TrajectoryError([Problem(label, "", NESTED_TOO_DEEPLY)]) from None
    if too_deep(obj):
        raise TrajectoryError([Problem(label, "", NESTED_TOO_DEEPLY)])
    problems = validate_trajectory(obj, file=label)
    if problems:
        raise TrajectoryError(problems)
    return parse_trajectory(obj, name)
