"""Canonical tool kinds, and the shell command a tool call really ran.

Every agent names its tools differently (`run_shell`, `Bash`,
`command_execution`, `run_shell_command`, `bash`). Behavior metrics must not
care which agent ran, so each native name maps onto one kind from
`capeval.core.turns`, and a shell call's command is recovered as the script the
model wrote: without the `bash -lc '…'` wrapper some agents add themselves.
"""

from __future__ import annotations

import json
import posixpath
import shlex
from collections.abc import Mapping
from typing import Any

from capeval.core import turns
from capeval.core.scanner import literal_word, scan_segments

# Native tool name -> kind, per agent (docs/behavior-metrics.md#tool-kinds, docs/agents.md#the-adapters).
_CORBITS = {
    "run_shell": turns.SHELL,
    "read_file": turns.READ,
    "write_file": turns.WRITE,
    "edit_file": turns.EDIT,
    "grep": turns.SEARCH,
    "search_files": turns.SEARCH,
    "list_dir": turns.LIST,
    "web_fetch": turns.WEB_FETCH,
    "task": turns.TASK,
    "spawn_agent": turns.TASK,
}
_CLAUDE = {
    "Bash": turns.SHELL,
    "Read": turns.READ,
    "Edit": turns.EDIT,
    "MultiEdit": turns.EDIT,
    "NotebookEdit": turns.EDIT,
    "Write": turns.WRITE,
    "Glob": turns.SEARCH,
    "Grep": turns.SEARCH,
    "LS": turns.LIST,
    "WebFetch": turns.WEB_FETCH,
    "WebSearch": turns.SEARCH,
    "Agent": turns.TASK,
    "Task": turns.TASK,
}
_CODEX = {
    "command_execution": turns.SHELL,
    "exec_command": turns.SHELL,  # the wire name of the same shell tool
    "shell": turns.SHELL,
    "file_change": turns.EDIT,
    "apply_patch": turns.EDIT,
    "web_search": turns.SEARCH,
    "view_image": turns.READ,
}
_GEMINI = {
    "run_shell_command": turns.SHELL,
    "read_many_files": turns.READ,
    "replace": turns.EDIT,
    "grep_search": turns.SEARCH,
    "search_file_content": turns.SEARCH,
    "glob": turns.SEARCH,
    "list_directory": turns.LIST,
    "google_web_search": turns.SEARCH,
    "invoke_agent": turns.TASK,  # Gemini CLI 0.61 dispatches every sub-agent through it
}
_OPENCODE = {
    "bash": turns.SHELL,
    "read": turns.READ,
    "edit": turns.EDIT,
    "write": turns.WRITE,
    "patch": turns.EDIT,
    "multiedit": turns.EDIT,
    "list": turns.LIST,
    "webfetch": turns.WEB_FETCH,
    "websearch": turns.SEARCH,
}

TOOL_KINDS: dict[str, str] = {**_CORBITS, **_CLAUDE, **_CODEX, **_GEMINI, **_OPENCODE}

# Shells whose `-c SCRIPT` form agents wrap commands in.
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
# Argument keys under which agents pass a shell command.
_COMMAND_KEYS = ("command", "cmd", "script")


def tool_kind(name: str) -> str:
    """The canonical kind of a native tool name; unknown tools are `other`.

    MCP tools (`mcp__server__tool`) are `other` whatever they do: the original
    harness counted `mcp__exa__web_fetch_exa` as no web fetch, and a guess from
    a server's naming would make the metric depend on it.
    """
    kind = TOOL_KINDS.get(name)
    if kind is None and not name.startswith("mcp__"):
        kind = TOOL_KINDS.get(name.lower())
    return kind or turns.OTHER


def unwrap_shell(command: str) -> str:
    """The script inside an agent-added `bash -lc '<script>'` / `sh -c` wrapper.

    The wrapper must be the whole command: a shell (any path) with options
    including `c`, then exactly one script word. Anything else — a chain, a
    redirect, positional arguments after the script, an expansion in the
    wrapper — is returned unchanged, because it is then the model's own shell
    code, not an agent's wrapper. A trailing `# comment` is no code and does
    not count (bash ignores it). The script is dequoted as bash would
    (`'…'`, `"…"` with its backslash rules, `$'…'`, `\\x`), so it comes back
    exactly. Only one layer is removed.
    """
    segments = scan_segments(command)
    if len(segments) != 1 or segments[0].heredoc:
        return command
    words = [literal_word(w) for w in segments[0].words]
    literal = [w for w in words if w is not None]
    if len(literal) < 3 or len(literal) != len(words):
        return command
    shell, *rest = literal
    if posixpath.basename(shell) not in _SHELLS:
        return command
    has_c = False
    k = 0
    while k < len(rest) and len(rest[k]) > 1 and rest[k][0] in "-+":
        option = rest[k]
        k += 1
        if option == "--":
            break
        if option in ("-o", "+o", "-O", "+O"):
            k += 1  # these take a value: -o pipefail
        elif option[0] == "-" and not option.startswith("--"):
            has_c = has_c or "c" in option[1:]
    if has_c and k == len(rest) - 1:
        return rest[k]
    return command


def shell_command(arguments: Any) -> str | None:
    """The command string of a shell call's arguments, unwrapped; None if there is none.

    Accepts the shapes agents use: `{"command": "..."}` (also `cmd`,
    `script`), an argv list (`["bash", "-lc", "..."]`, under one of those keys
    or as the arguments themselves), the arguments as a JSON-encoded string
    (the Responses wire format), or the bare command string.
    """
    if isinstance(arguments, str):
        stripped = arguments.strip()
        if stripped.startswith("{"):
            try:
                decoded = json.loads(stripped)
            except (ValueError, RecursionError):
                decoded = None
            if isinstance(decoded, Mapping):
                return shell_command(decoded)
        return unwrap_shell(arguments)
    if isinstance(arguments, Mapping):
        for key in _COMMAND_KEYS:
            if key in arguments:
                value = arguments[key]
                if isinstance(value, str):
                    return unwrap_shell(value)
                if _is_argv(value):
                    return _argv_command(value)
                return None
        return None
    if _is_argv(arguments):
        return _argv_command(arguments)
    return None


def _is_argv(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _argv_command(argv: list[str]) -> str:
    """An argv list as one command string: the script of a wrapper, else the words joined."""
    return unwrap_shell(shlex.join(argv))


def make_tool_call(id: str, name: str, arguments: Any, result: str | None = None) -> turns.ToolCall:
    """A `ToolCall` with its kind and (for shell calls) its unwrapped command filled in.

    Adapters should build calls with this, so that every agent's calls are
    classified the same way.
    """
    kind = tool_kind(name)
    command = shell_command(arguments) if kind == turns.SHELL else None
    return turns.ToolCall(
        id=id, name=name, arguments=arguments, kind=kind, command=command, result=result
    )
