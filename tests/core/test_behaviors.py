"""Behavior metrics over hand-built turn streams, legacy backfill, and `capeval behaviors`."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capeval.core.behaviors import backfill_legacy, derive_behaviors, normalize_arguments
from capeval.core.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME
from capeval.core.runsummary import summary_from_json
from capeval.core.turns import RunSummary, ToolCall, Turn
from tests.clirun import capeval

DATA = Path(__file__).parents[1] / "data" / "summaries"


def turn(*calls: tuple[str, Any], text: str | None = None, ms: float | None = None) -> dict:
    content = [] if text is None else [{"type": "text", "text": text}]
    return {
        "assistantTurn": {"content": content},
        "toolCalls": [{"name": name, "arguments": args} for name, args in calls],
        "durationMs": ms,
    }


def behaviors_of(*turns: dict) -> dict[str, Any]:
    return derive_behaviors(summary_from_json({"turns": list(turns)}))


def shell(*commands: str) -> dict[str, Any]:
    """Behaviors of one turn running each command through corbits `run_shell`."""
    return behaviors_of(turn(*(("run_shell", {"command": c}) for c in commands)))


def test_output_has_the_eleven_metrics_in_catalog_order_then_tool_calls() -> None:
    result = behaviors_of()
    assert list(result) == [*METRIC_NAMES, TOOL_CALLS_BY_NAME]
    assert all(result[name] == 0 for name in METRIC_NAMES)
    assert result[TOOL_CALLS_BY_NAME] == {}


def test_shell_command_count_counts_string_commands_of_every_agent() -> None:
    result = behaviors_of(
        turn(
            ("run_shell", {"command": "ls"}),
            ("Bash", {"command": "ls"}),
            ("command_execution", {"command": "/bin/bash -lc 'ls'"}),
            ("run_shell_command", {"command": "ls"}),
            ("bash", {"command": "ls"}),
            ("run_shell", {"command": ["ls", "-la"]}),  # argv form counts too
            ("run_shell", {"command": 42}),  # not a command string
            ("run_shell", {}),
            ("read_file", {"command": "ls"}),  # not a shell tool
        )
    )
    assert result["shellCommandCount"] == 6


def test_chain_segments_sum_and_maximum() -> None:
    result = shell("a && b | c", "d", "bash -lc 'e; f'", "")
    assert result["chainSegmentCount"] == 3 + 1 + 2 + 0
    assert result["maxChainSegmentsPerCommand"] == 3
    assert result["shellCommandCount"] == 4


def test_wrapper_is_unwrapped_before_counting_segments() -> None:
    wrapped = shell("/bin/bash -lc 'cd app && FOO=1 make && curl -s x'")
    assert wrapped["chainSegmentCount"] == 3
    assert wrapped["envAssignmentCommandCount"] == 1
    assert wrapped["networkCommandCount"] == 1


@pytest.mark.parametrize(
    ("command", "count"),
    [
        ("FOO=bar make", 1),
        ("export X=1", 1),
        ("export X=1 && Y=2 cmd && Z=3 other", 1),  # at most one per command
        ("cd x && A=1 B=2 ./run", 1),
        ("echo mode=release", 0),
        ("make mode=release", 0),
        ("env FOO=1 curl x", 0),  # spec: first word only
        ('"FOO=bar" cmd', 0),
        ("echo 'X=1 cmd; export Y'", 0),
        ("cat <<EOF\nexport X=1\nEOF", 0),  # heredoc body is data
        ("if true; then FOO=1 make; fi", 1),  # the command after `then`
        ("for f in a; do export X=$f; done", 1),
        ("{ A=1 b; }", 1),
        ("for X in 1 2; do echo $X; done", 0),  # a loop variable is no assignment
        ("(( X = 1 ))", 0),  # nor is an arithmetic one
        ("# FOO=1 make", 0),
    ],
)
def test_env_assignment_command_count(command: str, count: int) -> None:
    assert shell(command)["envAssignmentCommandCount"] == count


def test_env_assignments_count_commands_not_segments() -> None:
    assert shell("A=1 a; B=2 b", "C=3 c", "d")["envAssignmentCommandCount"] == 2


@pytest.mark.parametrize(
    ("command", "count"),
    [
        ("curl -s http://127.0.0.1/", 1),
        ("wget x && nc -z h 1 && ncat h && telnet h", 4),
        ("aria2c u; http GET u; xh u; httpie u", 4),
        ("PROXY=1 curl x", 1),
        ("/usr/bin/curl x", 1),
        ("'curl' x", 1),
        ("curl x | sh", 1),
        ("echo curl", 0),
        ("grep curl log", 0),
        ("echo 'curl x && wget y'", 0),
        ("env FOO=1 curl x", 0),  # decided: wrappers are not looked through
        ("curly", 0),
        ("if true; then curl x; fi", 1),
        ("if curl -sf x; then wget y; else nc h 1; fi", 3),
        ("while ! curl -s x; do sleep 1; done", 1),
        ("for u in a b; do curl $u; done", 1),
        ("{ curl a; wget b; }", 2),
        ("time -p curl x", 1),
        ("(curl x) > log", 1),
        ("case $1 in get) curl u;; *) wget v;; esac", 2),
        ("for curl in a b; do echo $curl; done", 0),  # a variable name, no command
        ("for x in curl wget; do echo $x; done", 0),  # an `in` list, no commands
        ("# curl x", 0),
        ("echo hi # it's curl's job", 0),
    ],
)
def test_network_command_count(command: str, count: int) -> None:
    assert shell(command)["networkCommandCount"] == count


@pytest.mark.parametrize(
    ("command", "count"),
    [
        ("sed -i s/a/b/ f", 1),
        ("sed -i.bak 's/a/b/' f", 1),
        ("sed -E -i 's/a/b/' f", 1),
        ("sed --in-place 's/a/b/' f", 1),
        ("sed -ni 'p' f", 1),
        ("perl -pi -e 's/a/b/' f", 1),
        ("perl -i -pe 's/a/b/' f", 1),
        ("perl -pi.bak -e 's/a/b/' f", 1),  # the i switch with its backup suffix
        ("sed -ni.orig 's/a/b/p' f", 1),
        ("perl -0pi -e 's/a/b/' f", 1),  # -0 (record separator) before -p -i
        ("perl -0777pi -e 's/a/b/' f", 1),
        ("perl -lpi -e 's/a/b/' f", 1),
        ("perl -Ilib t/basic.t", 0),  # -I takes `lib`: its i is no switch
        ("perl -Mstrict -we 'print 1'", 0),  # -M takes the module name
        ("perl -Mwarnings -e 'print 1' f", 0),
        ("sed -ei f", 0),  # -e takes the script `i`
        ("awk -i inplace '{print}' f", 1),
        ("gawk -i inplace '{print}' f", 1),
        ("/bin/sed -i s/a/b/ f", 1),
        ("sed -n p f", 0),
        ("sed 's/-i/x/' f", 0),
        ("perl -e 'print 1'", 0),
        ("awk -F, '{print $1}' f", 0),
        ("grep -i x f", 0),
        ("echo sed -i", 0),
        ("cat <<EOF > f\nx\nEOF", 1),
        ("python - <<'PY'\nprint(1)\nPY", 1),
        ("cat <<< word", 0),
        ('echo "<<" > f', 0),
        ("echo '<<EOF'", 0),
        ("sed -i s/a/b/ f && cat <<EOF > g\nsed -i x y\nEOF", 2),
        ("for f in *.py; do sed -i 's/a/b/' \"$f\"; done", 1),
        ("if x; then perl -pi -e 's/a/b/' f; fi", 1),
        ("{ sed -i s/a/b/ f; }", 1),
        ("then sed -n p f -i", 1),  # a later -i still counts, as before
        ("(( n = 1 << 3 ))", 0),  # an arithmetic shift, no heredoc
        ("for (( i = 1 << 2; i; i-- )); do x; done", 0),
        ("# cat <<EOF", 0),
    ],
)
def test_edit_via_shell_count(command: str, count: int) -> None:
    assert shell(command)["editViaShellCount"] == count


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


SCRIPT_WITH_COMMENT = (
    "# Let's fetch the page\ncurl -s http://x/x > out.txt\nsed -i 's/a/b/' out.txt"
)


@pytest.mark.parametrize(
    "command",
    [
        SCRIPT_WITH_COMMENT,
        "/bin/bash -lc " + shlex.quote(SCRIPT_WITH_COMMENT),  # unwrapped first
        f'bash -lc "{SCRIPT_WITH_COMMENT}"',  # double-quoted (it holds no $`"\\)
    ],
)
def test_an_apostrophe_in_a_comment_hides_nothing(command: str) -> None:
    """A comment runs to the end of its line; its apostrophe opens no quote.

    The comment line itself is an empty segment and is dropped: two
    segments, `curl …` and `sed -i …`.
    """
    result = shell(command)
    assert result["chainSegmentCount"] == 2
    assert result["networkCommandCount"] == 1
    assert result["editViaShellCount"] == 1


def test_an_arithmetic_shift_opens_no_heredoc() -> None:
    result = shell("(( n = 1 << 3 ))\ncurl a && wget b")
    assert result["chainSegmentCount"] == 3
    assert result["networkCommandCount"] == 2
    assert result["editViaShellCount"] == 0


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


def test_reserved_words_do_not_hide_the_command() -> None:
    result = shell(
        "for f in *.py; do sed -i 's/a/b/' \"$f\"; done; if true; then curl x; fi",
        "{ curl a; wget b; }",
        "if true; then FOO=1 make; fi",
    )
    # for … | do sed … | done | if true | then curl x | fi ; { curl a | wget b | } ; 3 more
    assert result["chainSegmentCount"] == 6 + 3 + 3
    assert result["editViaShellCount"] == 1
    assert result["networkCommandCount"] == 3
    assert result["envAssignmentCommandCount"] == 1


def test_web_fetch_and_task_kinds_across_agents() -> None:
    result = behaviors_of(
        turn(("web_fetch", {"url": "u"}), ("WebFetch", {"url": "u"}), ("webfetch", {"url": "v"})),
        turn(("task", {}), ("Task", {}), ("Agent", {}), ("spawn_agent", {"p": 1})),
        turn(("mcp__exa__web_fetch_exa", {"url": "u"}), ("run_shell", {"command": "curl u"})),
    )
    assert result["webFetchToolCallCount"] == 3
    assert result["taskToolCallCount"] == 4
    assert result["networkCommandCount"] == 1


def test_repeated_search_count_normalizes_arguments() -> None:
    result = behaviors_of(
        turn(("grep", {"pattern": "Foo  Bar", "path": "src"})),
        turn(("grep", {"path": " SRC ", "pattern": "foo bar"})),  # same after normalization
        turn(("grep", {"path": "src", "pattern": "foo bar"})),  # third time
        turn(("search_files", {"path": "src", "pattern": "foo bar"})),  # other tool: new
        turn(("grep", {"pattern": "foo bar", "path": "src", "glob": "*.py"})),  # new args
        turn(("read_file", {"path": "a", "opts": {"B": [" X ", 1], "a": True}})),
        turn(("read_file", {"opts": {"a": True, "B": ["x", 1]}, "path": "A"})),
        turn(("read_file", {"path": "a", "opts": {"B": ["x", 2], "a": True}})),  # number differs
    )
    assert result["repeatedSearchCount"] == 3


def test_normalize_arguments_recursively() -> None:
    assert normalize_arguments({"b": ["  A\n\tB  ", {"d": "X", "c": None}], "a": 1.5}) == {
        "a": 1.5,
        "b": ["a b", {"c": None, "d": "x"}],
    }
    assert list(normalize_arguments({"b": 1, "a": 2})) == ["a", "b"]


def test_longest_tool_only_streak() -> None:
    result = behaviors_of(
        turn(("ls", {})),  # 1
        turn(("ls", {"a": 1}), text="   \n"),  # blank text: still tool-only, 2
        turn(("ls", {"a": 2}), text="I see."),  # text: breaks
        turn(("ls", {"a": 3})),  # 1
        turn(("ls", {"a": 4})),  # 2
        turn(("ls", {"a": 5})),  # 3
        turn(),  # no tools, no text: breaks
        turn(("ls", {"a": 6})),  # 1
    )
    assert result["longestToolOnlyStreak"] == 3


def test_thinking_blocks_do_not_break_a_tool_only_streak() -> None:
    thinking = {
        "assistantTurn": {"content": [{"type": "thinking", "thinking": "hmm"}]},
        "toolCalls": [{"name": "ls", "arguments": {}}],
    }
    assert behaviors_of(thinking, thinking)["longestToolOnlyStreak"] == 2


def test_max_turn_duration_ignores_nulls_and_keeps_ints() -> None:
    result = behaviors_of(turn(ms=120), turn(ms=None), turn(ms=4500.0), turn(ms=80))
    assert result["maxTurnDurationMs"] == 4500
    assert isinstance(result["maxTurnDurationMs"], int)
    assert behaviors_of(turn(ms=12.5))["maxTurnDurationMs"] == 12.5


def test_max_turn_duration_is_zero_without_any_duration() -> None:
    assert behaviors_of(turn(ms=None), turn())["maxTurnDurationMs"] == 0


def test_tool_calls_by_name_in_first_seen_order() -> None:
    result = behaviors_of(turn(("b", {}), ("a", {})), turn(("b", {"x": 1})))
    assert result[TOOL_CALLS_BY_NAME] == {"b": 2, "a": 1}
    assert list(result[TOOL_CALLS_BY_NAME]) == ["b", "a"]


def test_calls_built_without_kind_are_classified_here() -> None:
    """An adapter that builds bare ToolCalls still gets the shell metrics."""
    summary = RunSummary(
        turns=(
            Turn(0, toolCalls=(ToolCall("1", "Bash", {"command": "bash -lc 'curl x && y'"}),)),
            Turn(1, toolCalls=(ToolCall("2", "Task", {}),)),
        )
    )
    result = derive_behaviors(summary)
    assert result["shellCommandCount"] == 1
    assert result["networkCommandCount"] == 1
    assert result["chainSegmentCount"] == 2
    assert result["taskToolCallCount"] == 1


def test_sample_summary_end_to_end() -> None:
    from capeval.results.runsummary import read_summary

    result = derive_behaviors(read_summary(DATA / "sloppy.json"))
    assert result == {
        "shellCommandCount": 2,
        "envAssignmentCommandCount": 1,
        "chainSegmentCount": 5,
        "maxChainSegmentsPerCommand": 3,
        "networkCommandCount": 1,
        "webFetchToolCallCount": 1,
        "taskToolCallCount": 1,
        "editViaShellCount": 2,
        "repeatedSearchCount": 1,
        "longestToolOnlyStreak": 2,
        "maxTurnDurationMs": 12000,
        "toolCallsByName": {"list_dir": 2, "run_shell": 2, "task": 1, "web_fetch": 1},
    }


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="ab &|;()<>-'\"`$\\=\nEOFcurlsedi#{}!", max_size=40), max_size=5))
def test_derive_never_raises_on_any_command(commands: list[str]) -> None:
    result = shell(*commands)
    assert result["shellCommandCount"] == len(commands)
    assert result["maxChainSegmentsPerCommand"] <= result["chainSegmentCount"]
    assert result["envAssignmentCommandCount"] <= len(commands)


# -- legacy backfill --------------------------------------------------------


def test_backfill_adds_task_count_from_tool_names_in_catalog_order() -> None:
    old = {name: 1 for name in METRIC_NAMES if name != "taskToolCallCount"}
    old[TOOL_CALLS_BY_NAME] = {"task": 2, "spawn_agent": 1, "Task": 5}
    old["someFutureMetric"] = 9
    filled = backfill_legacy(old)
    assert filled is not None
    assert filled["taskToolCallCount"] == 3
    assert list(filled) == [*METRIC_NAMES, TOOL_CALLS_BY_NAME, "someFutureMetric"]
    assert "taskToolCallCount" not in old  # the input is not modified


def test_backfill_defaults_and_keeps_what_is_there() -> None:
    assert backfill_legacy(None) is None
    assert backfill_legacy({"shellCommandCount": 1})["taskToolCallCount"] == 0
    assert backfill_legacy({TOOL_CALLS_BY_NAME: None})["taskToolCallCount"] == 0
    assert backfill_legacy({TOOL_CALLS_BY_NAME: {"read_file": 2}})["taskToolCallCount"] == 0
    assert (
        backfill_legacy({"taskToolCallCount": 7, TOOL_CALLS_BY_NAME: {"task": 1}})[
            "taskToolCallCount"
        ]
        == 7
    )


def test_backfill_fills_a_task_count_written_as_null() -> None:
    filled = backfill_legacy({"taskToolCallCount": None, TOOL_CALLS_BY_NAME: {"spawn_agent": 2}})
    assert filled is not None
    assert filled["taskToolCallCount"] == 2


def test_backfill_counts_no_boolean_as_a_call() -> None:
    filled = backfill_legacy({TOOL_CALLS_BY_NAME: {"task": True, "spawn_agent": 3}})
    assert filled is not None
    assert filled["taskToolCallCount"] == 3


def test_real_results_have_stored_behaviors_and_backfill(real_results: Path) -> None:
    """The real files carry behaviors but no turn streams: check presence, not values."""
    rows = 0
    for path in sorted(real_results.glob("*.json")):
        for row in json.loads(path.read_text())["cases"]:
            rows += 1
            behaviors = row.get("behaviors")
            if behaviors is None:
                # Only repeats whose stream was never captured lack them.
                assert row["status"] in ("timeout", "failed") or row["error"], row["resultKey"]
                continue
            assert "taskToolCallCount" not in behaviors  # written before that metric existed
            filled = backfill_legacy(behaviors)
            assert list(filled)[: len(METRIC_NAMES)] == list(METRIC_NAMES)
            assert all(isinstance(filled[name], int) for name in METRIC_NAMES)
            assert filled["taskToolCallCount"] == behaviors[TOOL_CALLS_BY_NAME].get("task", 0)
    assert rows > 0


# -- the command --------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return capeval("behaviors", *args)


def test_cli_json_lines_in_file_order() -> None:
    files = [DATA / "sloppy.json", DATA / "oracle.json", DATA / "sloppy.json"]
    out = run_cli("--json", *map(str, files))
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) == 3
    assert [list(obj) for obj in lines] == [[*METRIC_NAMES, TOOL_CALLS_BY_NAME]] * 3
    assert lines[0] == lines[2] != lines[1]
    assert lines[1]["maxTurnDurationMs"] == 5000
    assert lines[1][TOOL_CALLS_BY_NAME] == {"read_file": 1, "run_shell": 1}


def test_cli_table_lists_every_metric_per_file() -> None:
    out = run_cli(str(DATA / "sloppy.json"), str(DATA / "oracle.json"))
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    assert header.split() == ["metric", "sloppy.json", "oracle.json"]
    by_metric = {r.split()[0]: r.split()[1:] for r in rows[: len(METRIC_NAMES)]}
    assert list(by_metric) == list(METRIC_NAMES)
    assert by_metric["networkCommandCount"] == ["1", "0"]
    assert "toolCallsByName oracle.json: read_file 1, run_shell 1" in out.stdout


def test_cli_bad_file_exits_2_naming_file_and_field(tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    out = run_cli(
        "--json", str(DATA / "oracle.json"), str(DATA / "bad-call-name.json"), str(missing)
    )
    assert out.returncode == 2
    assert out.stdout == ""  # nothing half-written for a machine to misread
    assert "bad-call-name.json: turns[0].toolCalls[0].name: missing" in out.stderr
    assert f"{missing}: (file): cannot read" in out.stderr


def test_cli_measures_saved_agent_streams_as_a_run_would(agent_streams: Path) -> None:
    from capeval.agents.claude_code import parse_claude_stream
    from capeval.agents.codex import parse_codex_stream

    for kind, name, parse in (
        ("claude-code", "claude-script-stream.jsonl", parse_claude_stream),
        ("codex", "codex-script-stream.jsonl", parse_codex_stream),
    ):
        path = agent_streams / name
        out = run_cli("--stream", kind, "--json", str(path))
        assert out.returncode == 0, out.stderr
        with path.open() as handle:
            expected = derive_behaviors(parse(handle).summary)
        assert json.loads(out.stdout) == expected
    claude = json.loads(
        run_cli(
            "--stream", "claude-code", "--json", str(agent_streams / "claude-stream.jsonl")
        ).stdout
    )
    assert (claude["shellCommandCount"], claude["chainSegmentCount"]) == (1, 2)
    assert claude[TOOL_CALLS_BY_NAME] == {"Bash": 1}


def test_cli_a_stream_read_as_a_summary_or_as_another_cli_says_which_it_is(
    agent_streams: Path,
) -> None:
    stream = str(agent_streams / "claude-stream.jsonl")
    plain = run_cli(stream)
    assert plain.returncode == 2 and plain.stdout == ""
    assert "not valid JSON" in plain.stderr
    assert "it reads as claude-code's stream: pass --stream claude-code" in plain.stderr
    # Another CLI's parser finds no turns: an error, never all-zero metrics.
    wrong = run_cli("--stream", "codex", stream)
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert (
        "it reads as claude-code's stream, not codex's (codex's parser found no turn)"
        in wrong.stderr
    )
    assert "is not JSON" not in wrong.stderr and "unknown event" not in wrong.stderr


def test_cli_a_summary_given_as_a_stream_says_to_drop_the_flag() -> None:
    summary = str(Path(__file__).parents[1] / "data/summaries/oracle.json")
    out = run_cli("--stream", "claude-code", summary)
    assert out.returncode == 2 and out.stdout == ""
    assert "this is a run summary" in out.stderr and "drop --stream" in out.stderr
    assert "is not JSON, skipped" not in out.stderr  # was one line per line of the file


def test_cli_a_parser_that_finds_some_turns_in_another_clis_stream_is_refused() -> None:
    # Gemini's and opencode's streams share the `tool_use` event name: the
    # Gemini parser finds a turn in opencode's stream, from 3 of its 12 events.
    stream = str(Path(__file__).parents[1] / "data" / "streams" / "opencode-stream.jsonl")
    wrong = run_cli("--stream", "gemini", stream)
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert (
        "it reads as opencode's stream, not gemini's (gemini's parser skipped 9 of its events)"
        in (wrong.stderr)
    )
    plain = run_cli(stream)
    assert "pass --stream opencode" in plain.stderr and "gemini" not in plain.stderr
    assert run_cli("--stream", "opencode", stream).returncode == 0


def test_stream_types_are_the_adapters_that_parse_streams() -> None:
    from capeval.agents.registry import ADAPTERS, STREAM_TYPES, adapter_class

    assert set(STREAM_TYPES) == {t for t in ADAPTERS if hasattr(adapter_class(t), "parse")}


def test_cli_without_files_is_a_usage_error() -> None:
    assert run_cli("--json").returncode == 2


def test_cli_does_not_import_the_analysis_stack() -> None:
    code = (
        "import sys\n"
        "from capeval.cli import main\n"
        "try:\n"
        f"    main(['behaviors', '--json', {str(DATA / 'oracle.json')!r}])\n"
        "except SystemExit:\n    pass\n"
        "print([m for m in ('polars', 'duckdb', 'scipy', 'matplotlib') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
