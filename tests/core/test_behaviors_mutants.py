"""Behavior-metric rules that a mutation audit found no test guarding.

Each test pins one rule of spec sections 5 and 6 (or a documented decision
in `capeval.core.behaviors`) that a one-line break of the code left unnoticed.
"""

from __future__ import annotations

from typing import Any

import pytest

from capeval.core.behaviors import backfill_legacy, derive_behaviors
from capeval.core.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME, direction
from capeval.core.runsummary import summary_from_json
from capeval.core.toolkinds import unwrap_shell
from tests.specfacts import LOWER_IS_BETTER


def shell(*commands: str) -> dict[str, Any]:
    """Behaviors of one turn running each command through corbits `run_shell`."""
    calls = [{"name": "run_shell", "arguments": {"command": c}} for c in commands]
    return derive_behaviors(summary_from_json({"turns": [{"toolCalls": calls}]}))


# -- the catalog ------------------------------------------------------------


def test_directions_are_the_spec_table() -> None:
    """The gate flags a regression only in a metric's "lower" direction, so a
    wrong direction silently turns a gated metric off (or a neutral one on)."""
    assert {name: direction(name) for name in METRIC_NAMES} == {
        name: "lower" if name in LOWER_IS_BETTER else "neutral" for name in METRIC_NAMES
    }


def test_tool_calls_by_name_and_unknown_metrics_are_never_lower() -> None:
    assert direction(TOOL_CALLS_BY_NAME) == "neutral"
    assert direction("someFutureMetric") == "neutral"


# -- editViaShellCount -------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "count"),
    [
        ("sed --in-place=.bak 's/a/b/' f", 1),  # the long option with a suffix
        ("sed -i'' 's/a/b/' f", 1),  # BSD habit: -i with an empty quoted suffix
        ("perl -mstrict -e 'print 1' f", 0),  # -m takes the rest: `strict` is a module
        ("perl -Mwarnings -ne 'print' f", 0),
    ],
)
def test_edit_via_shell_switch_spellings(command: str, count: int) -> None:
    assert shell(command)["editViaShellCount"] == count


# -- legacy backfill ---------------------------------------------------------


def test_backfill_fills_a_task_count_written_as_null() -> None:
    filled = backfill_legacy({"taskToolCallCount": None, TOOL_CALLS_BY_NAME: {"spawn_agent": 2}})
    assert filled is not None
    assert filled["taskToolCallCount"] == 2


def test_backfill_counts_no_boolean_as_a_call() -> None:
    filled = backfill_legacy({TOOL_CALLS_BY_NAME: {"task": True, "spawn_agent": 3}})
    assert filled is not None
    assert filled["taskToolCallCount"] == 3


# -- unwrapping an agent-added wrapper -----------------------------------------


def test_an_option_after_c_keeps_the_wrapper() -> None:
    """`bash -c -e 'x'` runs `x` (bash reads every option, then the script)."""
    assert unwrap_shell("bash -c -e 'curl x && y'") == "curl x && y"


def test_an_expanded_positional_argument_after_the_script_is_no_wrapper() -> None:
    """The script's `$0` is the expansion: the whole command is the model's own."""
    command = "sh -c 'curl \"$0\"' $URL"
    assert unwrap_shell(command) == command


# -- the scanner: heredocs and comments ----------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cat <<'EOF' > f\n$x; y && z\nEOF\ncurl u",  # a quoted delimiter ends the body unquoted
        'cat <<"EOF" > f\n$x; y && z\nEOF\ncurl u',
        "cat <<EOF > f\r\n$x; y && z\r\nEOF\r\ncurl u\r\n",  # CRLF line endings
    ],
)
def test_a_heredoc_body_ends_at_its_delimiter_line(command: str) -> None:
    result = shell(command)
    assert result["chainSegmentCount"] == 2
    assert result["editViaShellCount"] == 1
    assert result["networkCommandCount"] == 1


def test_a_comment_right_after_a_command_substitution_opens_no_quote() -> None:
    """In `$(# it's …` the `#` starts a word, so bash reads a comment."""
    result = shell("echo $(# it's a note\necho a) && curl x")
    assert result["chainSegmentCount"] == 2
    assert result["networkCommandCount"] == 1


# -- the turn stream's JSON shape (section 5) ----------------------------------


def test_error_and_tool_results_survive_a_round_trip() -> None:
    """`error?` and the optional tool results are part of the summary shape."""
    summary = summary_from_json(
        {
            "status": "error",
            "error": "max turns",
            "turns": [{"toolCalls": [{"id": "1", "name": "ls", "arguments": {}, "result": "a"}]}],
        }
    )
    out = summary.to_json()
    assert out["error"] == "max turns"
    assert out["turns"][0]["toolCalls"][0]["result"] == "a"
    assert summary_from_json(out) == summary
