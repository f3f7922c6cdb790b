"""Stream-parser rules that the golden streams leave unexercised.

Each test here pins a rule whose breaking no other fast test noticed (found
by mutating the parsers): token fields kept apart, the cumulative `result`
winning, the fallback model being reported, and results and previews kept
short.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capeval.agents.claude_code import parse_claude_stream
from capeval.agents.codex import parse_codex_stream, parse_rollout, with_rollout
from capeval.agents.opencode import parse_opencode_stream
from capeval.agents.streams import ParsedStream
from capeval.core.turns import TokenUsage


def claude(*events: dict[str, Any]) -> list[str]:
    return [json.dumps(e) for e in events]


def assistant(mid: str, model: str, *content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "message": {"id": mid, "model": model, "content": list(content)}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


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


def codex(*events: dict[str, Any]) -> list[str]:
    return [json.dumps(e) for e in events]


def item(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "item": fields}


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


def test_codex_provider_args_define_a_responses_provider() -> None:
    from capeval.agents.codex import provider_args

    args = provider_args("mock", "http://127.0.0.1:9/v1", "MOCK_KEY")
    assert args == [
        "-c", 'model_providers.mock.name="mock"',
        "-c", 'model_providers.mock.base_url="http://127.0.0.1:9/v1"',
        "-c", 'model_providers.mock.wire_api="responses"',
        "-c", 'model_providers.mock.env_key="MOCK_KEY"',
    ]  # fmt: skip


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


def test_gemini_error_result_names_its_message_not_the_error_object() -> None:
    from capeval.agents.gemini import parse_gemini_stream

    result = {"type": "result", "status": "error", "error": {"type": "Fatal", "message": "quota"}}
    p = parse_gemini_stream([json.dumps(result)])
    assert p.status == "failed" and p.error == "gemini: quota"


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


def test_claude_env_quiets_side_traffic(tmp_path: Path) -> None:
    from capeval.agents.claude_code import ClaudeCodeAdapter

    config, request = claude_home(tmp_path, {})
    env = ClaudeCodeAdapter(config).cli_env(request)
    assert env["DISABLE_TELEMETRY"] == "1"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"


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


def rollout_lines(*entries: tuple[str, dict[str, Any]]) -> list[str]:
    return [json.dumps({"type": kind, "payload": payload}) for kind, payload in entries]


USAGE = ("token_usage_record", {})


def test_codex_rollout_keeps_the_users_words_out_of_the_models_turns() -> None:
    # The prompt (and any later user message) is not assistant text: a
    # response of calls only stays tool-only (longestToolOnlyStreak).
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go"}]}
    patch = {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": "*** x"}
    log = parse_rollout(
        rollout_lines(USAGE, ("response_item", user), ("response_item", patch), USAGE)
    )
    assert log is not None and log.counts == (2, 1)
    assert [b.texts for b in log.builders] == [[], []]
    (call,) = log.builders[1].calls
    assert (call.name, call.arguments) == ("apply_patch", {"input": "*** x"})


def test_codex_unfinished_run_keeps_the_turns_its_log_never_got(tmp_path: Path) -> None:
    from capeval.agents.base import AgentRequest
    from capeval.agents.codex import CodexAdapter
    from capeval.core.agentconfig import AgentConfig

    day = tmp_path / "home" / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    (day / "rollout-2026-12-01T10-00-00-t.jsonl").write_text("\n".join(rollout_lines(USAGE)))
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


def test_stderr_tail_gives_the_last_line_naming_an_error() -> None:
    from capeval.agents.cliadapter import stderr_tail

    stderr = "Error: retrying request\nnote: detail\nfatal: no credentials found\nbye\n"
    assert stderr_tail(stderr) == "fatal: no credentials found"
    assert stderr_tail("first\nlast\n") == "last"
    assert stderr_tail("\n\n") is None
