"""The corbits run-summary reader: typed turns out, clear errors for what cannot be read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capeval.core import turns
from capeval.core.runsummary import RunSummaryError, summary_from_json
from capeval.core.turns import TokenUsage
from capeval.results.runsummary import read_summary

DATA = Path(__file__).parents[1] / "data" / "summaries"


def test_reads_the_sample_summary_with_unknown_fields() -> None:
    summary = read_summary(DATA / "sloppy.json")
    assert summary.status == "done"
    assert summary.turnsUsed == 4
    assert summary.toolCallCount == 6
    assert summary.tokenUsage == TokenUsage(input=1200, output=300, thinking=40)
    assert [t.turnIndex for t in summary.turns] == [0, 1, 2, 3]
    assert [t.durationMs for t in summary.turns] == [5120, 8200, 12000, None]
    first = summary.turns[0]
    assert first.texts == ()  # a thinking block is not text
    assert [c.kind for c in first.toolCalls] == [turns.LIST, turns.SHELL]
    assert first.toolCalls[1].command.startswith("FOO=bar make test")
    assert summary.turns[2].texts == ("Tests pass now.",)


def test_shell_commands_are_unwrapped() -> None:
    summary = read_summary(DATA / "oracle.json")
    call = summary.turns[1].toolCalls[0]
    assert call.arguments == {"command": "bash -lc 'python -m pytest -q'"}
    assert call.command == "python -m pytest -q"


def test_minimal_summary_tolerates_missing_optional_fields() -> None:
    summary = summary_from_json(
        {"turns": [{"toolCalls": [{"name": "Bash", "arguments": {"command": "ls"}}]}, {}]}
    )
    assert summary.status == "done"
    assert summary.tokenUsage is None
    assert summary.turnsUsed is None
    first, second = summary.turns
    assert first.turnIndex == 0 and second.turnIndex == 1
    assert first.toolCalls[0].id == "turn0-call0"
    assert first.toolCalls[0].command == "ls"
    assert second.toolCalls == () and second.texts == () and second.durationMs is None


def test_text_only_from_text_blocks_and_plain_string_content() -> None:
    summary = summary_from_json(
        {
            "turns": [
                {
                    "assistantTurn": {
                        "content": [
                            {"type": "text", "text": "a"},
                            {"type": "tool_use", "text": "not said"},
                            {"type": "thinking", "thinking": "hidden"},
                            {"type": "reasoning", "text": "not said either"},
                            {"type": "text"},
                            {"type": "text", "text": "b", "citations": []},
                        ]
                    }
                },
                {"assistantTurn": {"content": "plain"}},
            ]
        }
    )
    assert summary.turns[0].texts == ("a", "b")
    assert summary.turns[1].texts == ("plain",)


def test_numbers_ids_results_and_errors_are_read_leniently() -> None:
    summary = summary_from_json(
        {
            "turns": [
                {
                    "durationMs": 1500.0,
                    "toolCalls": [{"id": 7, "name": "read_file", "result": {"lines": 3}}],
                },
                {"durationMs": 12.5},
            ],
            "turnsUsed": 2.0,
            "error": {"message": "rate limited", "code": 429},
        }
    )
    assert summary.turns[0].durationMs == 1500
    assert summary.turns[1].durationMs == 12.5
    assert summary.turns[0].toolCalls[0].id == "7"
    assert summary.turns[0].toolCalls[0].result == '{"lines": 3}'
    assert summary.turnsUsed == 2
    assert summary.error == "rate limited"


def test_round_trip_through_to_json() -> None:
    summary = read_summary(DATA / "sloppy.json")
    assert summary_from_json(json.loads(json.dumps(summary.to_json()))) == summary


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


MALFORMED: list[tuple[Any, str, str]] = [
    ([], "(top level)", "expected a JSON object, got an array"),
    ({"status": "done"}, "turns", "missing"),
    ({"turns": {"0": {}}}, "turns", "expected a JSON array, got an object"),
    ({"turns": [[]]}, "turns[0]", "expected a JSON object"),
    ({"turns": [{"toolCalls": "Bash"}]}, "turns[0].toolCalls", "expected a JSON array"),
    ({"turns": [{"toolCalls": [{"arguments": {}}]}]}, "turns[0].toolCalls[0].name", "missing"),
    (
        {"turns": [{}, {"toolCalls": [{"name": 3}]}]},
        "turns[1].toolCalls[0].name",
        "expected a string, got a number",
    ),
    ({"turns": [{"toolCalls": [{"name": ""}]}]}, "turns[0].toolCalls[0].name", "missing"),
    ({"turns": [{"toolCalls": ["Bash"]}]}, "turns[0].toolCalls[0]", "expected a JSON object"),
    ({"turns": [{"durationMs": "12s"}]}, "turns[0].durationMs", "expected a number or null"),
    ({"turns": [{"durationMs": True}]}, "turns[0].durationMs", "got a boolean"),
    ({"turns": [{"turnIndex": 1.5}]}, "turns[0].turnIndex", "expected a whole number"),
    # Two turns at one index: which came first is unknowable, and so is every streak.
    (
        {"turns": [{"turnIndex": 0}, {"turnIndex": 1}, {"turnIndex": 0}]},
        "turns[2].turnIndex",
        "also turns[0]'s",
    ),
    ({"turns": [{"assistantTurn": []}]}, "turns[0].assistantTurn", "expected a JSON object"),
    (
        {"turns": [{"assistantTurn": {"content": [{"type": "text", "text": 5}]}}]},
        "turns[0].assistantTurn.content[0].text",
        "expected a string",
    ),
    ({"turns": [], "tokenUsage": 5}, "tokenUsage", "expected a JSON object"),
    # A string would read as 0 tokens, a negative count would shrink the totals.
    ({"turns": [], "tokenUsage": {"input": "1200"}}, "tokenUsage.input", "expected a number"),
    ({"turns": [], "tokenUsage": {"output": -300}}, "tokenUsage.output", "expected a count"),
    ({"turns": [], "tokenUsage": {"thinking": True}}, "tokenUsage.thinking", "got a boolean"),
    ({"turns": [], "status": 0}, "status", "expected a string"),
    ({"turns": [], "turnsUsed": "3"}, "turnsUsed", "expected a number"),
    # A negative count would pass any turn budget.
    ({"turns": [], "turnsUsed": -7}, "turnsUsed", "expected a count (0 or more), got -7"),
    ({"turns": [], "toolCallCount": -1}, "toolCallCount", "expected a count (0 or more), got -1"),
]


@pytest.mark.parametrize(("obj", "field", "message"), MALFORMED)
def test_malformed_shapes_name_the_field(obj: Any, field: str, message: str) -> None:
    with pytest.raises(RunSummaryError) as info:
        summary_from_json(obj, source="run.json")
    assert info.value.file == "run.json"
    assert info.value.field == field
    assert message in info.value.message
    assert str(info.value).startswith(f"run.json: {field}: ")


def test_invalid_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"turns": [\n  {"toolCalls": [}\n]}\n')
    with pytest.raises(RunSummaryError) as info:
        read_summary(path)
    assert info.value.file == str(path)
    assert "line 2 column" in info.value.message


def test_truncated_file_is_an_error_not_an_empty_stream(tmp_path: Path) -> None:
    full = (DATA / "sloppy.json").read_text()
    path = tmp_path / "torn.json"
    path.write_text(full[: len(full) // 2])
    with pytest.raises(RunSummaryError, match="not valid JSON"):
        read_summary(path)


def test_missing_and_undecodable_files(tmp_path: Path) -> None:
    with pytest.raises(RunSummaryError, match="cannot read"):
        read_summary(tmp_path / "absent.json")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(RunSummaryError, match="not UTF-8"):
        read_summary(binary)


def test_given_turn_indexes_and_default_call_ids_are_distinct() -> None:
    """A stream's own turn numbering is kept; calls without an id still get
    one of their own, so that results join to the right call."""
    summary = summary_from_json(
        {"turns": [{"turnIndex": 4, "toolCalls": [{"name": "ls"}, {"name": "ls"}]}]}
    )
    [turn] = summary.turns
    assert turn.turnIndex == 4
    assert [c.id for c in turn.toolCalls] == ["turn0-call0", "turn0-call1"]


def test_every_text_block_and_token_count_survives_a_round_trip() -> None:
    summary = summary_from_json(
        {
            "turns": [{"assistantTurn": {"content": [{"type": "text", "text": t} for t in "ab"]}}],
            "tokenUsage": {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "thinking": 5},
        }
    )
    out = summary.to_json()
    assert out["tokenUsage"] == {
        "input": 1,
        "output": 2,
        "cacheRead": 3,
        "cacheWrite": 4,
        "thinking": 5,
    }
    assert summary_from_json(out) == summary
    assert summary.turns[0].texts == ("a", "b")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_number_constants_are_refused(constant: str, tmp_path: Path) -> None:
    """Python's json reads them; no result row could store them."""
    path = tmp_path / "summary.json"
    path.write_text(f'{{"turns": [{{"durationMs": {constant}}}]}}')
    with pytest.raises(RunSummaryError, match=f"contains {constant}"):
        read_summary(path)


def test_turns_listed_out_of_order_are_judged_in_turn_index_order() -> None:
    from capeval.core.behaviors import derive_behaviors

    def turn(index: int, text: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {"turnIndex": index, "toolCalls": [{"name": "Read"}]}
        if text:
            out["assistantTurn"] = {"content": [{"type": "text", "text": text}]}
        return out

    # Tool-only, text+tool, tool-only, tool-only, text: the longest streak is 2.
    turns_in_order = [turn(0, None), turn(1, "x"), turn(2, None), turn(3, None), turn(4, "y")]
    turns_in_order[4].pop("toolCalls")
    shuffled = [turns_in_order[i] for i in (2, 0, 3, 1, 4)]
    summary = summary_from_json({"turns": shuffled})
    assert [t.turnIndex for t in summary.turns] == [0, 1, 2, 3, 4]
    assert derive_behaviors(summary)["longestToolOnlyStreak"] == 2
