"""Tool kinds per agent, shell-command extraction, and unwrapping agent-added shell wrappers."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capeval.core import turns
from capeval.core.toolkinds import make_tool_call, shell_command, tool_kind, unwrap_shell

KINDS = {
    # corbits
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
    "use_skill": turns.OTHER,
    "manage_tasks": turns.OTHER,
    # Claude Code
    "Bash": turns.SHELL,
    "Read": turns.READ,
    "Edit": turns.EDIT,
    "MultiEdit": turns.EDIT,
    "NotebookEdit": turns.EDIT,
    "Write": turns.WRITE,
    "LS": turns.LIST,
    "Glob": turns.SEARCH,
    "Grep": turns.SEARCH,
    "WebFetch": turns.WEB_FETCH,
    "WebSearch": turns.SEARCH,
    "Agent": turns.TASK,
    "Task": turns.TASK,
    "TodoWrite": turns.OTHER,
    "mcp__exa__web_fetch_exa": turns.OTHER,
    "mcp__fs__bash": turns.OTHER,
    # Codex items
    "command_execution": turns.SHELL,
    "exec_command": turns.SHELL,  # the wire name of the same tool (agent-streams.md)
    "shell": turns.SHELL,
    "file_change": turns.EDIT,
    "mcp_tool_call": turns.OTHER,
    "web_search": turns.SEARCH,
    "view_image": turns.READ,
    # Gemini CLI
    "run_shell_command": turns.SHELL,
    "replace": turns.EDIT,
    "read_many_files": turns.READ,
    "search_file_content": turns.SEARCH,
    "grep_search": turns.SEARCH,
    "glob": turns.SEARCH,
    "list_directory": turns.LIST,
    "google_web_search": turns.SEARCH,
    "invoke_agent": turns.TASK,
    # opencode
    "bash": turns.SHELL,
    "read": turns.READ,
    "edit": turns.EDIT,
    "write": turns.WRITE,
    "patch": turns.EDIT,
    "multiedit": turns.EDIT,
    "list": turns.LIST,
    "webfetch": turns.WEB_FETCH,
    "websearch": turns.SEARCH,
    "apply_patch": turns.EDIT,
    "todowrite": turns.OTHER,
    # unknown
    "frobnicate": turns.OTHER,
    "": turns.OTHER,
}


@pytest.mark.parametrize(("name", "kind"), KINDS.items())
def test_tool_kind_of_every_agents_tools(name: str, kind: str) -> None:
    assert tool_kind(name) == kind


def test_tool_kind_falls_back_to_lower_case_but_not_for_mcp() -> None:
    assert tool_kind("BASH") == turns.SHELL
    assert tool_kind("Run_Shell") == turns.SHELL
    assert tool_kind("mcp__x__Bash") == turns.OTHER


UNWRAP = [
    (
        "/bin/bash -lc 'cat hello.txt && echo ok > second.txt'",
        "cat hello.txt && echo ok > second.txt",
    ),
    ("bash -lc 'echo hi'", "echo hi"),
    ("bash -c 'echo hi'", "echo hi"),
    ("sh -c 'a; b'", "a; b"),
    ("zsh -lc 'x | y'", "x | y"),
    ("/usr/bin/zsh -l -c 'x'", "x"),
    ('/bin/bash -lc "echo \\$HOME \\"q\\" \\\\ \\n"', 'echo $HOME "q" \\ \\n'),
    ("bash -lc 'it'\\''s'", "it's"),
    ("bash -lc $'line1\\nline2'", "line1\nline2"),
    ("bash -o pipefail -c 'a | b'", "a | b"),
    ("bash -O extglob -c 'a | b'", "a | b"),
    ("ksh -c 'a | b'", "a | b"),
    ("bash --noprofile --norc -c 'x'", "x"),
    ("  bash -lc 'x'  ", "x"),
    ("bash -lc 'cat <<EOF\na && b\nEOF'", "cat <<EOF\na && b\nEOF"),
    ("bash -lc \"echo '(' ; echo ')'\"", "echo '(' ; echo ')'"),
    ("bash -lc '# it'\\''s\ncurl x'", "# it's\ncurl x"),
    ("bash -lc 'curl x' # it's the wrapper", "curl x"),  # a comment is no code
    ("bash -lc 'a'#x", "a#x"),  # inside a word `#` is no comment: bash runs `a#x`
    ("bash -lc '(( n = 1 << 3 ))'", "(( n = 1 << 3 ))"),
]

NOT_WRAPPERS = [
    "bash script.sh",
    "bash -l script.sh",  # no -c: a script file, not a command string
    "bash --norc script.sh",  # the c of a long option is no -c
    "bash -c",
    "bash -lc 'a' && b",  # a chain around the wrapper: the model's own shell
    "bash -c 'x' > out",
    "bash -c 'x'>out",
    "sh -c 'echo $0' arg0",  # positional arguments after the script
    "bash -c $SCRIPT",
    'bash -c "$(cat f)" | tee log',
    "python -c 'print(1)'",
    "echo bash -c x",
    "bash <<EOF\nls\nEOF",
    "bash -lc 'a' #x\nb",  # a second line after the comment
    "",
]


@pytest.mark.parametrize(("command", "script"), UNWRAP)
def test_unwrap_shell_recovers_the_script(command: str, script: str) -> None:
    assert unwrap_shell(command) == script


@pytest.mark.parametrize("command", NOT_WRAPPERS)
def test_unwrap_shell_leaves_other_commands_alone(command: str) -> None:
    assert unwrap_shell(command) == command


def test_unwrap_shell_removes_one_layer_only() -> None:
    assert unwrap_shell("bash -lc \"sh -c 'x'\"") == "sh -c 'x'"


def test_script_that_looks_like_an_option_is_not_unwrapped() -> None:
    """`bash -c '-x'` makes bash parse `-x` as an option, so it runs no script."""
    assert unwrap_shell("bash -lc '-0'") == "bash -lc '-0'"


def test_an_option_after_c_keeps_the_wrapper() -> None:
    """`bash -c -e 'x'` runs `x` (bash reads every option, then the script)."""
    assert unwrap_shell("bash -c -e 'curl x && y'") == "curl x && y"


def test_an_expanded_positional_argument_after_the_script_is_no_wrapper() -> None:
    """The script's `$0` is the expansion: the whole command is the model's own."""
    command = "sh -c 'curl \"$0\"' $URL"
    assert unwrap_shell(command) == command


def test_a_glob_in_the_wrapper_is_the_models_own_shell() -> None:
    """bash expands an unquoted `ls*` before `-c` sees it: no agent wrapper."""
    assert unwrap_shell("sh -c ls*") == "sh -c ls*"


@pytest.mark.parametrize("wrapper", ["bash +e -c", "bash +o posix -lc", "sh -e +x -c"])
def test_plus_options_before_c_keep_the_wrapper(wrapper: str) -> None:
    """`+e` turns an option off, as `-e` turns it on: still the agent's wrapper."""
    assert unwrap_shell(f"{wrapper} 'curl u && ls'") == "curl u && ls"


def _bash_double_quote(script: str) -> str:
    escaped = "".join("\\" + c if c in '$`"\\' else c for c in script)
    return f'"{escaped}"'


def _bash_argv(command: str) -> list[str]:
    """How real bash splits `command` into words (NUL-separated printf)."""
    out = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {command}"],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "surrogateescape")
    return out.split("\0")[:-1]


SCRIPT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
    min_size=1,
    max_size=40,
).filter(lambda s: s[0] not in "-+")  # bash reads those as options: see the test below


@settings(max_examples=60, deadline=None)
@given(SCRIPT, st.sampled_from(["single", "double", "shlex"]))
def test_unwrap_agrees_with_real_bash(script: str, quoting: str) -> None:
    """The unwrapped script is the exact argument bash itself would pass."""
    if quoting == "double":
        quoted = _bash_double_quote(script)
    elif quoting == "single":
        quoted = "'" + script.replace("'", "'\\''") + "'"
    else:
        quoted = shlex.quote(script)
    command = f"/bin/bash -lc {quoted}"
    assert _bash_argv(command)[-1] == script
    assert unwrap_shell(command) == script


def test_codex_stream_commands_unwrap(agent_streams: Path) -> None:
    """The real Codex CLI reports `/bin/bash -lc '<script>'`: the script comes back."""
    commands = []
    for path in sorted(agent_streams.glob("codex*.jsonl")):
        for line in path.read_text().splitlines():
            item = json.loads(line).get("item") or {}
            if item.get("type") == "command_execution":
                commands.append(item["command"])
    assert commands
    for command in commands:
        script = unwrap_shell(command)
        assert script != command
        assert _bash_argv(command)[-1] == script


@pytest.mark.parametrize(
    ("arguments", "command"),
    [
        ({"command": "ls -la"}, "ls -la"),
        ({"cmd": "bash -lc 'ls'"}, "ls"),
        ({"script": "make"}, "make"),
        ({"command": ["bash", "-lc", "a && b"]}, "a && b"),
        ({"command": ["ls", "-la", "my dir"]}, "ls -la 'my dir'"),
        (["bash", "-lc", "it's"], "it's"),
        ('{"cmd": "echo hi", "yield_time_ms": 1000}', "echo hi"),
        ("git status", "git status"),
        ({"command": 42}, None),
        ({"command": None}, None),
        ({"command": []}, None),
        ({"path": "x"}, None),
        ('{"path": "x"}', None),  # JSON-encoded arguments without a command
        (None, None),
        (7, None),
    ],
)
def test_shell_command_from_every_argument_shape(arguments: object, command: str | None) -> None:
    assert shell_command(arguments) == command


def test_make_tool_call_classifies_and_unwraps() -> None:
    call = make_tool_call("1", "Bash", {"command": "bash -lc 'curl x'"})
    assert (call.kind, call.command) == (turns.SHELL, "curl x")
    other = make_tool_call("2", "Read", {"command": "not a shell call"})
    assert (other.kind, other.command) == (turns.READ, None)
