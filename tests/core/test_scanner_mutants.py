"""Scanner rules that a mutation audit found no test guarding.

Each case is one rule of the quote-aware scan (spec section 6) that a
one-line break of `capeval.core.scanner` or `capeval.core.toolkinds` left unnoticed.
Where the script is straight-line shell, real bash is the judge: it runs the
script with `curl` defined as a function that only counts its calls, and the
network metric must count exactly the calls bash made.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from capeval.core.behaviors import derive_behaviors
from capeval.core.runsummary import summary_from_json
from capeval.core.scanner import command_word, unquote_word
from capeval.core.toolkinds import unwrap_shell


def shell(command: str) -> dict[str, Any]:
    """Behaviors of one Claude Code `Bash` call running `command`."""
    call = {"name": "Bash", "arguments": {"command": command}}
    return derive_behaviors(summary_from_json({"turns": [{"toolCalls": [call]}]}))


def bash_curl_calls(script: str, tmp_path: Path) -> int:
    """How many times real bash runs `curl` in `script` (a counting stand-in)."""
    log = tmp_path / "curl.log"
    prelude = f"curl() {{ echo x >> '{log}'; }}; export -f curl\n"
    subprocess.run(
        ["bash", "-c", prelude + script],
        cwd=tmp_path,
        capture_output=True,
        timeout=30,
        check=False,
    )
    return len(log.read_text().splitlines()) if log.exists() else 0


# (script, chain segments, network commands, shell edits)
SCRIPTS = [
    # `<<\EOF` quotes its delimiter with a backslash: the body ends at `EOF`.
    ("cat <<\\EOF > f\ncurl a; b && c\nEOF\ncurl u", 2, 1, 1),
    # `<<-` strips leading tabs only: a space-indented delimiter ends nothing,
    # so the body runs to the end of the script (bash warns and agrees).
    ("cat <<-EOF > f\n  x\n  EOF\ncurl u", 1, 0, 1),
    ("cat <<-EOF > f\n\tx\n\tEOF\ncurl u", 2, 1, 1),
    # A backtick substitution inside "…" holds quotes of its own.
    ('echo "v=`printf "%s" "a; b"`; ok" && curl u', 2, 1, 0),
    # An escaped backtick inside backticks nests a substitution.
    ("echo `echo \\`echo a\\`` && curl u", 2, 1, 0),
    # "…" inside ${ … } may hold a "}".
    ('echo ${x:-"}"} && curl u', 2, 1, 0),
    # So may '…', outside double quotes and inside them.
    ("echo ${x:-'}'} && curl u", 2, 1, 0),
    ("echo \"${x:-'}'}\" && curl u", 2, 1, 0),
    ("x=; echo ${x:-'a}b'} && curl u", 3, 1, 0),
    ("echo ${x:-$'\\''} && curl u", 2, 1, 0),
    # `time --` ends time's options: the command is the next word.
    ("time -- curl u", 1, 1, 0),
    # A subshell followed by a redirection still runs its command.
    ("(curl u) &>/dev/null", 1, 1, 0),
    ("(curl u) {fd}>log", 1, 1, 0),
    # A function body runs when the function is called; its header hides
    # nothing, on one line as on several.
    ("get() { curl u; }; get", 3, 1, 0),
    ("get() {\n  curl u\n}\nget", 4, 1, 0),
    ("get () { curl u; }; get", 3, 1, 0),
    ("function get { curl u; }; get", 3, 1, 0),
    ("function get() (curl u); get", 2, 1, 0),
    ("function get () { curl u; }; get", 3, 1, 0),
    ("put() { sed -i s/a/b/ f; }; touch f; put", 4, 0, 1),
]


@pytest.mark.parametrize(("script", "segments", "network", "edits"), SCRIPTS)
def test_scan_counts_what_bash_runs(
    script: str, segments: int, network: int, edits: int, tmp_path: Path
) -> None:
    result = shell(script)
    assert (
        result["chainSegmentCount"],
        result["networkCommandCount"],
        result["editViaShellCount"],
    ) == (segments, network, edits)
    assert bash_curl_calls(script, tmp_path) == network


def test_a_function_header_is_no_command() -> None:
    """`f () { FOO=1 make; }` assigns in its body; `arr=()` is no header."""
    assert shell("f () { FOO=1 make; }")["envAssignmentCommandCount"] == 1
    assert command_word("arr=() curl u") == "curl"
    assert shell("arr=()")["envAssignmentCommandCount"] == 1
    assert command_word("get()") is None


def test_a_quoted_paren_in_a_case_pattern_is_no_parenthesis() -> None:
    """`"(")` is a case pattern: the quoted "(" opens nothing."""
    assert command_word('case $x in "(") curl u') == "curl"


def test_process_substitution_for_output_is_part_of_a_word() -> None:
    """After `>( … )`, as after `<( … )`, a `#` continues the word."""
    assert shell("tee >(cat)#b && curl u")["chainSegmentCount"] == 2
    assert shell("tee >(cat)#b && curl u")["networkCommandCount"] == 1


def test_ansi_c_octal_escapes_of_every_digit() -> None:
    assert unquote_word("$'\\177\\7\\101'") == "\x7f\x07A"
    assert unquote_word("$'\\UFFFFFFFF'") == chr(0x10FFFF)  # out of range: clamped, no error


def test_a_glob_in_the_wrapper_is_the_models_own_shell() -> None:
    """bash expands an unquoted `ls*` before `-c` sees it: no agent wrapper."""
    assert unwrap_shell("sh -c ls*") == "sh -c ls*"


@pytest.mark.parametrize("wrapper", ["bash +e -c", "bash +o posix -lc", "sh -e +x -c"])
def test_plus_options_before_c_keep_the_wrapper(wrapper: str) -> None:
    """`+e` turns an option off, as `-e` turns it on: still the agent's wrapper."""
    assert unwrap_shell(f"{wrapper} 'curl u && ls'") == "curl u && ls"
