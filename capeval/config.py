"""Workspace configuration: `capeval.toml`, else `[tool.capeval]` in pyproject.toml.

Reading is strict for the same reason case loading is: a misspelt key
(`repeat = 5`) that is silently ignored produces a run that looks fine and
measures the wrong thing. Every unknown key, wrong type and incomplete agent
table becomes a `Problem` naming the file and the key path, all at once.

Built-in agents (`capeval.core.agentconfig.builtin_agents`) exist without any
configuration; an `[agents.NAME]` table with a built-in's name overrides just
the keys it sets.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.core.agentconfig import AGENT_TYPES, AgentConfig, builtin_agents
from capeval.core.case import BAIT_POLICIES, DEFAULT_TIERS, ID_PATTERN, MAX_TURNS, schema_problems
from capeval.core.isolation import (
    HOME_DIRS_SCHEMA,
    SCHEMA_PROPERTIES,
    SHARED_KEYS,
    table_problems,
)
from capeval.core.jsonschemas import is_finite_number, strict_validator
from capeval.core.nesting import NESTED_TOO_DEEPLY, too_deep
from capeval.core.problems import UTF8_BOM, Problem, ProblemsError, bom_message

CONFIG_FILE = "capeval.toml"
PYPROJECT = "pyproject.toml"
DEFAULT_RESULTS = Path("evals", "capability", "results")

# Longer than any eval should take. TOML also writes `inf` and `nan`: an
# infinite (or merely astronomical) timeout overflowed the platform's timers
# mid-run with a traceback, and NaN timed every agent out before it started.
MAX_TIMEOUT_S = 30 * 24 * 3600
SECONDS_RULE = f"a number of seconds > 0 and at most {MAX_TIMEOUT_S} (30 days)"
# The most repeats (variants x cases x repeats) one run may plan. A plan holds a
# job for every repeat before the first starts, and each later costs a row and
# an artifacts folder; a million is far past any real matrix, yet plans in
# seconds. Beyond it is a typo (a pasted number, extra zeros). Here, below the
# runner, so that `repeats` alone past it is a configuration problem too.
MAX_TOTAL_REPEATS = 1_000_000
# POSIX's portable names. `A B` or an empty name reached the agent as no
# variable a shell or program could read, `X=Y` failed every repeat.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Config:
    """The resolved configuration; paths are absolute (resolved against the root)."""

    results_dir: Path
    agent: str | None = None
    matrix: tuple[str, ...] = ()
    provider: str | None = None
    model: str | None = None
    repeats: int = 1
    concurrency: int = 1
    tiers: tuple[str, ...] = DEFAULT_TIERS
    baseline: Path | None = None
    agent_timeout_s: float = 1200.0
    verify_timeout_s: float = 120.0
    max_turns: int | None = None
    bait_policy: str = "require"
    agents: dict[str, AgentConfig] = field(default_factory=builtin_agents)
    source: Path | None = None  # the file it came from; None: defaults
    # The top level's isolation keys (isolation, network, image, limits, env_pass).
    sandbox: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def defaults(cls, root: Path) -> Config:
        return cls(results_dir=root / DEFAULT_RESULTS)


# --- the schema ---------------------------------------------------------------

_POSITIVE_INT = {"type": "integer", "minimum": 1, "description": "a positive integer"}
_REPEATS = {
    **_POSITIVE_INT,
    "maximum": MAX_TOTAL_REPEATS,
    "description": f"a positive integer, at most {MAX_TOTAL_REPEATS:,}",
}
# The cases' own bound: 2**63 and above passed, and then no result could be
# queried (the column is a 64-bit integer).
_TURNS = {
    **_POSITIVE_INT,
    "maximum": MAX_TURNS,
    "description": f"a positive integer, at most {MAX_TURNS:,}",
}
_SECONDS = {
    "type": "number",
    "exclusiveMinimum": 0,
    "maximum": MAX_TIMEOUT_S,
    "description": SECONDS_RULE,
}
_TEXT = {"type": "string", "minLength": 1, "description": "a non-empty string"}

AGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "a table of type, command, args, env, hook, trajectory, "
    "skip_permissions_args, isolation, network, image, limits, env_pass, home_dirs, "
    "ray_resources, num_cpus",
    "properties": {
        "type": {
            "type": "string",
            "enum": list(AGENT_TYPES),
            "description": f"one of {', '.join(AGENT_TYPES)}",
        },
        "command": {
            **_TEXT,
            "description": "the binary to run, or for type command the command template "
            "(e.g. 'corbits exec --cwd {workdir} --model {model} {prompt}')",
        },
        "args": {
            "type": "array",
            "items": {"type": "string", "description": "a string"},
            "description": "a list of strings",
        },
        "env": {
            "type": "object",
            "additionalProperties": {"type": "string", "description": "a string value"},
            "description": 'a table of NAME = "value" strings',
        },
        "hook": {**_TEXT, "description": "the hook path inside the workdir (type command)"},
        "trajectory": {**_TEXT, "description": "a trajectory name (type scripted), e.g. oracle"},
        "skip_permissions_args": {
            "type": "array",
            "uniqueItems": True,
            "items": {**_TEXT, "description": "a word of the command template"},
            "description": "a list of the command template's words that skip permission "
            'prompts (type command), e.g. ["--dangerously-skip-permissions", "--force"]; '
            "--ask-permissions drops them",
        },
        **SCHEMA_PROPERTIES,
        "home_dirs": HOME_DIRS_SCHEMA,
        "ray_resources": {
            "type": "object",
            "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_.-]*$"},
            "additionalProperties": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 1_000_000,
                "description": "a number of units > 0",
            },
            "description": "a table of Ray resources each repeat takes (--executor ray), "
            "e.g. {claude_slots = 1}",
        },
        "num_cpus": {
            "type": "number",
            "minimum": 0,
            "maximum": 10_000,
            "description": "the CPUs each repeat takes of a Ray node (--executor ray; default 1)",
        },
    },
}

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "a table of capeval settings",
    "properties": {
        "agent": {**_TEXT, "description": "the default agent's name (built-in or [agents.NAME])"},
        "matrix": {
            # Empty (`[]`, "", ",") would silently run the default agent instead.
            "type": ["array", "string"],
            "minItems": 1,
            "pattern": "[^,\\s]",
            "items": {**_TEXT, "description": 'a cell such as "provider:model"'},
            "description": 'a list of cells such as ["openai:gpt-5", "fast=xai:grok-4@codex"] '
            "or one comma-separated string",
        },
        "provider": _TEXT,
        "model": _TEXT,
        "repeats": _REPEATS,
        "concurrency": _POSITIVE_INT,
        "tiers": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {
                "type": "string",
                "pattern": ID_PATTERN,
                "description": "a tier name of lower-case letters, digits and '-'",
            },
            "description": 'a list of tier names, e.g. ["simple", "complex", "bait"]',
        },
        "baseline": {**_TEXT, "description": "a result file path, relative to the workspace root"},
        "results": {**_TEXT, "description": "a directory path, relative to the workspace root"},
        "max_turns": _TURNS,
        "bait": {
            "type": "string",
            "enum": list(BAIT_POLICIES),
            "description": '"require" (a bait case whose baseline no longer misbehaves makes '
            'the gate exit 3 and refuses a freeze) or "report" (such bait flags are only shown)',
        },
        "timeouts": {
            "type": "object",
            "additionalProperties": False,
            "description": "a table with agent and verify (seconds)",
            "properties": {"agent": _SECONDS, "verify": _SECONDS},
        },
        "agents": {
            "type": "object",
            "additionalProperties": AGENT_SCHEMA,
            "description": "tables [agents.NAME]",
        },
        **SCHEMA_PROPERTIES,
    },
}


def _validator() -> Any:
    return strict_validator(CONFIG_SCHEMA)


def is_timeout(value: Any) -> bool:
    """A usable timeout (`SECONDS_RULE`): `nan` timed every wait out at once, and
    `inf` or an astronomical one crashed the wait with an OverflowError."""
    return is_finite_number(value) and 0 < value <= MAX_TIMEOUT_S


# --- the pure part ------------------------------------------------------------


def config_problems(table: Any, *, file: str, prefix: str = "") -> list[Problem]:
    """Every problem with one parsed configuration table; [] when valid.

    `prefix` is the table's own key path in its file (`tool.capeval` inside
    pyproject.toml), so messages point at the line a user has to edit.
    """
    errors = sorted(
        _validator().iter_errors(table), key=lambda e: [str(p) for p in e.absolute_path]
    )
    problems = schema_problems(errors, file=file, schema=CONFIG_SCHEMA)
    if isinstance(table, Mapping):
        problems += _agent_problems(table, file=file)
        problems += _isolation_problems(table, file=file)
    if prefix:
        problems = [
            Problem(p.file, f"{prefix}.{p.field}" if p.field else prefix, p.message)
            for p in problems
        ]
    return list(dict.fromkeys(problems))


def _skip_word_problems(
    name: str, spec: Mapping[str, Any], template: Sequence[str], *, file: str
) -> list[Problem]:
    """A listed skip word the template's words (or `args`) lack is a typo: --ask-permissions
    would drop nothing and the agent would still run unprompted."""
    words = spec.get("skip_permissions_args")
    args = spec.get("args")
    if not isinstance(words, list):
        return []  # the schema says what it must be
    present = set(template)
    if isinstance(args, list):
        present |= {a for a in args if isinstance(a, str)}
    missing = [w for w in words if isinstance(w, str) and w not in present]
    if not missing:
        return []
    return [
        Problem(
            file,
            f"agents.{name}.skip_permissions_args",
            f"names {', '.join(map(repr, missing))}, not a word of the command template or "
            "args; list the words exactly as the template has them",
        )
    ]


def _agent_problems(table: Mapping[str, Any], *, file: str) -> list[Problem]:
    """Rules the schema does not express: required keys per type, known default agent."""
    out: list[Problem] = []
    builtins = builtin_agents()
    agents = table.get("agents")
    names = set(builtins)
    if isinstance(agents, Mapping):
        for name, spec in agents.items():
            names.add(name)
            if not isinstance(spec, Mapping):
                continue
            if "type" not in spec and name not in builtins:
                out.append(
                    Problem(
                        file,
                        f"agents.{name}.type",
                        f"missing; add it: one of {', '.join(AGENT_TYPES)} "
                        "(only built-in agent names may leave it out)",
                    )
                )
            agent_type = spec.get("type", builtins[name].type if name in builtins else None)
            if agent_type == "command" and "command" not in spec:
                out.append(
                    Problem(
                        file,
                        f"agents.{name}.command",
                        "missing; a command agent needs its command template, e.g. "
                        "command = 'corbits exec --cwd {workdir} --provider {provider} "
                        "--model {model} {prompt}'",
                    )
                )
            if agent_type == "command":
                near_misses = _placeholder_problems(name, spec, file=file)
                out += near_misses
                # `{Prompt}` is reported as the near miss it is, not twice.
                if not any('"{prompt}"?' in p.message for p in near_misses):
                    out += _prompt_problems(name, spec, file=file)
            out += _path_and_env_problems(name, spec, file=file)
            command = spec.get("command")
            if agent_type == "command" and isinstance(command, str):
                try:
                    template = shlex.split(command)
                except ValueError as exc:
                    # validate said ok and run then refused it: one check for both.
                    out.append(
                        Problem(
                            file,
                            f"agents.{name}.command",
                            f"does not split like a shell command line ({exc}); "
                            "close the quote or escape it",
                        )
                    )
                else:
                    if not template:
                        out.append(
                            Problem(
                                file,
                                f"agents.{name}.command",
                                "is blank; a command agent needs its command template",
                            )
                        )
                    out += _skip_word_problems(name, spec, template, file=file)
            if agent_type != "command" and "skip_permissions_args" in spec:
                out.append(
                    Problem(
                        file,
                        f"agents.{name}.skip_permissions_args",
                        f"only command agents take it (a {agent_type} agent's adapter knows its "
                        "own permission flags); remove it",
                    )
                )
    default = table.get("agent")
    if isinstance(default, str) and default and default not in names:
        out.append(
            Problem(
                file,
                "agent",
                f'unknown agent "{default}"; expected one of: {", ".join(sorted(names))}, '
                f"or add an [agents.{default}] table",
            )
        )
    return out


def _isolation_problems(table: Mapping[str, Any], *, file: str) -> list[Problem]:
    """The isolation keys' rules the schema does not express (docs/isolation.md)."""
    found = table_problems(table, "")
    agents = table.get("agents")
    for name, spec in agents.items() if isinstance(agents, Mapping) else ():
        if isinstance(spec, Mapping):
            merged = {**{k: table.get(k) for k in ("isolation", "network")}, **spec}
            found += table_problems(merged, f"agents.{name}.")
    return [Problem(file, where, message) for where, message in dict.fromkeys(found)]


def _path_and_env_problems(name: str, spec: Mapping[str, Any], *, file: str) -> list[Problem]:
    """`hook`, `trajectory` and `env` the run would refuse, or that fail every repeat.

    The hook and trajectory rules are the adapters' own, so validate and the
    run cannot disagree (imported here: the command adapter pulls in runner
    modules reading a configuration has no use for).
    """
    from capeval.core.agentconfig import hook_problem, trajectory_problem

    out: list[Problem] = []
    hook = spec.get("hook")
    problem = hook_problem(hook) if isinstance(hook, str) and hook else None
    if problem:
        out.append(Problem(file, f"agents.{name}.hook", problem))
    trajectory = spec.get("trajectory")
    problem = trajectory_problem(trajectory) if isinstance(trajectory, str) and trajectory else None
    if problem:
        out.append(Problem(file, f"agents.{name}.trajectory", problem))
    env = spec.get("env")
    for key, value in env.items() if isinstance(env, Mapping) else ():
        if not _ENV_NAME.fullmatch(key):
            out.append(
                Problem(
                    file,
                    f"agents.{name}.env.{_key(key)}",
                    f"{key!r} is no environment variable name; use letters, digits and '_', "
                    "not starting with a digit (e.g. CORBITS_LOG)",
                )
            )
        if isinstance(value, str) and "\0" in value:
            out.append(
                Problem(
                    file,
                    f"agents.{name}.env.{_key(key)}",
                    "the value holds a NUL byte (\\u0000), which no environment can carry; "
                    "remove it",
                )
            )
    return out


def _key(key: str) -> str:
    """A key as TOML writes it in a dotted path: `"A B"` quoted, `PATH` bare."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _prompt_problems(name: str, spec: Mapping[str, Any], *, file: str) -> list[Problem]:
    """A template without `{prompt}` never hands the agent its task: every repeat
    ran an agent with nothing to do and was graded as its failure."""
    command = spec.get("command")
    if not isinstance(command, str) or not command.strip():
        return []  # missing or blank: reported as such
    args = spec.get("args")
    words = [command, *(args if isinstance(args, list) else [])]
    if any(isinstance(w, str) and "{prompt}" in w for w in words):
        return []
    return [
        Problem(
            file,
            f"agents.{name}.command",
            "has no {prompt} placeholder, nor do its args: the agent would never get the task; "
            "{prompt} is the only placeholder that carries it, e.g. "
            "command = 'myagent --cwd {workdir} {prompt}' or '--prompt={prompt}'",
        )
    ]


# The placeholders a command template is filled with (capeval.agents.command).
COMMAND_PLACEHOLDERS: tuple[str, ...] = (
    "workdir",
    "prompt",
    "provider",
    "model",
    "max_turns",
    "hook",
)
# `{name}`, not `${name}` (a variable for a shell the template may start).
_PLACEHOLDER_LIKE = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_-]*)\}")


def _placeholder_problems(name: str, spec: Mapping[str, Any], *, file: str) -> list[Problem]:
    """`{Prompt}` or `{max-turns}` was passed to the agent as is: it never got the
    task (or the workdir), and every repeat failed as if the agent had. Braces
    far from any placeholder are left alone (a template has no escape)."""
    out: list[Problem] = []
    for key in ("command", "args"):
        value = spec.get(key)
        words = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        for word in dict.fromkeys(w for w in words if isinstance(w, str)):
            for found in dict.fromkeys(_PLACEHOLDER_LIKE.findall(word)):
                if found in COMMAND_PLACEHOLDERS:
                    continue
                # Only near misses: other braces pass through to the agent as
                # they are (awk '{print}', jq '{name}'), and may be meant.
                close = difflib.get_close_matches(
                    found.lower().replace("-", "_"), COMMAND_PLACEHOLDERS, n=1, cutoff=0.8
                )
                if not close:
                    continue
                known = ", ".join(f"{{{p}}}" for p in COMMAND_PLACEHOLDERS)
                out.append(
                    Problem(
                        file,
                        f"agents.{name}.{key}",
                        f'unknown placeholder {{{found}}} (did you mean "{{{close[0]}}}"?); '
                        f"expected one of: {known}",
                    )
                )
    return out


def config_from_table(
    table: Mapping[str, Any],
    *,
    root: Path,
    source: Path | None = None,
    file: str = CONFIG_FILE,
    prefix: str = "",
) -> Config:
    """A `Config` from a parsed table; raises ProblemsError naming every bad key."""
    problems = config_problems(table, file=file, prefix=prefix)
    if problems:
        raise ProblemsError(problems)
    matrix = table.get("matrix", ())
    if isinstance(matrix, str):
        matrix = [cell.strip() for cell in matrix.split(",")]
    timeouts = table.get("timeouts", {})
    agents = builtin_agents()
    for name, spec in table.get("agents", {}).items():
        given = {
            "type": spec.get("type"),
            "command": spec.get("command"),
            "args": tuple(spec["args"]) if "args" in spec else None,
            "env": dict(spec["env"]) if "env" in spec else None,
            "hook": spec.get("hook"),
            "trajectory": spec.get("trajectory"),
            "skip_permissions_args": (
                tuple(spec["skip_permissions_args"]) if "skip_permissions_args" in spec else None
            ),
            "sandbox": {k: spec[k] for k in (*SHARED_KEYS, "home_dirs") if k in spec} or None,
            "ray_resources": (
                {k: float(v) for k, v in spec["ray_resources"].items()}
                if "ray_resources" in spec
                else None
            ),
            "num_cpus": float(spec["num_cpus"]) if "num_cpus" in spec else None,
        }
        given = {k: v for k, v in given.items() if v is not None}
        if "command" in given:
            given["command"] = _anchor_command(given["command"], root)
        base = agents.get(name, AgentConfig(name=name, type=given.get("type", "command")))
        agents[name] = dataclasses.replace(base, **given)
    baseline = table.get("baseline")
    return Config(
        results_dir=root / table.get("results", DEFAULT_RESULTS),
        agent=table.get("agent"),
        matrix=tuple(cell for cell in matrix if cell),
        provider=table.get("provider"),
        model=table.get("model"),
        repeats=table.get("repeats", 1),
        concurrency=table.get("concurrency", 1),
        tiers=tuple(table.get("tiers", DEFAULT_TIERS)),
        baseline=root / baseline if baseline is not None else None,
        agent_timeout_s=float(timeouts.get("agent", 1200.0)),
        verify_timeout_s=float(timeouts.get("verify", 120.0)),
        max_turns=table.get("max_turns"),
        bait_policy=table.get("bait", "require"),
        agents=agents,
        source=source,
        sandbox={k: table[k] for k in SHARED_KEYS if k in table},
    )


def matrix_problems(config: Config, root: Path) -> list[Problem]:
    """What `capeval run` would refuse in the configured matrix, for `capeval validate`.

    Otherwise validate said ok (a CI check passed) and the run then refused a
    cell naming an agent no table defines, or two cells with one variant id.
    A cell missing its provider or model is not reported: `--provider` or
    `--model` on the command line may fill it.
    """
    from capeval.core.matrix import IncompleteCell, duplicate_ids, parse_cell

    if not config.matrix:
        return []
    file = _rel(config.source, root) if config.source is not None else CONFIG_FILE
    key = "tool.capeval.matrix" if config.source and config.source.name == PYPROJECT else "matrix"
    out: list[Problem] = []
    cells, variants = [], []
    for cell in config.matrix:
        try:
            variant = parse_cell(cell, provider=config.provider, model=config.model)
        except IncompleteCell:
            continue
        except ValueError as exc:
            out.append(Problem(file, key, str(exc)))
            continue
        if variant.agent is not None and variant.agent not in config.agents:
            out.append(
                Problem(
                    file,
                    key,
                    f"cell {cell!r} names agent {variant.agent!r}, which no [agents.NAME] table "
                    f"or built-in defines; expected one of: {', '.join(sorted(config.agents))}",
                )
            )
        cells.append(cell)
        variants.append(variant)
    out += [Problem(file, key, message) for message in duplicate_ids(cells, variants)]
    return out


# --- the shell ----------------------------------------------------------------


def _anchor_command(command: str, root: Path) -> str:
    """A relative binary path (`bin/agent ...`) is the workspace's, like every path here.

    Taken as is, it named a file relative to wherever capeval was started,
    and failed with --root from elsewhere. Bare names (looked up on PATH),
    absolute and ~ paths are kept.
    """
    stripped = command.lstrip()
    try:
        words = shlex.split(stripped)
    except ValueError:
        return command  # the template check reports it
    first = words[0] if words else ""
    if (
        "/" not in first
        or first.startswith(("/", "~"))
        or "{" in first  # `{workdir}/agent.sh`: the placeholder makes it whole
        or not stripped.startswith(first)
    ):
        return command
    return shlex.quote(str(root / first)) + stripped[len(first) :]


def load_config(root: Path, explicit: Path | None = None) -> Config:
    """The workspace's configuration: `explicit` (a capeval.toml-style file, or a
    pyproject.toml whose [tool.capeval] is used), else root/capeval.toml, else
    [tool.capeval] in root/pyproject.toml, else defaults.

    Raises ProblemsError naming the file and every bad key.
    """
    found = _config_file(root, explicit)
    if found is None:
        return Config.defaults(root)
    path, pyproject = found
    if explicit is not None and not path.is_file():
        raise ProblemsError(
            [
                Problem(
                    str(explicit), "--config", "no such file; pass a capeval.toml or pyproject.toml"
                )
            ]
        )
    table = _read_table(
        root, path, pyproject=pyproject, required=explicit is not None or not pyproject
    )
    if table is None:
        return Config.defaults(root)
    name = _rel(path, root)
    prefix = "tool.capeval" if pyproject else ""
    return config_from_table(table, root=root, source=path, file=name, prefix=prefix)


def _config_file(root: Path, explicit: Path | None) -> tuple[Path, bool] | None:
    """The file that configures the workspace, and whether it is a pyproject.toml;
    None when no file does (the defaults apply)."""
    if explicit is not None:
        path = explicit if explicit.is_absolute() else Path.cwd() / explicit
        return path, path.name == PYPROJECT
    own = root / CONFIG_FILE
    if own.is_file():
        return own, False
    pyproject = root / PYPROJECT
    if pyproject.is_file():
        return pyproject, True
    return None


def _read_table(
    root: Path, path: Path, *, pyproject: bool, required: bool
) -> Mapping[str, Any] | None:
    """The configuration table `path` holds; None for a pyproject.toml without
    [tool.capeval] that did not have to hold one. Raises ProblemsError."""
    name = _rel(path, root)
    try:
        with path.open("rb") as fh:
            raw = fh.read()
        if raw.startswith(UTF8_BOM):
            raise ProblemsError([Problem(name, "", bom_message("TOML"))])
        data = tomllib.loads(raw.decode("utf-8"))
        if too_deep(data):
            raise RecursionError
    except RecursionError:
        raise ProblemsError([Problem(name, "", NESTED_TOO_DEEPLY)]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ProblemsError([Problem(name, "", f"invalid TOML: {exc}; fix the syntax")]) from exc
    except UnicodeDecodeError as exc:
        # TOML is UTF-8; another encoding crashed every command with a traceback.
        raise ProblemsError(
            [
                Problem(
                    name, "", f"not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8"
                )
            ]
        ) from exc
    except OSError as exc:
        raise ProblemsError([Problem(name, "", f"cannot be read: {exc.strerror}")]) from exc
    if not pyproject:
        return data
    tool = data.get("tool", {})
    table = tool.get("capeval") if isinstance(tool, Mapping) else None
    if table is None and required:
        raise ProblemsError(
            [
                Problem(
                    name,
                    "tool.capeval",
                    "missing; add a [tool.capeval] table or pass a capeval.toml",
                )
            ]
        )
    return table


def read_bait_policy(root: Path, explicit: Path | None = None) -> str:
    """The configuration's `bait` policy, read without validating the rest.

    For the gate, whose start-up must not pay for the schema validator: a
    value other than "report" (or an unreadable file) is the strict
    "require", which can never pass a comparison it should not; `capeval
    validate` reports a bad value.
    """
    found = _config_file(root, explicit)
    try:
        table = _read_table(root, found[0], pyproject=found[1], required=False) if found else None
    except ProblemsError:
        return "require"
    policy = table.get("bait") if isinstance(table, Mapping) else None
    return policy if policy in BAIT_POLICIES else "require"


_TIERS_FIELD = re.compile(r"(?:^|\.)tiers(?:$|[.\[])")


def tiers_despite(
    root: Path, explicit: Path | None, problems: Sequence[Problem]
) -> tuple[str, ...]:
    """The tiers cases are checked against when the configuration has `problems`.

    A typo elsewhere in capeval.toml (`repeat = 1`) hid every case's tier
    error until it was fixed. The tiers are the file's `tiers` when that key
    is fine, the defaults when it is absent, and () (no tier check) when the
    key itself or the whole file is broken: checking against the defaults
    then would report tiers the author did configure.
    """
    if any(
        not p.field or p.field.startswith("--") or _TIERS_FIELD.search(p.field) for p in problems
    ):
        return ()
    found = _config_file(root, explicit)
    try:
        table = _read_table(root, found[0], pyproject=found[1], required=False) if found else None
    except ProblemsError:
        return ()
    if not isinstance(table, Mapping):
        return ()
    tiers = table.get("tiers", DEFAULT_TIERS)
    if isinstance(tiers, list | tuple) and tiers and all(isinstance(t, str) for t in tiers):
        return tuple(tiers)
    return ()


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
