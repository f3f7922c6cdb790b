"""The scripted model server, spoken to over real HTTP on loopback."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from capeval.agents.modelserver import (
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    THOUGHT_TOKENS,
    ModelServer,
    Script,
    ScriptedCall,
    ScriptStep,
)

SCRIPT = Script.from_json(
    [
        {"text": "Listing.", "calls": [{"name": "Bash", "input": {"command": "ls {{CWD}}"}}]},
        {
            "calls": [
                {"name": "Bash", "input": {"command": "curl -s {{URL}}/token.txt"}},
                {"name": "Read", "input": {"file_path": "{{CWD}}/a.txt"}},
            ]
        },
    ]
)
TOOLS = [{"name": "Bash", "input_schema": {}}, {"name": "Read", "input_schema": {}}]
PROMPT = "Docs: https://example.com/help. Fetch http://127.0.0.1:4321/ please."  # loopback wins
SYSTEM = "You are an agent.\nPrimary working directory: /tmp/work-xyz\n"


def post(url: str, body: dict[str, Any]) -> tuple[str, bytes]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.headers.get("Content-Type", ""), resp.read()


def sse(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in raw.decode().split("\n\n"):
        if not chunk.strip():
            continue
        head, data = chunk.split("\n", 1)
        events.append((head.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


def messages(results: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]
    for i in range(results):
        msgs.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x"}],
            }
        )
    return msgs


def anthropic(server: ModelServer, results: int, **extra: Any) -> list[tuple[str, dict[str, Any]]]:
    body = {
        "model": "m1",
        "stream": True,
        "system": SYSTEM,
        "tools": TOOLS,
        "messages": messages(results),
        **extra,
    }
    ctype, raw = post(f"{server.url}/v1/messages?beta=true", body)
    assert ctype.startswith("text/event-stream")
    return sse(raw)


def tool_uses(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """(name, input) of every tool_use block, input rebuilt from its JSON deltas."""
    out, names = [], {}
    for kind, data in events:
        if kind == "content_block_start" and data["content_block"]["type"] == "tool_use":
            names[data["index"]] = data["content_block"]["name"]
            assert data["content_block"]["input"] == {}
        if kind == "content_block_delta" and data["delta"]["type"] == "input_json_delta":
            out.append((names[data["index"]], json.loads(data["delta"]["partial_json"])))
    return out


@pytest.fixture
def server() -> Any:
    with ModelServer(SCRIPT) as srv:
        yield srv


def test_anthropic_steps_follow_the_tool_result_count(server: ModelServer) -> None:
    first = anthropic(server, 0)
    assert first[0][0] == "message_start" and first[-1][0] == "message_stop"
    assert first[0][1]["message"]["model"] == "m1"
    assert tool_uses(first) == [("Bash", {"command": "ls /tmp/work-xyz"})]
    texts = [
        d["delta"]["text"]
        for k, d in first
        if k == "content_block_delta" and d["delta"]["type"] == "text_delta"
    ]
    assert texts == ["Listing."]
    stop = next(d for k, d in first if k == "message_delta")
    assert (
        stop["delta"]["stop_reason"] == "tool_use"
        and stop["usage"]["output_tokens"] == OUTPUT_TOKENS
    )

    # One tool result in: step 1, both calls; {{URL}} is the prompt's URL.
    second = anthropic(server, 1)
    assert tool_uses(second) == [
        ("Bash", {"command": "curl -s http://127.0.0.1:4321/token.txt"}),
        ("Read", {"file_path": "/tmp/work-xyz/a.txt"}),
    ]
    # Three results (1 + 2 calls): past the script, the final answer.
    last = anthropic(server, 3)
    assert tool_uses(last) == []
    assert next(d for k, d in last if k == "message_delta")["delta"]["stop_reason"] == "end_turn"
    # Stateless: asking for step 0 again gives step 0 again.
    assert tool_uses(anthropic(server, 0)) == [("Bash", {"command": "ls /tmp/work-xyz"})]
    assert [r.step for r in server.scripted_requests()] == [0, 1, 3, 0]


def test_side_requests_without_tools_do_not_consume_steps(server: ModelServer) -> None:
    body = {"model": "haiku", "messages": messages(0), "max_tokens": 1}
    _, raw = post(f"{server.url}/v1/messages", body)
    reply = json.loads(raw)
    assert reply["content"] == [{"type": "text", "text": "ok"}]
    assert reply["usage"]["input_tokens"] == INPUT_TOKENS
    assert server.scripted_requests() == []
    assert tool_uses(anthropic(server, 0))[0][0] == "Bash"


def test_head_hello_and_count_tokens_answer(server: ModelServer) -> None:
    req = urllib.request.Request(f"{server.url}/api/hello", method="HEAD")
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200
    _, raw = post(f"{server.url}/v1/messages/count_tokens", {"messages": []})
    assert json.loads(raw) == {"input_tokens": INPUT_TOKENS}


def test_responses_function_and_custom_tool_calls() -> None:
    script = Script.from_json(
        [
            {"calls": [{"name": "exec_command", "input": {"cmd": "echo hi"}}]},
            {
                "text": "Patching.",
                "calls": [{"name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n"}],
            },
        ]
    )
    with ModelServer(script) as srv:
        base = {
            "model": "gpt-5.5",
            "stream": True,
            "tools": [{"type": "function", "name": "exec_command"}],
        }
        user = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "go"}],
        }
        _, raw = post(f"{srv.url}/v1/responses", {**base, "input": [user]})
        events = sse(raw)
        assert events[0][0] == "response.created" and events[-1][0] == "response.completed"
        done = [d["item"] for k, d in events if k == "response.output_item.done"]
        assert done[0]["type"] == "function_call" and done[0]["name"] == "exec_command"
        assert json.loads(done[0]["arguments"]) == {"cmd": "echo hi"}
        usage = events[-1][1]["response"]["usage"]
        assert (usage["input_tokens"], usage["output_tokens"]) == (INPUT_TOKENS, OUTPUT_TOKENS)

        output = {"type": "function_call_output", "call_id": done[0]["call_id"], "output": "hi"}
        _, raw = post(f"{srv.url}/v1/responses", {**base, "input": [user, done[0], output]})
        done = [d["item"] for k, d in sse(raw) if k == "response.output_item.done"]
        assert [i["type"] for i in done] == ["message", "custom_tool_call"]
        assert done[0]["content"][0]["text"] == "Patching."
        assert done[1]["input"].startswith("*** Begin Patch")

        output2 = {"type": "custom_tool_call_output", "call_id": done[1]["call_id"], "output": "ok"}
        _, raw = post(f"{srv.url}/v1/responses", {**base, "input": [user, output, output2]})
        done = [d["item"] for k, d in sse(raw) if k == "response.output_item.done"]
        assert [i["type"] for i in done] == ["message"] and done[0]["content"][0]["text"] == "done"


def test_responses_tool_search_and_namespaced_calls() -> None:
    """Codex defers MCP tools: search first (a client-side item), then call in the namespace."""
    script = Script.from_json(
        [
            {"calls": [{"name": "tool_search", "input": {"query": "report progress"}}]},
            {"calls": [{"name": "report_progress", "namespace": "mcp__paperclip", "input": {}}]},
        ]
    )
    with ModelServer(script) as srv:
        base = {"model": "gpt-5.5", "stream": True, "tools": [{"type": "tool_search"}]}
        user = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "go"}],
        }
        _, raw = post(f"{srv.url}/v1/responses", {**base, "input": [user]})
        (search,) = [d["item"] for k, d in sse(raw) if k == "response.output_item.done"]
        assert search["type"] == "tool_search_call" and search["execution"] == "client"
        assert search["arguments"] == {"query": "report progress"}  # an object, not a string

        found = {"type": "tool_search_output", "call_id": search["call_id"], "tools": []}
        _, raw = post(f"{srv.url}/v1/responses", {**base, "input": [user, search, found]})
        (call,) = [d["item"] for k, d in sse(raw) if k == "response.output_item.done"]
        assert (call["type"], call["name"], call["namespace"]) == (
            "function_call",
            "report_progress",
            "mcp__paperclip",
        )
    with pytest.raises(ValueError, match="namespace"):
        Script.from_json([{"calls": [{"name": "x", "namespace": 3}]}])


def test_gemini_generate_content_steps_follow_function_responses() -> None:
    script = Script.from_json(
        [
            {
                "text": "Listing.",
                "calls": [{"name": "run_shell_command", "input": {"command": "ls {{CWD}}"}}],
            }
        ]
    )
    context = "<session_context>\n- **Workspace Directories:**\n  - /tmp/gem-work\n"
    user = {"role": "user", "parts": [{"text": context}, {"text": "go"}]}
    tools = [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "write_file"}]}]
    url = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    with ModelServer(script) as srv:
        content_type, raw = post(srv.url + url, {"contents": [user], "tools": tools})
        assert content_type == "text/event-stream"
        (chunk,) = [
            json.loads(c.removeprefix("data: ")) for c in raw.decode().split("\r\n\r\n") if c
        ]
        parts = chunk["candidates"][0]["content"]["parts"]
        assert parts[0] == {"text": "Listing."}
        assert parts[1]["functionCall"] == {
            "name": "run_shell_command",
            "args": {"command": "ls /tmp/gem-work"},
        }
        assert chunk["usageMetadata"]["promptTokenCount"] == INPUT_TOKENS
        assert chunk["usageMetadata"]["thoughtsTokenCount"] == THOUGHT_TOKENS

        answered = {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "run_shell_command", "response": {"output": ""}}}
            ],
        }
        model_turn = {"role": "model", "parts": parts}
        body = {"contents": [user, model_turn, answered], "tools": tools}
        _, raw = post(srv.url + "/v1beta/models/gemini-2.5-pro:generateContent", body)
        done = json.loads(raw)["candidates"][0]["content"]["parts"]
        assert done == [{"text": "done"}]
        _, raw = post(srv.url + "/v1beta/models/gemini-2.5-pro:countTokens", {"contents": [user]})
        assert json.loads(raw) == {"totalTokens": INPUT_TOKENS}
        # A side request without tools (Gemini's next-speaker check) takes no step.
        _, raw = post(srv.url + url, {"contents": [user]})
        assert "ok" in raw.decode()
        assert [r.step for r in srv.scripted_requests()] == [0, 1]


def test_script_from_json_rejects_bad_steps() -> None:
    with pytest.raises(ValueError, match="step 0 call 0"):
        Script.from_json([{"calls": [{"input": {}}]}])
    with pytest.raises(ValueError, match="step 1"):
        Script.from_json([{}, "nope"])  # type: ignore[list-item]


def test_a_step_with_parallel_calls_takes_as_many_results_as_calls() -> None:
    # The step answered is the count of tool results so far: a step of two
    # parallel calls needs both results before the next step is due.
    two = ScriptStep("both", (ScriptedCall("Bash", {}), ScriptedCall("Read", {})))
    one = ScriptStep("one", (ScriptedCall("Bash", {}),))
    script = Script((one, two, ScriptStep("last")))
    assert [script.step_for(n).text for n in (0, 1, 3, 4)] == ["one", "both", "last", "done"]


def test_url_placeholder_skips_the_model_servers_own_address() -> None:
    # A CLI that names its endpoint in the prompt must not have its scripted
    # curl aimed back at the model server instead of the HTTP fixture.
    from capeval.agents.modelserver import _find_url

    texts = ["base http://127.0.0.1:5000/v1/messages then http://127.0.0.1:6000/page."]
    assert _find_url(iter(texts), "http://127.0.0.1:5000") == "http://127.0.0.1:6000/page"


def test_server_binds_loopback_only(server: ModelServer) -> None:
    assert server.url.startswith("http://127.0.0.1:")
