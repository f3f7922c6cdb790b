"""Each adapter tells an outage (outcome `error`) from a failure in its CLI's own signals.

The Claude Code and Codex streams under `tests/data/streams/errors/` were
printed by the real CLIs (Claude Code 2.1.332, Codex 0.171.0) against the
scripted model server answering every model request with a fault
(`capeval.agents.modelserver.Fault`; `noretry`: with `x-should-retry:
false`). docs/agents.md#outcome-signals lists the signals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.agents.claude_code import parse_claude_stream
from capeval.agents.codex import CodexAdapter, parse_codex_stream
from capeval.agents.gemini import GeminiAdapter, parse_gemini_stream
from capeval.agents.infra import InfraError, from_text
from capeval.agents.opencode import parse_opencode_stream
from capeval.core.agentconfig import AgentConfig

STREAMS = Path(__file__).resolve().parents[1] / "data" / "streams"
ERRORS = STREAMS / "errors"


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


@pytest.mark.parametrize(
    ("name", "kind", "status"),
    [
        ("429-noretry", "rate_limit", 429),
        ("529-noretry", "overloaded", 529),
        ("500-noretry", "server", 500),
        ("401", "auth", 401),
        ("cut", "network", None),  # a 200 stream cut off: no status
    ],
)
def test_claude_code_result_event_says_the_outage(name: str, kind: str, status: int | None) -> None:
    parsed = parse_claude_stream(_lines(ERRORS / f"claude-code-{name}.jsonl"))
    assert parsed.status == "failed"
    assert parsed.infra == InfraError(kind, status)


@pytest.mark.parametrize(
    ("name", "kind", "status"),
    [
        ("429-noretry", "rate_limit", 429),
        ("529-noretry", "overloaded", 529),
        # Codex words a persistent 500 as "high demand" and drops the status.
        ("500-noretry", "overloaded", None),
        ("401", "auth", 401),
        ("cut", "network", None),
    ],
)
def test_codex_turn_failed_event_says_the_outage(name: str, kind: str, status: int | None) -> None:
    parsed = parse_codex_stream(_lines(ERRORS / f"codex-{name}.jsonl"))
    assert parsed.status == "failed"
    assert parsed.infra == InfraError(kind, status)


def test_a_finished_run_measured_something() -> None:
    assert (
        parse_claude_stream(_lines(STREAMS / "claude-background-agent-stream.jsonl")).infra is None
    )
    assert parse_codex_stream(_lines(STREAMS / "codex-parallel-stream.jsonl")).infra is None
    assert parse_opencode_stream(_lines(STREAMS / "opencode-real-stream.jsonl")).infra is None


def test_a_claude_failure_of_the_agents_own_is_no_outage() -> None:
    # A 400 (a request too long) and a turn budget overrun are the agent's: failed, not error.
    too_long = {"type": "result", "subtype": "success", "is_error": True,
                "api_error_status": 400, "result": "API Error: 400 prompt is too long"}  # fmt: skip
    budget = {"type": "result", "subtype": "error_max_turns", "is_error": False}
    for result in (too_long, budget):
        parsed = parse_claude_stream([json.dumps(result)])
        assert parsed.status == "failed" and parsed.infra is None, result


def test_a_stream_that_stops_before_its_result_broke_off() -> None:
    lines = _lines(STREAMS / "claude-background-agent-stream.jsonl")
    cut = [line for line in lines if '"type":"result"' not in line.replace(" ", "")]
    assert parse_claude_stream(cut).infra == InfraError("stream")


def test_gemini_quota_error_and_auth_exit_code() -> None:
    parsed = parse_gemini_stream(_lines(STREAMS / "gemini-error-stream.jsonl"))
    assert parsed.status == "failed" and parsed.infra == InfraError("rate_limit")
    adapter = GeminiAdapter(AgentConfig(name="g", type="gemini"))
    assert adapter.exit_infra(41, "Error authenticating") == InfraError("auth")
    assert adapter.exit_infra(41, '{"code":401}') == InfraError("auth", 401)
    assert adapter.exit_infra(1, "TypeError: x is undefined") is None


def test_opencode_error_event() -> None:
    parsed = parse_opencode_stream(_lines(STREAMS / "opencode-error-stream.jsonl"))
    assert parsed.infra == InfraError("auth")
    api = {"type": "error", "error": {"name": "APIError",
           "data": {"message": "Overloaded", "statusCode": 529}}}  # fmt: skip
    assert parse_opencode_stream([json.dumps(api)]).infra == InfraError("overloaded", 529)


def test_codex_stderr_is_never_read_for_an_outage() -> None:
    # Its own side traffic fails offline ("error sending request") on every run.
    adapter = CodexAdapter(AgentConfig(name="c", type="codex"))
    assert adapter.exit_infra(1, "ERROR: error sending request for url") is None


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("exceeded retry limit, last status: 429 Too Many Requests", InfraError("rate_limit", 429)),
        ("unexpected status 401 Unauthorized", InfraError("auth", 401)),
        ("API Error: 529 overloaded", InfraError("overloaded", 529)),
        ("stream disconnected before completion", InfraError("network")),
        ("RESOURCE_EXHAUSTED", InfraError("rate_limit")),
        ("Please run /login", InfraError("auth")),
        ("unexpected status 400 Bad Request", None),
        ("the tests failed", None),
        ("", None),
    ],
)
def test_free_text_of_cli_messages(text: str, want: InfraError | None) -> None:
    assert from_text(text) == want


@pytest.mark.parametrize(
    ("summary", "status", "want"),
    [
        ({"outcome": "error", "errorKind": "rate_limit", "providerStatus": 429}, "failed",
         {"errorKind": "rate_limit", "providerStatus": 429}),
        # A kind capeval does not know: the status decides, else a server error.
        ({"outcome": "error", "errorKind": "meltdown", "providerStatus": 529}, "failed",
         {"errorKind": "overloaded", "providerStatus": 529}),
        ({"outcome": "error"}, "failed", {"errorKind": "server", "providerStatus": None}),
        ({"outcome": "error"}, "timeout", {}),  # out of its time: the agent's own
        ({"outcome": "failed"}, "failed", {}),
        ({}, "done", {}),
    ],
)  # fmt: skip
def test_a_command_products_run_summary_states_an_outage(
    summary: dict, status: str, want: dict
) -> None:
    from capeval.agents.command import _stated_outcome

    assert _stated_outcome(summary, status) == want
