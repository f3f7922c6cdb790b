"""The places that counted toward each behavior metric, and their totals.

`derive_behaviors` takes its totals from `behavior_contributions`, so the
viewer that marks those places cannot disagree with a row's metrics. These
tests pin that equality against an independent, straightforward count (the
definition on docs/behavior-metrics.md#the-metrics, written out again here),
and check that every contribution points at a real turn, call and segment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from capeval.core.behaviors import (
    MAXIMUM_METRICS,
    behavior_contributions,
    call_command,
    derive_behaviors,
    is_edit_segment,
    is_network_segment,
    metric_totals,
    normalize_arguments,
)
from capeval.core.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME
from capeval.core.runsummary import summary_from_json
from capeval.core.scanner import scan_segments, sets_env
from capeval.core.turns import RunSummary
from capeval.results.runsummary import read_summary

DATA = Path(__file__).parents[1] / "data" / "summaries"


def reference_totals(summary: RunSummary) -> dict[str, Any]:
    """The metrics counted the plain way, call by call (what derive_behaviors did before)."""
    counts: dict[str, Any] = dict.fromkeys(METRIC_NAMES, 0)
    seen: set[str] = set()
    streak = longest = 0
    slowest: float = 0
    for turn in summary.turns:
        streak = streak + 1 if turn.toolCalls and not turn.has_text else 0
        longest = max(longest, streak)
        if turn.durationMs is not None:
            slowest = max(slowest, turn.durationMs)
        for call in turn.toolCalls:
            signature = json.dumps(
                [call.name, normalize_arguments(call.arguments)], sort_keys=True, default=str
            )
            counts["repeatedSearchCount"] += signature in seen
            seen.add(signature)
            command = call_command(call)
            kind = derive_kind(call.name, call.kind)
            if kind == "web_fetch":
                counts["webFetchToolCallCount"] += 1
            elif kind == "task":
                counts["taskToolCallCount"] += 1
            elif command is not None:
                segments = scan_segments(command)
                counts["shellCommandCount"] += 1
                counts["chainSegmentCount"] += len(segments)
                counts["maxChainSegmentsPerCommand"] = max(
                    counts["maxChainSegmentsPerCommand"], len(segments)
                )
                counts["envAssignmentCommandCount"] += any(sets_env(s) for s in segments)
                counts["networkCommandCount"] += sum(map(is_network_segment, segments))
                counts["editViaShellCount"] += sum(map(is_edit_segment, segments))
    counts["longestToolOnlyStreak"] = longest
    counts["maxTurnDurationMs"] = int(slowest) if float(slowest).is_integer() else slowest
    return counts


def derive_kind(name: str, kind: str) -> str:
    from capeval.core.toolkinds import tool_kind

    return kind if kind != "other" else tool_kind(name)


SUMMARIES = [p for p in sorted(DATA.glob("*.json")) if p.name != "bad-call-name.json"]


def test_the_sample_summaries_total_as_derive_behaviors_and_the_reference_count() -> None:
    assert SUMMARIES
    for path in SUMMARIES:
        summary = read_summary(path)
        totals = metric_totals(behavior_contributions(summary))
        derived = derive_behaviors(summary)
        assert {**totals, TOOL_CALLS_BY_NAME: derived[TOOL_CALLS_BY_NAME]} == derived
        assert list(totals) == list(METRIC_NAMES)
        assert totals == reference_totals(summary), path.name


def test_the_sloppy_sample_marks_the_sed_and_heredoc_segments_as_edits() -> None:
    summary = read_summary(DATA / "sloppy.json")
    found = behavior_contributions(summary)
    edits = found["editViaShellCount"]
    assert [(x.turn, x.call, x.segment) for x in edits] == [(1, 0, 0), (1, 0, 1)]
    command = call_command(summary.turns[1].toolCalls[0])
    assert command is not None
    segments = scan_segments(command)
    assert segments[0].text.startswith("sed -i")
    assert segments[1].heredoc
    # env assignment and network: the first call of turn 0, at their segments
    assert [(x.turn, x.call, x.segment) for x in found["envAssignmentCommandCount"]] == [(0, 1, 0)]
    assert [(x.turn, x.call, x.segment) for x in found["networkCommandCount"]] == [(0, 1, 1)]
    # the repeated `list_dir` (" . " normalizes to ".") is the second one
    assert [(x.turn, x.call) for x in found["repeatedSearchCount"]] == [(1, 1)]
    # a maximum's contributions are the places that reach it
    assert [(x.turn, x.value) for x in found["maxTurnDurationMs"]] == [(2, 12000)]
    assert [x.turn for x in found["longestToolOnlyStreak"]] == [0, 1]


def test_maxima_mark_every_place_that_reaches_them_and_nothing_else() -> None:
    summary = summary_from_json(
        {
            "turns": [
                {"toolCalls": [{"name": "run_shell", "arguments": {"command": "a; b"}}]},
                {"assistantTurn": {"content": [{"type": "text", "text": "x"}]}, "toolCalls": []},
                {"toolCalls": [{"name": "run_shell", "arguments": {"command": "c | d"}}]},
                {"toolCalls": [{"name": "run_shell", "arguments": {"command": "e"}}]},
                {"assistantTurn": {"content": [{"type": "text", "text": "y"}]}, "durationMs": 7},
            ]
        }
    )
    found = behavior_contributions(summary)
    assert [(x.turn, x.value) for x in found["maxChainSegmentsPerCommand"]] == [(0, 2), (2, 2)]
    assert [x.turn for x in found["longestToolOnlyStreak"]] == [2, 3]
    assert [x.turn for x in found["maxTurnDurationMs"]] == [4]
    assert set(MAXIMUM_METRICS) < set(METRIC_NAMES)


def test_no_turns_no_contributions_and_zero_totals() -> None:
    found = behavior_contributions(RunSummary())
    assert list(found) == list(METRIC_NAMES)
    assert all(v == [] for v in found.values())
    assert metric_totals(found) == dict.fromkeys(METRIC_NAMES, 0)


WORDS = st.sampled_from(
    [
        "ls",
        "curl -s u",
        "sed -i s/a/b/ f",
        "perl -pi -e x f",
        "FOO=1 make",
        "export A=b",
        "cat <<EOF\nx\nEOF",
        "a && b || c",
        "(wget x; d)",
        "bash -lc 'sed -i x f && curl y'",
        "# it's a comment\ncurl z",
    ]
)
CALLS = st.one_of(
    st.builds(lambda c: {"name": "run_shell", "arguments": {"command": c}}, WORDS),
    st.builds(lambda c: {"name": "Bash", "arguments": {"command": c}}, WORDS),
    st.just({"name": "web_fetch", "arguments": {"url": "u"}}),
    st.just({"name": "task", "arguments": {"prompt": "p"}}),
    st.just({"name": "grep", "arguments": {"pattern": "X"}}),
    st.just({"name": "grep", "arguments": {"pattern": " x "}}),
)
TURNS = st.builds(
    lambda calls, text, ms: {
        "assistantTurn": {"content": [{"type": "text", "text": text}] if text is not None else []},
        "toolCalls": calls,
        "durationMs": ms,
    },
    st.lists(CALLS, max_size=3),
    st.one_of(st.none(), st.sampled_from(["", " ", "ok"])),
    st.one_of(st.none(), st.integers(0, 50), st.floats(0, 50, allow_nan=False)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(TURNS, max_size=8))
def test_totals_match_the_reference_count_on_any_stream(turns: list[dict[str, Any]]) -> None:
    summary = summary_from_json({"turns": turns})
    found = behavior_contributions(summary)
    derived = derive_behaviors(summary)
    assert metric_totals(found) == {m: derived[m] for m in METRIC_NAMES}
    assert metric_totals(found) == reference_totals(summary)
    for metric, places in found.items():
        for x in places:
            assert x.metric == metric
            turn = summary.turns[x.turn]
            if x.call is None:
                assert metric in MAXIMUM_METRICS
                continue
            call = turn.toolCalls[x.call]
            if x.segment is not None:
                command = call_command(call)
                assert command is not None
                assert 0 <= x.segment < len(scan_segments(command))
