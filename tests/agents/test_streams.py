"""The stream parsers of every CLI adapter, without starting a process.

`shared/agent-streams/` holds streams printed by the real Claude Code 2.1.332
and Codex 0.171.0; `tests/data/streams/` holds one more real Codex stream
(parallel calls) and Gemini/opencode streams built from the documented
schemas. The tests over them pin turns, tool calls with kinds and unwrapped
commands, token usage, session id and model. Hand-built events pin what those
streams leave unexercised (token fields kept apart, the cumulative result
winning, a fallback model, cut previews), and the session logs each CLI keeps
beside its stream (Codex rollouts, Claude and Gemini session logs) amend the
counts of a run the stream shows only in part.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from capeval.agents.claude_code import parse_claude_stream
from capeval.agents.codex import parse_codex_stream, parse_rollout, with_rollout
from capeval.agents.gemini import parse_gemini_stream
from capeval.agents.opencode import parse_opencode_stream
from capeval.agents.streams import ParsedStream
from capeval.core.turns import EDIT, READ, SHELL, TASK, WEB_FETCH, WRITE, TokenUsage

DATA = Path(__file__).parents[1] / "data" / "streams"


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def calls(parsed: ParsedStream) -> list[tuple[int, str, str, str | None]]:
    """(turn, native name, kind, unwrapped shell command) for every call, in order."""
    return [
        (t.turnIndex, c.name, c.kind, c.command) for t in parsed.summary.turns for c in t.toolCalls
    ]


def texts(parsed: ParsedStream) -> list[tuple[str, ...]]:
    return [t.texts for t in parsed.summary.turns]


def claude(*events: dict[str, Any]) -> list[str]:
    return [json.dumps(e) for e in events]


def assistant(mid: str, model: str, *content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "message": {"id": mid, "model": model, "content": list(content)}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def codex(*events: dict[str, Any]) -> list[str]:
    return [json.dumps(e) for e in events]


def item(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "item": fields}


# ---------------------------------------------------------------- Claude Code


def test_claude_stream(agent_streams: Path) -> None:
    p = parse_claude_stream(lines(agent_streams / "claude-stream.jsonl"))
    assert p.status == "done" and p.error is None
    assert p.sessionId == "2cfd976e-e13e-4ec2-b4e2-e3a483a3d198"
    assert p.model == "claude-sonnet-4-5"
    assert p.agentVersion == "2.1.332"
    assert p.summary.turnsUsed == 2
    assert texts(p) == [("I'll create the file.",), ("done",)]
    assert calls(p) == [(0, "Bash", SHELL, "echo hello > out.txt && cat out.txt")]
    assert p.summary.turns[0].toolCalls[0].result == "hello"
    # The result line's usage, counted once (not once per content block).
    assert p.summary.tokenUsage == TokenUsage(input=20, output=10)
    assert p.durationMs == 363
    assert p.costUsd == 0.00021  # result.total_cost_usd
    assert p.textPreview == "I'll create the file.done"


def test_claude_script_stream_groups_blocks_by_message_id(agent_streams: Path) -> None:
    p = parse_claude_stream(lines(agent_streams / "claude-script-stream.jsonl"))
    # Four model responses (the result line's num_turns says 5: Claude counts
    # differently; capeval's turn is one model response).
    assert p.summary.turnsUsed == 4
    assert calls(p) == [
        (0, "Write", WRITE, None),
        (1, "Edit", EDIT, None),
        (2, "Read", READ, None),
        (2, "Bash", SHELL, "cat a.txt | wc -l"),
    ]
    assert p.summary.toolCallCount == 4
    assert texts(p)[0] == ("Writing file.",)
    assert p.summary.tokenUsage == TokenUsage(input=40, output=20)
    assert p.sessionId == "7d4be353-d8a9-49e8-bbe9-4f5f4b513fae"
    # A turn runs from the previous turn's last event (its request going out)
    # to its own last tool result: 16:24:38.731 -> 16:24:39.052.
    durations = [t.durationMs for t in p.summary.turns]
    assert durations[2] == pytest.approx(321)
    assert all(d is not None and d >= 0 for d in durations)


def test_claude_usage_is_unknown_without_a_result(agent_streams: Path) -> None:
    """A stream cut off before its `result` (a killed agent) states no usage.

    Its assistant lines carry each response's opening usage: output_tokens 1
    apiece, while the run really wrote 20. Summing them would invent a count.
    """
    body = [
        ln
        for ln in lines(agent_streams / "claude-script-stream.jsonl")
        if '"type":"result"' not in ln
    ]
    p = parse_claude_stream(body)
    assert p.summary.tokenUsage is None
    assert p.summary.turnsUsed == 4  # the turns seen are kept
    assert p.status == "failed" and "without a `result`" in (p.error or "")


def test_claude_error_flagged_on_a_success_subtype_reads_as_an_error() -> None:
    # What claude -p prints with no login: subtype "success", is_error true.
    # Claude Code also writes the notice as an assistant message of model
    # "<synthetic>": not a model response, so not a turn and not the model.
    stream = [
        '{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5"}',
        '{"type":"assistant","message":{"id":"x1","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"Not logged in · Please run /login"}],"usage":{"input_tokens":0,"output_tokens":0}},"session_id":"s1"}',
        '{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login","session_id":"s1"}',
    ]
    p = parse_claude_stream(stream)
    assert p.status == "failed"
    assert p.error == "claude-code error: Not logged in · Please run /login"
    assert not p.summary.turns
    assert p.model == "claude-sonnet-4-5"
    assert dict(p.skipped) == {"assistant(synthetic)": 1}


def test_claude_api_error_notice_mid_run_is_not_a_turn_or_the_model() -> None:
    stream = [
        '{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5"}',
        '{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},"session_id":"s1"}',
        '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]},"session_id":"s1"}',
        '{"type":"assistant","message":{"id":"x1","model":"<synthetic>","content":[{"type":"text","text":"API Error: 529 overloaded"}]},"session_id":"s1"}',
        '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 529 overloaded","session_id":"s1"}',
    ]
    p = parse_claude_stream(stream)
    assert p.summary.turnsUsed == 1 and p.model == "claude-sonnet-4-5"
    assert p.status == "failed" and p.error == "claude-code error: API Error: 529 overloaded"


def test_claude_model_is_the_one_that_answered_not_the_one_announced() -> None:
    # A silent fallback: init repeats --model, the responses say who answered.
    stream = [
        '{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5"}',
        '{"type":"assistant","message":{"id":"m1","model":"claude-haiku-4-5","content":[{"type":"text","text":"a"}]}}',
        '{"type":"assistant","message":{"id":"m1","model":"claude-haiku-4-5","content":[{"type":"text","text":"b"}]}}',
        '{"type":"assistant","message":{"id":"m2","model":"claude-sonnet-4-5","content":[{"type":"text","text":"c"}]}}',
        '{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}',
    ]
    assert parse_claude_stream(stream).model == "claude-haiku-4-5"
    same = [line.replace("claude-haiku-4-5", "claude-sonnet-4-5") for line in stream]
    assert parse_claude_stream(same).model == "claude-sonnet-4-5"


def test_claude_error_result_fails_even_when_it_looks_complete() -> None:
    stream = [
        '{"type":"system","subtype":"init","session_id":"s1","model":"claude-opus-4-1"}',
        '{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":3,"output_tokens":1}},"session_id":"s1"}',
        '{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":1,"session_id":"s1","permission_denials":[{"tool_name":"Bash"}],"usage":{"input_tokens":3,"output_tokens":2}}',
    ]
    p = parse_claude_stream(stream)
    assert p.status == "failed"
    assert "error_max_turns" in (p.error or "") and "1 permission denial" in (p.error or "")
    assert p.model == "claude-opus-4-1"


def test_claude_subagent_messages_are_not_our_turns() -> None:
    stream = [
        '{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Agent","input":{"prompt":"look"}}]},"parent_tool_use_id":null}',
        '{"type":"assistant","message":{"id":"sub1","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"}}]},"parent_tool_use_id":"t1"}',
        '{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"ok"}]},"parent_tool_use_id":null}',
        '{"type":"result","subtype":"success","is_error":false}',
    ]
    p = parse_claude_stream(stream)
    assert p.summary.turnsUsed == 2
    assert [c[1] for c in calls(p)] == ["Agent"]
    assert p.skipped == {"assistant(sub-agent)": 1}


def test_claude_background_agent_usage_is_the_sessions_sub_agents_included() -> None:
    # Printed by the real Claude Code 2.1.332: an Agent call ran in the
    # background, so Claude printed a `result` (3 responses), then a second
    # query with its own `result` (1 response) when the agent finished. Each
    # result's usage and duration_ms cover its own query's main loop (30/15 and
    # 10/5); modelUsage and the cost are cumulative, the sub-agents' 90/45
    # included: $3/M x 130 + $15/M x 65 = $0.001365.
    p = parse_claude_stream(lines(DATA / "claude-background-agent-stream.jsonl"))
    assert p.status == "done" and p.error is None
    assert p.summary.turnsUsed == 4  # the sub-agents' responses are not ours
    assert p.summary.tokenUsage == TokenUsage(input=130, output=65)
    # 483 + 34 ms of queries, but the stream spans 761 ms: the wait between the
    # two queries is the run's too, so the adapter's measured wall time stands.
    assert p.durationMs is None
    assert p.costUsd == pytest.approx(0.001365)
    assert [c[1] for c in calls(p)] == ["Agent", "WebFetch"]


def test_claude_a_failed_result_fails_the_run_even_if_a_later_one_succeeds() -> None:
    stream = [
        '{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"a"}]}}',
        '{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["boom"],"usage":{"input_tokens":3,"output_tokens":1}}',
        '{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"b"}]}}',
        '{"type":"result","subtype":"success","is_error":false,"usage":{"input_tokens":2,"output_tokens":1}}',
    ]
    p = parse_claude_stream(stream)
    assert p.status == "failed" and p.error == "claude-code error_during_execution: boom"
    assert p.summary.tokenUsage == TokenUsage(input=5, output=2)


def test_claude_error_result_names_its_errors() -> None:
    # Error results carry their reasons as `errors: [str, ...]`, not `result`.
    stream = [
        '{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,'
        '"errors":["turn_handoff: the turn was stopped","second reason"],"permission_denials":[]}',
    ]
    p = parse_claude_stream(stream)
    assert p.error == (
        "claude-code error_during_execution: turn_handoff: the turn was stopped; second reason"
    )


@pytest.mark.parametrize("content", ["5", "1.5", "true", '"a string"', "null", '{"type":"text"}'])
def test_claude_message_content_of_a_drifted_type_is_skipped(content: str) -> None:
    stream = [
        '{"type":"assistant","message":{"id":"m1","content":' + content + "}}",
        '{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"ok"}]}}',
        '{"type":"result","subtype":"error_max_turns","is_error":true,"permission_denials":3}',
    ]
    p = parse_claude_stream(stream)
    assert p.summary.turnsUsed == 2 and texts(p) == [(), ("ok",)]
    assert p.status == "failed" and p.error == "claude-code error_max_turns"


def test_claude_result_usage_keeps_cache_reads_writes_and_thinking_apart() -> None:
    # No modelUsage (an older release): the result's own usage is the run's.
    usage = {
        "input_tokens": 5,
        "output_tokens": 7,
        "cache_read_input_tokens": 11,
        "cache_creation_input_tokens": 13,
        "output_tokens_details": {"thinking_tokens": 3},
    }
    p = parse_claude_stream(
        claude(
            assistant("m1", "claude-sonnet-4-5", text("hi")),
            {"type": "result", "subtype": "success", "is_error": False, "usage": usage},
        )
    )
    assert p.summary.tokenUsage == TokenUsage(
        input=5, output=7, cacheRead=11, cacheWrite=13, thinking=3
    )


def test_claude_model_usage_sums_every_models_fields_apart() -> None:
    def model(i: int, o: int, read: int, write: int, think: int) -> dict[str, int]:
        return {
            "inputTokens": i,
            "outputTokens": o,
            "cacheReadInputTokens": read,
            "cacheCreationInputTokens": write,
            "thinkingTokens": think,
        }

    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "modelUsage": {
            "claude-sonnet-4-5": model(10, 20, 30, 40, 50),
            "haiku": model(1, 2, 3, 4, 5),
        },
    }
    p = parse_claude_stream(claude(assistant("m1", "claude-sonnet-4-5", text("a")), result))
    assert p.summary.tokenUsage == TokenUsage(
        input=11, output=22, cacheRead=33, cacheWrite=44, thinking=55
    )


def test_claude_last_result_is_the_cumulative_one() -> None:
    # Two queries (a background Agent finished after the first result): the
    # last result's modelUsage, cost and session are the run's.
    def result(tokens: int, cost: float, session: str) -> dict[str, Any]:
        return {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "session_id": session,
            "total_cost_usd": cost,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "modelUsage": {"claude-sonnet-4-5": {"inputTokens": tokens, "outputTokens": tokens}},
        }

    p = parse_claude_stream(
        claude(
            assistant("m1", "claude-sonnet-4-5", text("a")),
            result(10, 0.1, "s1"),
            assistant("m2", "claude-sonnet-4-5", text("b")),
            result(30, 0.3, "s2"),
        )
    )
    assert p.summary.tokenUsage == TokenUsage(input=30, output=30)
    assert p.costUsd == 0.3 and p.sessionId == "s2"


def test_claude_a_fallback_model_is_reported_even_when_the_asked_one_answered_more() -> None:
    # The provider check must see a fallback even when it answered only once;
    # of two fallbacks the one that answered more is reported.
    init = {"type": "system", "subtype": "init", "session_id": "s", "model": "claude-sonnet-4-5"}
    ok = {"type": "result", "subtype": "success", "is_error": False}
    mostly_asked = [
        assistant("m1", "claude-sonnet-4-5", text("a")),
        assistant("m2", "claude-sonnet-4-5", text("b")),
        assistant("m3", "claude-haiku-4-5", text("c")),
    ]
    assert parse_claude_stream(claude(init, *mostly_asked, ok)).model == "claude-haiku-4-5"
    two = [
        assistant("m1", "claude-opus-4-1", text("a")),
        assistant("m2", "claude-haiku-4-5", text("b")),
        assistant("m3", "claude-haiku-4-5", text("c")),
    ]
    assert parse_claude_stream(claude(init, *two, ok)).model == "claude-haiku-4-5"


def test_long_tool_results_and_previews_are_cut() -> None:
    # Rows and summaries keep a tool's output for reading, not a whole log.
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat big"}}
    answer = {
        "type": "user",
        "message": {
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 9000}]
        },
    }
    p = parse_claude_stream(
        claude(
            assistant("m1", "claude-sonnet-4-5", call),
            answer,
            assistant("m2", "claude-sonnet-4-5", text("y" * 5000)),
            {"type": "result", "subtype": "success", "is_error": False},
        )
    )
    result = p.summary.turns[0].toolCalls[0].result
    assert result == "x" * 2000 + "…"
    # 400 characters, as rows written by earlier releases have it.
    assert p.textPreview == "y" * 400 + "…"


def test_unknown_events_and_garbage_lines_are_logged_and_skipped(
    agent_streams: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = lines(agent_streams / "claude-stream.jsonl")
    noisy = [
        body[0],
        '{"type":"rate_limit_event","rate_limit_info":{}}',
        "warning: something printed on stdout",
        '{"type":"system","subtype":"compact_boundary"}',
        "[1, 2]",
        *body[1:],
    ]
    with caplog.at_level(logging.INFO, logger="capeval.agents.streams"):
        p = parse_claude_stream(noisy)
    assert p.summary.turnsUsed == 2 and p.status == "done"
    assert p.skipped == {"rate_limit_event": 1, "system/compact_boundary": 1}
    logged = caplog.text
    assert "rate_limit_event" in logged and "not JSON" in logged and "not a JSON object" in logged


# ---------------------------------------------------------------- Codex


def test_codex_stream(agent_streams: Path) -> None:
    p = parse_codex_stream(lines(agent_streams / "codex-stream.jsonl"))
    assert p.status == "done"
    assert p.sessionId == "01a22d45-6190-7ec2-911e-78f163bcae8c"
    assert p.model is None and p.provider is None  # Codex does not say
    assert p.summary.turnsUsed == 2
    # The /bin/bash -lc '...' wrapper Codex adds is unwrapped; the native
    # arguments keep it.
    assert calls(p) == [(0, "command_execution", SHELL, "echo hello > out.txt && cat out.txt")]
    call = p.summary.turns[0].toolCalls[0]
    assert call.arguments == {"command": "/bin/bash -lc 'echo hello > out.txt && cat out.txt'"}
    assert call.result == "hello\n"
    assert texts(p)[-1] == ("done",)
    assert p.summary.tokenUsage == TokenUsage(input=20, output=10)
    assert p.durationMs is None  # wall time is measured by the adapter


def test_codex_script_stream(agent_streams: Path) -> None:
    p = parse_codex_stream(lines(agent_streams / "codex-script-stream.jsonl"))
    assert p.summary.turnsUsed == 3  # input_tokens 30 = 3 model requests x 10
    assert calls(p) == [
        (0, "apply_patch", EDIT, None),
        (1, "command_execution", SHELL, "cat hello.txt && echo ok > second.txt"),
    ]
    assert p.summary.turns[0].toolCalls[0].arguments == {
        "changes": [{"path": "/tmp/work/hello.txt", "kind": "add"}],
        "item": "item_0",
    }
    assert p.summary.tokenUsage == TokenUsage(input=30, output=15)
    assert p.sessionId == "01a22d45-dcdf-7d92-89d3-7deaef731052"


def test_codex_edits_of_one_file_are_not_repeated_calls() -> None:
    from capeval.core.behaviors import derive_behaviors

    change = {"path": "/w/a.py", "kind": "update"}
    stream = ['{"type":"thread.started","thread_id":"t"}', '{"type":"turn.started"}']
    for n in (1, 2):
        edit = {"id": f"item_{n}", "type": "file_change", "changes": [change]}
        text = {"id": f"m{n}", "type": "agent_message", "text": "ok"}
        stream += [json.dumps({"type": "item.completed", "item": i}) for i in (edit, text)]
    stream.append('{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}')
    p = parse_codex_stream(stream)
    assert derive_behaviors(p.summary)["repeatedSearchCount"] == 0  # two edits, not a loop


def codex_events(*events: tuple[str, dict[str, Any]]) -> list[str]:
    """A Codex stream of `item.*` events, framed as `codex exec --json` frames them."""
    stream = ['{"type":"thread.started","thread_id":"t"}', '{"type":"turn.started"}']
    stream += [json.dumps({"type": kind, "item": item}) for kind, item in events]
    stream.append('{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}')
    return stream


def test_codex_plan_item_does_not_merge_later_turns() -> None:
    """Codex shows a run's update_plan calls as one todo_list item that is
    completed only when the whole run ends; it must not glue every later call
    into its turn. Six model responses: plan, ls, pwd, plan again, cat, text."""
    from capeval.core.behaviors import derive_behaviors

    def cmd(n: int, script: str) -> dict[str, Any]:
        return {"id": f"item_{n}", "type": "command_execution", "command": script}

    plan = {"id": "item_0", "type": "todo_list", "items": [{"text": "a", "completed": False}]}
    done = {**plan, "items": [{"text": "a", "completed": True}]}
    message = {"id": "item_4", "type": "agent_message", "text": "done"}
    stream = codex_events(
        ("item.started", plan),
        *[(k, cmd(1, "ls")) for k in ("item.started", "item.completed")],
        *[(k, cmd(2, "pwd")) for k in ("item.started", "item.completed")],
        ("item.updated", done),
        *[(k, cmd(3, "cat f")) for k in ("item.started", "item.completed")],
        ("item.completed", message),
        ("item.completed", done),
    )
    p = parse_codex_stream(stream)
    assert [[c.name for c in t.toolCalls] for t in p.summary.turns] == [
        ["update_plan"],
        ["command_execution"],
        ["command_execution"],
        ["update_plan"],
        ["command_execution"],
        [],
    ]
    assert p.summary.toolCallCount == 5
    assert derive_behaviors(p.summary)["longestToolOnlyStreak"] == 5


def test_codex_spawn_agent_is_a_task_call() -> None:
    from capeval.core.behaviors import derive_behaviors

    spawn = {
        "id": "item_0",
        "type": "collab_tool_call",
        "tool": "spawn_agent",
        "sender_thread_id": "t",
        "receiver_thread_ids": [],
        "prompt": "look around",
        "agents_states": {},
        "status": "in_progress",
    }
    spawned = {**spawn, "receiver_thread_ids": ["t2"], "status": "completed"}
    p = parse_codex_stream(codex_events(("item.started", spawn), ("item.completed", spawned)))
    assert p.skipped == {}
    assert calls(p) == [(0, "spawn_agent", TASK, None)]
    assert derive_behaviors(p.summary)["taskToolCallCount"] == 1


def test_codex_fallback_metadata_error_item_is_not_a_turn(agent_streams: Path) -> None:
    p = parse_codex_stream(lines(agent_streams / "codex-stream-gpt-5-codex.jsonl"))
    assert p.status == "done" and p.error is None
    assert p.summary.turnsUsed == 2
    assert calls(p) == [(0, "command_execution", SHELL, "echo hello > out.txt && cat out.txt")]


def test_codex_parallel_calls_are_one_turn() -> None:
    p = parse_codex_stream(lines(DATA / "codex-parallel-stream.jsonl"))
    # 4 model requests reached the scripted server when this was recorded.
    assert p.summary.turnsUsed == 4
    assert calls(p) == [
        (0, "apply_patch", EDIT, None),
        (1, "command_execution", SHELL, "cat hello.txt && echo ok > second.txt"),
        (2, "command_execution", SHELL, "sed -i 's/hi/HI/' hello.txt"),
        (2, "command_execution", SHELL, "ls"),
    ]
    assert texts(p) == [(), ("Now shell.",), (), ("done",)]
    assert p.summary.tokenUsage == TokenUsage(input=40, output=20)


def test_codex_tool_items_without_ids_stay_separate_calls(agent_streams: Path) -> None:
    # The real stream with every item id dropped: each call must still be its
    # own call (not one call that each later item overwrites).
    drifted = []
    for line in lines(agent_streams / "codex-script-stream.jsonl"):
        event = json.loads(line)
        if isinstance(event.get("item"), dict):
            event["item"].pop("id")
        drifted.append(json.dumps(event))
    p = parse_codex_stream(drifted)
    assert [c[1:] for c in calls(p)] == [
        ("apply_patch", EDIT, None),
        ("command_execution", SHELL, "cat hello.txt && echo ok > second.txt"),
    ]
    assert p.summary.turns[1].toolCalls[0].result == "hi from patch\n"
    assert p.summary.turnsUsed == 3


def test_codex_turn_failed_and_truncated_streams_fail() -> None:
    failed = parse_codex_stream(
        [
            '{"type":"thread.started","thread_id":"t"}',
            '{"type":"turn.started"}',
            '{"type":"error","message":"Reconnecting... 1/5"}',
            '{"type":"turn.failed","error":{"message":"stream disconnected"}}',
        ]
    )
    assert failed.status == "failed" and "stream disconnected" in (failed.error or "")
    cut = parse_codex_stream(
        ['{"type":"thread.started","thread_id":"t"}', '{"type":"turn.started"}']
    )
    assert cut.status == "failed" and "turn.completed" in (cut.error or "")
    assert cut.sessionId == "t" and cut.summary.turnsUsed == 0


def test_codex_turns_run_from_the_previous_turns_last_event() -> None:
    # One line every 100 ms. The second call's response was asked for when
    # the first call's result came in (line 3), and the run's own events
    # (thread.started, turn.completed) belong to no turn.
    shell = {"type": "command_execution"}
    stream = codex(
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        item("item.started", id="c1", command="ls", **shell),
        item("item.completed", id="c1", command="ls", **shell),
        item("item.started", id="c2", command="pwd", **shell),
        item("item.completed", id="c2", command="pwd", **shell),
        item("item.completed", id="m", type="agent_message", text="done"),
        {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
    )
    p = parse_codex_stream(stream, [1000.0 + 100 * i for i in range(len(stream))])
    assert [t.durationMs for t in p.summary.turns] == [100, 200, 100]


def test_codex_usage_sums_every_turn_and_keeps_reasoning_tokens() -> None:
    usage = {
        "input_tokens": 100,
        "cached_input_tokens": 40,
        "output_tokens": 10,
        "reasoning_output_tokens": 6,
    }
    stream = codex(
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.completed", "usage": usage},
        {"type": "turn.completed", "usage": usage},
    )
    assert parse_codex_stream(stream).summary.tokenUsage == TokenUsage(
        input=120, output=20, cacheRead=80, thinking=12
    )


def test_codex_reasoning_is_not_assistant_text() -> None:
    # A turn of reasoning and a call is tool-only (longestToolOnlyStreak).
    stream = codex(
        {"type": "thread.started", "thread_id": "t"},
        item("item.completed", id="r", type="reasoning", text="**Thinking**"),
        item("item.started", id="c1", type="command_execution", command="ls"),
        item("item.completed", id="c1", type="command_execution", command="ls"),
        {"type": "turn.completed", "usage": {}},
    )
    p = parse_codex_stream(stream)
    assert [t.texts for t in p.summary.turns] == [()] and p.textPreview == ""


def test_codex_mcp_calls_are_named_as_in_its_session_log() -> None:
    # toolCallsByName must not depend on whether the log was found.
    stream = codex(
        {"type": "thread.started", "thread_id": "t"},
        item("item.completed", id="m1", type="mcp_tool_call", server="paperclip",
             tool="get_issue", arguments={"id": 1}, status="completed"),
        {"type": "turn.completed", "usage": {}},
    )  # fmt: skip
    (call,) = parse_codex_stream(stream).summary.turns[0].toolCalls
    assert call.name == "mcp__paperclip__get_issue"


# ---------------------------------------------------------------- Gemini CLI


def test_gemini_stream() -> None:
    p = parse_gemini_stream(lines(DATA / "gemini-stream.jsonl"))
    assert p.status == "done"
    assert p.sessionId == "8f14e45f-ceea-467f-a0e6-4b5c1e2d9a77"
    assert p.model == "gemini-2.5-pro"
    # text+shell | read+web_fetch in parallel | replace | final text
    assert p.summary.turnsUsed == 4
    assert calls(p) == [
        (0, "run_shell_command", SHELL, "echo hello > out.txt && cat out.txt | tr a-z A-Z"),
        (1, "read_file", READ, None),
        (1, "web_fetch", WEB_FETCH, None),
        (2, "replace", EDIT, None),
    ]
    assert texts(p) == [("I'll create the file.",), (), (), ("Done.",)]  # chunks joined
    results = [c.result for t in p.summary.turns for c in t.toolCalls]
    assert results[0] == "HELLO" and results[1] == "hello\n"
    assert "connection refused" in (results[2] or "")  # joined on tool_id, error kept
    # input counts the uncached prompt only (200 in all, 80 of it from cache)
    assert p.summary.tokenUsage == TokenUsage(input=120, output=50, cacheRead=80)
    assert p.durationMs == 4200
    assert p.costUsd is None  # Gemini CLI states no cost
    assert p.skipped == {"retry_notice": 1}
    assert p.summary.turns[1].durationMs == pytest.approx(1400)  # 01.500 -> 02.900


def test_gemini_model_falls_back_to_the_model_the_stats_saw() -> None:
    base = lines(DATA / "gemini-stream.jsonl")
    *head, result = base
    stats_of = {
        "gemini-2.5-flash": {"total_tokens": 250, "input_tokens": 200},
        "gemini-2.5-flash-lite": {"total_tokens": 20, "input_tokens": 15},
    }
    doc = json.loads(result)
    doc["stats"]["models"] = stats_of
    # The announced model never answered: the busiest model in the stats did.
    assert parse_gemini_stream([*head, json.dumps(doc)]).model == "gemini-2.5-flash"
    # The announced model answered; a utility model beside it is not a fallback.
    doc["stats"]["models"] = {"gemini-2.5-pro": {"total_tokens": 5}, **stats_of}
    assert parse_gemini_stream([*head, json.dumps(doc)]).model == "gemini-2.5-pro"


def test_codex_turns_are_timed_by_when_their_lines_arrived(agent_streams: Path) -> None:
    stream = lines(agent_streams / "codex-script-stream.jsonl")
    untimed = parse_codex_stream(stream)
    assert {t.durationMs for t in untimed.summary.turns} == {None}
    arrivals = [1000.0 + 100 * i for i in range(len(stream))]
    timed = parse_codex_stream(stream, arrivals)
    durations = [t.durationMs for t in timed.summary.turns]
    assert len(durations) == untimed.summary.turnsUsed
    assert all(d is not None and d > 0 for d in durations)


def test_codex_input_tokens_exclude_the_cached_part() -> None:
    p = parse_codex_stream(
        [
            '{"type":"thread.started","thread_id":"t"}',
            '{"type":"turn.started"}',
            '{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"hi"}}',
            '{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":900,"output_tokens":7}}',
        ]
    )
    assert p.summary.tokenUsage == TokenUsage(input=100, output=7, cacheRead=900)


def test_gemini_error_result() -> None:
    p = parse_gemini_stream(lines(DATA / "gemini-error-stream.jsonl"))
    assert p.status == "failed" and "Quota exceeded" in (p.error or "")
    assert p.summary.turnsUsed == 1
    assert calls(p) == [(0, "list_directory", "list", None)]
    assert p.model == "gemini-2.5-flash"
    assert p.durationMs == 1600


def test_gemini_error_result_names_its_message_not_the_error_object() -> None:
    from capeval.agents.gemini import parse_gemini_stream

    result = {"type": "result", "status": "error", "error": {"type": "Fatal", "message": "quota"}}
    p = parse_gemini_stream([json.dumps(result)])
    assert p.status == "failed" and p.error == "gemini: quota"


def test_gemini_a_zero_duration_is_unknown_not_an_instant_run() -> None:
    # Gemini CLI's error handler writes the result's stats with duration_ms 0;
    # the adapter then falls back to the wall time it measured.
    stream = lines(DATA / "gemini-error-stream.jsonl")
    stream[-1] = stream[-1].replace('"duration_ms":1600', '"duration_ms":0')
    p = parse_gemini_stream(stream)
    assert p.status == "failed" and p.durationMs is None


# ---------------------------------------------------------------- opencode


def test_opencode_stream() -> None:
    p = parse_opencode_stream(lines(DATA / "opencode-stream.jsonl"))
    assert p.status is None  # no final event: the exit code decides
    assert p.sessionId == "ses_5a1b2c3d4e5f6a7b8c9d0e1f2a"
    assert p.summary.turnsUsed == 3  # one step = one turn
    assert p.costUsd == pytest.approx(0.0025)  # summed over step_finish events
    assert calls(p) == [
        (0, "bash", SHELL, "FOO=bar echo hi > out.txt; cat out.txt | wc -l"),
        (1, "webfetch", WEB_FETCH, None),
        (1, "edit", EDIT, None),
    ]
    assert p.summary.turns[1].toolCalls[1].result == "oldString not found in content"
    # The call's own id (`callID`), not the id of the event's part.
    assert [c.id for t in p.summary.turns for c in t.toolCalls] == ["call_a1", "call_b1", "call_b2"]
    assert texts(p) == [("Creating the file.",), (), ("Done.",)]
    # Summed over the three step_finish events.
    assert p.summary.tokenUsage == TokenUsage(
        input=350, output=60, cacheRead=180, cacheWrite=10, thinking=5
    )
    # A step runs from the previous event (the last step's finish) to its own
    # last event; the first from its step_start.
    assert [t.durationMs for t in p.summary.turns] == [1300, 1400, 600]


def test_opencode_real_stream_steps_are_timed_from_the_previous_step() -> None:
    # Printed by the real opencode 1.18.33: step_start is stamped late, with
    # the step's first output (step 4's after its webfetch already ran), so a
    # step timed from it would last ~0 ms. Timed from the previous step's
    # finish, every step covers its model call and its tools.
    p = parse_opencode_stream(lines(DATA / "opencode-real-stream.jsonl"))
    assert p.summary.turnsUsed == 6
    assert [t.durationMs for t in p.summary.turns] == [120, 86, 78, 95, 97, 78]
    assert p.summary.tokenUsage == TokenUsage(input=60, output=30)


def test_opencode_error_event_fails() -> None:
    p = parse_opencode_stream(lines(DATA / "opencode-error-stream.jsonl"))
    assert p.status == "failed"
    assert p.error == "opencode: No API key found for provider anthropic"
    assert p.summary.turnsUsed == 1  # the step happened, even without output


def test_opencode_token_counts_given_as_floats_are_counted() -> None:
    step = {
        "type": "step_finish",
        "sessionID": "s",
        "part": {
            "tokens": {"input": 12.0, "output": 3.0, "reasoning": 2.0, "cache": {"read": 4.0}}
        },
    }
    p = parse_opencode_stream([json.dumps({"type": "step_start", "part": {}}), json.dumps(step)])
    assert p.summary.tokenUsage == TokenUsage(input=12, output=3, cacheRead=4, thinking=2)


# ---------------------------------------------------------------- every file, and behaviors

PARSERS = {
    "claude": parse_claude_stream,
    "codex": parse_codex_stream,
    "gemini": parse_gemini_stream,
    "opencode": parse_opencode_stream,
}


def test_every_shared_stream_parses_cleanly(agent_streams: Path) -> None:
    files = sorted(agent_streams.glob("*.jsonl"))
    assert files, f"no streams in {agent_streams}"
    for path in files:
        parser = PARSERS[path.name.split("-")[0]]
        p = parser(lines(path))
        assert p.status == "done", path.name
        assert p.sessionId and p.summary.turnsUsed and p.summary.turnsUsed >= 2, path.name
        assert p.skipped == {}, f"{path.name}: unknown events {p.skipped}"


DRIFTED_IDS = [
    (
        "claude",
        '{"type":"system","subtype":"init","session_id":7,"model":{"id":"m"},"claude_code_version":2}',
    ),
    ("codex", '{"type":"thread.started","thread_id":["t"]}'),
    ("gemini", '{"type":"init","session_id":{"id":"s"},"model":12}'),
    ("opencode", '{"type":"step_start","sessionID":3,"part":{}}'),
]


@pytest.mark.parametrize(("agent", "line"), DRIFTED_IDS)
def test_ids_and_names_of_a_drifted_type_are_dropped(agent: str, line: str) -> None:
    p = PARSERS[agent]([line])
    assert p.sessionId is None and p.model is None and p.agentVersion is None


def test_negative_token_counts_are_not_counted() -> None:
    stream = [
        '{"type":"thread.started","thread_id":"t1"}',
        '{"type":"turn.completed","usage":{"input_tokens":-50,"cached_input_tokens":-5,'
        '"output_tokens":-7,"reasoning_output_tokens":-1}}',
    ]
    assert parse_codex_stream(stream).summary.tokenUsage == TokenUsage()


# (file, expected behavior subset): derived from the parsed turns by capeval.core.behaviors.
BEHAVIORS = [
    (
        "claude-stream.jsonl",
        {"shellCommandCount": 1, "chainSegmentCount": 2, "toolCallsByName": {"Bash": 1}},
    ),
    (
        "claude-script-stream.jsonl",
        {
            "shellCommandCount": 1,
            "chainSegmentCount": 2,
            "longestToolOnlyStreak": 2,
            "toolCallsByName": {"Write": 1, "Edit": 1, "Read": 1, "Bash": 1},
        },
    ),
    (
        "codex-script-stream.jsonl",
        {
            "shellCommandCount": 1,
            "chainSegmentCount": 2,
            "editViaShellCount": 0,
            "toolCallsByName": {"apply_patch": 1, "command_execution": 1},
        },
    ),
]


@pytest.mark.parametrize(("name", "expected"), BEHAVIORS)
def test_behaviors_of_golden_streams(agent_streams: Path, name: str, expected: dict) -> None:
    from capeval.core.behaviors import derive_behaviors

    parser = PARSERS[name.split("-")[0]]
    b = derive_behaviors(parser(lines(agent_streams / name)).summary)
    assert {k: b[k] for k in expected} == expected


def test_behaviors_of_schema_streams() -> None:
    from capeval.core.behaviors import derive_behaviors

    codex = derive_behaviors(
        parse_codex_stream(lines(DATA / "codex-parallel-stream.jsonl")).summary
    )
    assert codex["editViaShellCount"] == 1  # the unwrapped `sed -i`
    assert codex["shellCommandCount"] == 3
    opencode = derive_behaviors(
        parse_opencode_stream(lines(DATA / "opencode-stream.jsonl")).summary
    )
    assert opencode["envAssignmentCommandCount"] == 1  # FOO=bar echo ...
    assert opencode["chainSegmentCount"] == 3
    assert opencode["webFetchToolCallCount"] == 1
    assert opencode["maxTurnDurationMs"] == 1400
    gemini = derive_behaviors(parse_gemini_stream(lines(DATA / "gemini-stream.jsonl")).summary)
    assert gemini["webFetchToolCallCount"] == 1
    assert gemini["chainSegmentCount"] == 3


def rollout(*entries: tuple[str, dict[str, Any]]) -> list[str]:
    """Codex session-log lines (`$CODEX_HOME/sessions/.../rollout-*.jsonl`), in its layout,
    one second apart."""
    return [
        json.dumps({"timestamp": f"2026-12-01T10:00:{i:02d}.000Z", "type": kind, "payload": p})
        for i, (kind, p) in enumerate(entries)
    ]


def fcall(call_id: str, name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    payload = {"type": "function_call", "name": name, "arguments": json.dumps(arguments)}
    return ("response_item", {**payload, "call_id": call_id})


def output(call_id: str, text: str = "ok") -> tuple[str, dict[str, Any]]:
    return ("response_item", {"type": "function_call_output", "call_id": call_id, "output": text})


def answer(text: str) -> tuple[str, dict[str, Any]]:
    content = [{"type": "output_text", "text": text}]
    return ("response_item", {"type": "message", "role": "assistant", "content": content})


USAGE = ("token_usage_record", {"thread_id": "t"})


def test_codex_rollout_has_every_response_and_call() -> None:
    # A response that only polled a command (write_stdin) leaves no item in
    # the exec stream; the session log has its call and its usage record, and
    # a patch asked for with a command is one response, not two.
    from capeval.agents.codex import parse_rollout, with_rollout
    from capeval.core.behaviors import derive_behaviors

    patch = {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "input": "*** x"}
    log = rollout(
        ("response_item", {"type": "message", "role": "user", "content": []}),  # the prompt
        answer("Looking."),
        fcall("c1", "exec_command", {"cmd": "cd src && ls"}),
        USAGE,
        output("c1", "a.py"),
        fcall("c2", "write_stdin", {"session_id": 1, "chars": ""}),
        USAGE,
        output("c2"),
        ("response_item", patch),
        fcall("c4", "exec_command", {"cmd": "curl -s http://x"}),
        USAGE,
        ("response_item", {"type": "custom_tool_call_output", "call_id": "c3", "output": "ok"}),
        output("c4"),
        USAGE,  # an empty response
        answer("Done."),
        USAGE,
    )
    parsed = parse_rollout(["not json", "[1]", '{"type": "x"}', *log])
    assert parsed is not None and parsed.counts == (5, 4)
    stream = parse_codex_stream(codex_events())
    done = with_rollout(stream, parsed, finished=True)
    summary = done.summary
    assert (summary.turnsUsed, summary.toolCallCount) == (5, 4)
    assert [[c.name for c in t.toolCalls] for t in summary.turns] == [
        ["command_execution"],
        ["write_stdin"],
        ["apply_patch", "command_execution"],
        [],
        [],
    ]
    assert summary.turns[0].texts == ("Looking.",) and summary.turns[4].texts == ("Done.",)
    first = summary.turns[0].toolCalls[0]
    assert (first.kind, first.command, first.result) == (SHELL, "cd src && ls", "a.py")
    # From the prompt's entry to its call's output: 4 s; the patch turn's to its last output.
    assert summary.turns[0].durationMs == 4000
    assert summary.turns[2].durationMs == 5000
    behaviors = derive_behaviors(summary)
    assert behaviors["networkCommandCount"] == 1 and behaviors["chainSegmentCount"] == 3
    assert behaviors["toolCallsByName"] == {
        "command_execution": 2,
        "write_stdin": 1,
        "apply_patch": 1,
    }
    assert behaviors["longestToolOnlyStreak"] == 2


def test_codex_rollout_names_tools_as_the_stream_does() -> None:
    from capeval.agents.codex import parse_rollout

    log = rollout(
        fcall("m1", "list_issues", {"limit": 3}),
        ("response_item", {"type": "function_call", "call_id": "m2", "name": "get_issue",
                           "namespace": "mcp__paperclip", "arguments": "{}"}),
        ("response_item", {"type": "local_shell_call", "call_id": "s1",
                           "action": {"type": "exec", "command": ["bash", "-lc", "ls -a"]}}),
        ("response_item", {"type": "web_search_call", "id": "w1",
                           "action": {"type": "search", "query": "release notes"}}),
        USAGE,
    )  # fmt: skip
    parsed = parse_rollout(log)
    assert parsed is not None
    (turn,) = parsed.builders
    assert [(c.name, c.kind) for c in turn.calls] == [
        ("list_issues", "other"),
        ("mcp__paperclip__get_issue", "other"),
        ("command_execution", SHELL),
        ("web_search", "search"),
    ]
    assert turn.calls[2].command == "ls -a"
    assert turn.calls[3].arguments == {"query": "release notes"}


def test_codex_rollout_of_another_layout_or_an_unfinished_run_keeps_the_stream() -> None:
    from capeval.agents.codex import parse_rollout, with_rollout

    # Another layout (no usage entries): nothing to say.
    assert parse_rollout(rollout(fcall("c", "exec_command", {"cmd": "ls"}), output("c"))) is None
    # Only the usage events of an older layout mark responses, and the
    # rate-limit-only ones (no usage) are not responses.
    counted = ("event_msg", {"type": "token_count", "info": {"last_token_usage": {"input": 1}}})
    limits = ("event_msg", {"type": "token_count", "info": None, "rate_limits": {}})
    older = parse_rollout(
        rollout(limits, fcall("c", "exec_command", {"cmd": "ls"}), counted, counted)
    )
    assert older is not None and older.counts == (2, 1)
    # The stream: one shell call and a closing message, so two turns.
    stream = parse_codex_stream(
        codex_events(
            ("item.started", {"id": "i0", "type": "command_execution", "command": "ls"}),
            ("item.completed", {"id": "i0", "type": "command_execution", "command": "ls"}),
            ("item.completed", {"id": "i1", "type": "agent_message", "text": "done"}),
        )
    )
    assert (stream.summary.turnsUsed, stream.summary.toolCallCount) == (2, 1)
    # Cut off: the stream showed a response the log has no record of yet; its turns stay.
    short = parse_rollout(rollout(fcall("c", "exec_command", {"cmd": "ls"}), USAGE))
    cut = with_rollout(stream, short, finished=False)
    assert cut.summary.turns == stream.summary.turns
    assert (cut.summary.turnsUsed, cut.summary.toolCallCount) == (2, 1)
    longer = parse_rollout(rollout(USAGE, USAGE, USAGE))
    assert with_rollout(stream, longer, finished=False).summary.turnsUsed == 3
    assert with_rollout(stream, None, finished=True) is stream


def test_codex_unfinished_run_counts_the_calls_its_log_has_and_the_stream_missed() -> None:
    # The log saw two responses with three calls (a poll the stream never
    # shows among them); a run cut off keeps its stream turns but the larger counts.
    def fcall(call_id: str, name: str) -> str:
        payload = {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}
        return json.dumps({"type": "response_item", "payload": payload})

    usage = json.dumps({"type": "token_usage_record", "payload": {}})
    log = parse_rollout(
        [fcall("a", "exec_command"), fcall("b", "write_stdin"), usage, fcall("c", "x"), usage]
    )
    stream = parse_codex_stream(
        [
            '{"type":"thread.started","thread_id":"t"}',
            '{"type":"item.started","item":{"id":"i0","type":"command_execution","command":"ls"}}',
        ]
    )
    assert (stream.summary.turnsUsed, stream.summary.toolCallCount) == (1, 1)
    cut = with_rollout(stream, log, finished=False)
    assert (cut.summary.turnsUsed, cut.summary.toolCallCount) == (2, 3)
    assert cut.summary.turns == stream.summary.turns


def test_codex_rollout_keeps_the_users_words_out_of_the_models_turns() -> None:
    # The prompt (and any later user message) is not assistant text: a
    # response of calls only stays tool-only (longestToolOnlyStreak).
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go"}]}
    patch = {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": "*** x"}
    log = parse_rollout(rollout(USAGE, ("response_item", user), ("response_item", patch), USAGE))
    assert log is not None and log.counts == (2, 1)
    assert [b.texts for b in log.builders] == [[], []]
    (call,) = log.builders[1].calls
    assert (call.name, call.arguments) == ("apply_patch", {"input": "*** x"})


def test_codex_reads_the_session_log_of_its_own_thread(tmp_path: Path) -> None:
    # A CODEX_HOME the user shares between runs holds other threads' logs:
    # the run's own (named by its thread id) is the one read.
    from capeval.agents.base import AgentRequest
    from capeval.agents.codex import CodexAdapter
    from capeval.core.agentconfig import AgentConfig

    def log(responses: int) -> str:
        entry = json.dumps({"type": "token_usage_record", "payload": {}})
        return "\n".join([entry] * responses) + "\n"

    day = tmp_path / "home" / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    (day / "rollout-2026-12-01T10-00-00-other-thread.jsonl").write_text(log(5))
    (day / "rollout-2026-12-01T10-00-01-my-thread.jsonl").write_text(log(3))
    config = AgentConfig(name="cx", type="codex", env={"CODEX_HOME": str(tmp_path / "home")})
    request = AgentRequest(
        workdir=tmp_path,
        prompt="",
        provider="",
        model="",
        case_dir=tmp_path,
        capture_dir=tmp_path / "capture",
    )
    stream = parse_codex_stream(
        codex(
            {"type": "thread.started", "thread_id": "my-thread"},
            item("item.completed", id="m", type="agent_message", text="done"),
            {"type": "turn.completed", "usage": {}},
        )
    )
    assert stream.summary.turnsUsed == 1
    assert CodexAdapter(config).amend(stream, request).summary.turnsUsed == 3


def test_codex_unfinished_run_keeps_the_turns_its_log_never_got(tmp_path: Path) -> None:
    from capeval.agents.base import AgentRequest
    from capeval.agents.codex import CodexAdapter
    from capeval.core.agentconfig import AgentConfig

    day = tmp_path / "home" / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    (day / "rollout-2026-12-01T10-00-00-t.jsonl").write_text("\n".join(rollout(USAGE)))
    config = AgentConfig(name="cx", type="codex", env={"CODEX_HOME": str(tmp_path / "home")})
    request = AgentRequest(
        workdir=tmp_path, prompt="", provider="", model="", case_dir=tmp_path,
        capture_dir=tmp_path / "capture",
    )  # fmt: skip
    shell = {"type": "command_execution"}
    stream = parse_codex_stream(
        codex(
            {"type": "thread.started", "thread_id": "t"},
            item("item.started", id="c1", command="ls", **shell),
            item("item.completed", id="c1", command="ls", **shell),
            item("item.started", id="c2", command="pwd", **shell),
        )
    )  # killed at the timeout: no turn.completed
    assert stream.status == "failed" and stream.summary.turnsUsed == 2
    amended = CodexAdapter(config).amend(stream, request)
    assert amended.summary.turnsUsed == 2 and amended.summary.turns == stream.summary.turns


def claude_log(*requests: dict[str, Any]) -> list[str]:
    """Claude Code session-log lines (`projects/<project>/<session>.jsonl`): its `api-request`s."""
    return [
        json.dumps({"type": "api-request", "querySource": "sdk", "params": {}, **r})
        for r in requests
    ]


def test_claude_session_responses_count_the_empty_ones() -> None:
    # Claude Code 2.1.332 prints no `assistant` line for an empty response
    # (it nudges once, then gives up): the stream shows one of three responses.
    from capeval.agents.claude_code import session_responses

    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    nudge = "[Your previous response had no visible output. Please continue ...]"
    stream = parse_claude_stream(
        [
            json.dumps({"type": "assistant", "message": {"id": "m1", "content": [call]}}),
            json.dumps({"type": "user", "message": {"content": [{"type": "text", "text": nudge}]}}),
            json.dumps({"type": "result", "subtype": "success", "num_turns": 3}),
        ]
    )
    assert stream.summary.turnsUsed == 1
    log = claude_log(
        {"id": "r1", "tail": [{}]},
        {"id": "r2", "base": "r1", "keep": 1, "tail": [{}, {}]},
        {"id": "r3", "base": "r2", "keep": 2, "tail": [{}]},
    )
    noise = ["not json", "[1]", json.dumps({"type": "assistant", "message": {}})]
    side = claude_log({"id": "s1", "querySource": "generate_session_title", "tail": [{}]})
    assert session_responses([*noise, *log, *side]) == 3
    from capeval.agents.streams import with_session_counts

    done = with_session_counts(stream, 3, finished=True)
    assert (done.summary.turnsUsed, done.summary.toolCallCount) == (3, 1)
    assert len(done.summary.turns) == 1  # the turns stay the stream's


def test_claude_session_responses_skip_a_request_sent_again() -> None:
    # An overloaded (529) or rejected request is sent again with nothing added
    # to the conversation: one response, not two.
    from capeval.agents.claude_code import session_responses

    log = claude_log(
        {"id": "r1", "tail": [{}]},
        {"id": "r2", "base": "r1", "keep": 1, "tail": [{}, {}]},
        {"id": "r3", "base": "r2", "keep": 3, "tail": []},
    )
    assert session_responses(log) == 2
    # Another layout (no main-loop requests): nothing to say.
    assert session_responses(claude_log({"id": "r1", "querySource": "compact"})) is None
    assert session_responses([]) is None


def claude_home(tmp_path: Path, logs: dict[str, int]) -> tuple[Any, Any]:
    """A Claude config dir with one project's session logs of `n` main-loop requests each.

    Each request but the first extends the one before (its `base`, with the
    response and tool results as its `tail`), as Claude Code logs a session.
    """
    from capeval.agents.base import AgentRequest
    from capeval.core.agentconfig import AgentConfig

    project = tmp_path / "claude" / "projects" / "-tmp-work"
    project.mkdir(parents=True)
    for session, n in logs.items():
        entries = [
            json.dumps(
                {"type": "api-request", "querySource": "sdk", "id": f"r{i}", "tail": ["t"]}
                | ({"base": f"r{i - 1}"} if i else {})
            )
            for i in range(n)
        ]
        (project / f"{session}.jsonl").write_text("\n".join(entries) + "\n")
    config = AgentConfig(
        name="cc", type="claude-code", env={"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    )
    request = AgentRequest(
        workdir=tmp_path, prompt="", provider="", model="", case_dir=tmp_path,
        capture_dir=tmp_path / "capture",
    )  # fmt: skip
    return config, request


def claude_run(session: str, responses: int, *, finished: bool) -> list[str]:
    events: list[dict[str, Any]] = [{"type": "system", "subtype": "init", "session_id": session}]
    events += [assistant(f"m{i}", "claude-sonnet-4-5", text("x")) for i in range(responses)]
    if finished:
        events.append({"type": "result", "subtype": "success", "is_error": False})
    return claude(*events)


def test_claude_reads_the_session_log_of_its_own_session(tmp_path: Path) -> None:
    from capeval.agents.claude_code import ClaudeCodeAdapter

    config, request = claude_home(tmp_path, {"mine": 3, "another": 5})
    stream = parse_claude_stream(claude_run("mine", 1, finished=True))
    assert ClaudeCodeAdapter(config).amend(stream, request).summary.turnsUsed == 3


def test_claude_unfinished_run_keeps_the_responses_its_log_never_got(tmp_path: Path) -> None:
    # Killed at the timeout: the stream showed two responses, the log one.
    from capeval.agents.claude_code import ClaudeCodeAdapter

    config, request = claude_home(tmp_path, {"mine": 1})
    stream = parse_claude_stream(claude_run("mine", 2, finished=False))
    assert stream.status == "failed"
    assert ClaudeCodeAdapter(config).amend(stream, request).summary.turnsUsed == 2


def gemini_chat(session: str, *messages: dict[str, Any]) -> list[str]:
    """Gemini CLI chat-log lines (`.gemini/tmp/<project>/chats/session-*.jsonl`)."""
    header = {"sessionId": session, "projectHash": "h", "kind": "main"}
    return [json.dumps(header), *(json.dumps(m) for m in messages)]


def test_gemini_chat_responses_count_the_empty_ones() -> None:
    # Gemini CLI 0.61 prints nothing for an empty response: the stream shows
    # the shell call's turn only, the chat log both responses.
    from capeval.agents.gemini import chat_responses
    from capeval.agents.streams import with_session_counts

    stream = parse_gemini_stream(
        [
            json.dumps({"type": "init", "session_id": "s-1", "model": "m"}),
            json.dumps({"type": "tool_use", "tool_name": "run_shell_command", "tool_id": "t1"}),
            json.dumps({"type": "tool_result", "tool_id": "t1", "status": "success"}),
            json.dumps({"type": "result", "status": "success", "stats": {}}),
        ]
    )
    assert stream.summary.turnsUsed == 1
    tokens = {"input": 10, "output": 5}
    log = gemini_chat(
        "s-1",
        {"id": "u1", "type": "user", "content": [{"text": "Go."}]},
        {"id": "g1", "type": "gemini", "content": "", "tokens": tokens},
        {"$set": {"lastUpdated": "t"}},
        {"id": "g1", "type": "gemini", "content": "", "tokens": tokens, "toolCalls": [{}]},
        {"id": "u2", "type": "user", "content": [{"functionResponse": {}}]},
        {"id": "g2", "type": "gemini", "content": [], "tokens": tokens},
    )
    assert chat_responses(["not json", *log], "s-1") == 2
    assert chat_responses(log, "another") is None  # another session's log
    assert chat_responses(gemini_chat("s-1"), "s-1") is None
    done = with_session_counts(stream, 2, finished=True)
    assert (done.summary.turnsUsed, done.summary.toolCallCount) == (2, 1)
    # Cut off: a response the stream showed but the log did not yet get.
    assert with_session_counts(stream, 0, finished=False).summary.turnsUsed == 1
    assert with_session_counts(stream, None, finished=True) is stream


def test_gemini_thinking_comes_from_the_chat_log() -> None:
    # Gemini CLI 0.61's stream stats have no thought count; its chat log
    # records each response's `tokens`, the whole record again as calls return.
    from capeval.agents.gemini import chat_messages, chat_thoughts, with_chat_thinking

    stats = {"input_tokens": 20, "output_tokens": 10, "cached": 0, "input": 20}
    stream = parse_gemini_stream(
        [
            json.dumps({"type": "init", "session_id": "s-1", "model": "m"}),
            json.dumps({"type": "result", "status": "success", "stats": stats}),
        ]
    )
    assert stream.summary.tokenUsage == TokenUsage(input=20, output=10)

    def tokens(thoughts: int) -> dict[str, int]:
        return {"input": 10, "output": 5, "cached": 0, "thoughts": thoughts, "tool": 0, "total": 0}

    log = gemini_chat(
        "s-1",
        {"id": "u1", "type": "user", "content": [{"text": "Go."}], "tokens": tokens(100)},
        {"id": "g1", "type": "gemini", "content": "", "thoughts": [], "tokens": tokens(3)},
        {"$set": {"lastUpdated": "t"}},
        {"id": "g1", "type": "gemini", "content": "", "tokens": tokens(3), "toolCalls": [{}]},
        {"id": "g2", "type": "gemini", "content": "", "tokens": None},  # no usage reported
        {"id": "g3", "type": "gemini", "content": "done", "tokens": tokens(4)},
    )
    messages = chat_messages(["not json", *log], "s-1")
    assert messages is not None and chat_thoughts(messages) == 7  # g1 once, g3; not the user
    amended = with_chat_thinking(stream, chat_thoughts(messages))
    assert amended.summary.tokenUsage == TokenUsage(input=20, output=10, thinking=7)
    assert amended.summary.turns == stream.summary.turns
    assert chat_messages(log, "another") is None  # another session's log
    # A log without thought counts (another layout), or no thoughts: the stream stands.
    old = chat_messages(gemini_chat("s-1", {"id": "g1", "type": "gemini", "tokens": {}}), "s-1")
    assert old is not None and chat_thoughts(old) is None
    assert with_chat_thinking(stream, None) is stream
    assert with_chat_thinking(stream, 0) is stream
    # A stream that reports thoughts itself keeps its own count.
    own = parse_gemini_stream(
        [json.dumps({"type": "result", "status": "success", "stats": {**stats, "thoughts": 2}})]
    )
    assert with_chat_thinking(own, 7) is own
    # A stream without usage (no `result`) gets none made up.
    cut = parse_gemini_stream([json.dumps({"type": "init", "session_id": "s-1"})])
    assert cut.summary.tokenUsage is None and with_chat_thinking(cut, 7) is cut


def gemini_home(tmp_path: Path, session: str, responses: int) -> tuple[Any, Any]:
    """A Gemini CLI home holding the session's chat log with `responses` model messages."""
    from capeval.agents.base import AgentRequest
    from capeval.core.agentconfig import AgentConfig

    chats = tmp_path / "gemini" / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    entries = [{"sessionId": session, "projectHash": "p"}]
    entries += [{"id": f"g{i}", "type": "gemini", "content": "x"} for i in range(responses)]
    log = chats / f"session-2026-12-01T10-00-{session[:8]}.jsonl"
    log.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    config = AgentConfig(
        name="gm", type="gemini", env={"GEMINI_CLI_HOME": str(tmp_path / "gemini")}
    )
    request = AgentRequest(
        workdir=tmp_path, prompt="", provider="", model="", case_dir=tmp_path,
        capture_dir=tmp_path / "capture",
    )  # fmt: skip
    return config, request


def gemini_run(session: str, turns: int, *, finished: bool) -> ParsedStream:
    from capeval.agents.gemini import parse_gemini_stream

    events: list[dict[str, Any]] = [{"type": "init", "session_id": session, "model": "m"}]
    for i in range(turns):
        events += [
            {"type": "tool_use", "tool_name": "run_shell_command", "tool_id": f"t{i}"},
            {"type": "tool_result", "tool_id": f"t{i}", "status": "success"},
        ]
    if finished:
        events.append({"type": "result", "status": "success", "stats": {}})
    return parse_gemini_stream([json.dumps(e) for e in events])


SESSION = "0d1e6a3c-5b7f-4c2e-9a81-3f0c2b6d7e10"


def test_gemini_reads_the_chat_log_of_its_session(tmp_path: Path) -> None:
    from capeval.agents.gemini import GeminiAdapter

    config, request = gemini_home(tmp_path, SESSION, 3)
    stream = gemini_run(SESSION, 1, finished=True)
    assert stream.summary.turnsUsed == 1
    assert GeminiAdapter(config).amend(stream, request).summary.turnsUsed == 3


def test_gemini_unfinished_run_keeps_the_responses_its_log_never_got(tmp_path: Path) -> None:
    from capeval.agents.gemini import GeminiAdapter

    config, request = gemini_home(tmp_path, SESSION, 1)
    stream = gemini_run(SESSION, 2, finished=False)
    assert stream.status == "failed"
    assert GeminiAdapter(config).amend(stream, request).summary.turnsUsed == 2
