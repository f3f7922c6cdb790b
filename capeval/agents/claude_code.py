"""Claude Code (`claude -p ... --output-format stream-json --verbose`).

Claude prints one `assistant` line per content block, and every block of one
model response carries the same `message.id`: grouping by that id is what
makes one response one turn. The `result` line is the verdict (a run can
exit 0 and still have failed, e.g. `error_max_turns`) and carries the usage:
its cumulative `modelUsage`, which counts sub-agents' tokens too. A run that
started a background Agent can print several `result` lines, one per query. A stream cut off before any `result` (the
agent killed at the timeout) has no usage: the `assistant` lines only repeat
each response's opening usage, whose `output_tokens` is a placeholder (1),
not what the model wrote, so summing them would report a made-up count.

A response with no content (the model answered nothing) prints no
`assistant` line at all, so the stream can fall short of the responses a
run used; `session_responses` counts them in Claude's own session log.

Not passed: `--max-turns`. capeval's turn budget is soft (judged after the
run, never stopping the agent), so the CLI must not enforce it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from capeval.agents.base import AgentRequest
from capeval.agents.cliadapter import CliAdapter, config_home, is_root, runs_sandboxed
from capeval.agents.infra import InfraError, from_status, from_text
from capeval.agents.streams import (
    BROKE_OFF,
    ParsedStream,
    Skipped,
    TurnBuilder,
    answering_model,
    as_float,
    as_int,
    as_str,
    finish_stream,
    json_events,
    log_lines,
    make_call,
    text_of,
    timestamp_ms,
    unfinished,
    with_session_counts,
)
from capeval.core.turns import TokenUsage


def _usage(raw: Any) -> TokenUsage | None:
    if not isinstance(raw, Mapping):
        return None
    details = raw.get("output_tokens_details")
    thinking = as_int(details.get("thinking_tokens")) if isinstance(details, Mapping) else 0
    return TokenUsage(
        input=as_int(raw.get("input_tokens")),
        output=as_int(raw.get("output_tokens")),
        cacheRead=as_int(raw.get("cache_read_input_tokens")),
        cacheWrite=as_int(raw.get("cache_creation_input_tokens")),
        thinking=thinking,
    )


def _session_usage(raw: Any) -> TokenUsage | None:
    """A `result`'s `modelUsage`: the session's usage so far, per model, sub-agents included.

    `usage` covers the main loop only: a run whose Agent calls did most of the
    work reported a fraction of its tokens beside a `total_cost_usd` that
    counts them all.
    """
    if not isinstance(raw, Mapping) or not raw:
        return None
    models = [m for m in raw.values() if isinstance(m, Mapping)]
    if len(models) != len(raw):
        return None
    return sum(
        (
            TokenUsage(
                input=as_int(m.get("inputTokens")),
                output=as_int(m.get("outputTokens")),
                cacheRead=as_int(m.get("cacheReadInputTokens")),
                cacheWrite=as_int(m.get("cacheCreationInputTokens")),
                thinking=as_int(m.get("thinkingTokens")),
            )
            for m in models
        ),
        TokenUsage(),
    )


# The model name Claude Code gives the assistant messages it writes itself.
SYNTHETIC_MODEL = "<synthetic>"


def parse_claude_stream(lines: Iterable[str]) -> ParsedStream:
    """Claude Code stream-json lines -> turns, usage, verdict, session and model."""
    skipped = Skipped("claude-code")
    turns: dict[str, TurnBuilder] = {}  # message.id -> turn, in first-seen order
    results: dict[str, str] = {}
    texts: list[str] = []
    session = init_model = message_model = version = None
    answered: list[str] = []  # the model of each response, in order
    finals: list[Mapping[str, Any]] = []  # the `result` events, in order
    current: TurnBuilder | None = None
    last_ts: float | None = None

    for event in json_events(lines, skipped):
        kind = event.get("type")
        ts = timestamp_ms(event.get("timestamp"))
        session = as_str(event.get("session_id")) or session
        if kind == "system":
            if event.get("subtype") == "init":
                init_model = as_str(event.get("model")) or init_model
                version = as_str(event.get("claude_code_version")) or version
            else:
                skipped.add(f"system/{event.get('subtype')}")
            continue
        if kind == "assistant":
            message = event.get("message")
            if not isinstance(message, Mapping):
                skipped.add("assistant(no message)")
                continue
            if event.get("parent_tool_use_id"):
                # A sub-agent's response: its work shows up as the parent's
                # Agent/Task call; counting it as our turn would double count.
                skipped.add("assistant(sub-agent)")
                continue
            if message.get("model") == SYNTHETIC_MODEL:
                # Claude Code's own notice (no login, an API error), not a model
                # response: no turn, and not the model the run resolved to.
                skipped.add("assistant(synthetic)")
                continue
            message_id = str(message.get("id") or f"anon-{uuid.uuid4().hex}")
            if message_id not in turns:
                turns[message_id] = TurnBuilder(start=last_ts, opened=True)
                if isinstance(message.get("model"), str):
                    answered.append(message["model"])
            current = turns[message_id]
            message_model = as_str(message.get("model")) or message_model
            content = message.get("content")
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, Mapping):
                    continue
                btype = block.get("type")
                if btype == "text" and isinstance(block.get("text"), str):
                    current.texts.append(block["text"])
                    texts.append(block["text"])
                elif btype == "tool_use":
                    current.calls.append(
                        make_call(block.get("id") or "", str(block.get("name")), block.get("input"))
                    )
                # thinking / redacted_thinking blocks: not text, not calls
        elif kind == "user":
            message = event.get("message")
            content = message.get("content") if isinstance(message, Mapping) else None
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, Mapping) and block.get("type") == "tool_result":
                        results[str(block.get("tool_use_id"))] = text_of(block.get("content"))
        elif kind == "result":
            finals.append(event)
        else:
            skipped.add(kind)
        if current is not None:
            current.touch(ts)
        last_ts = ts if ts is not None else last_ts

    # Claude prints one `result` per query it runs: when a background Agent
    # finishes after the first result, its notification starts another query
    # with a result of its own. Each result's usage and duration_ms cover its
    # own query's main loop only, while modelUsage and total_cost_usd are
    # cumulative over the session, sub-agents included: the last modelUsage is
    # the run's usage, else the queries' usage summed. A run with any failed
    # query failed.
    result = finals[-1] if finals else None
    reported = [u for u in (_usage(r.get("usage")) for r in finals) if u is not None]
    usage = _session_usage((result or {}).get("modelUsage"))
    if usage is None:
        usage = sum(reported, TokenUsage()) if reported else None
    failure = next((r for r in finals if not _succeeded(r)), None)
    infra: InfraError | None = None
    if result is None:
        status, error, infra = "failed", unfinished("a `result` event"), BROKE_OFF
    elif failure is None:
        status, error = "done", None
    else:
        status, error, infra = "failed", _failure(failure), result_infra(failure)
    durations = [d for d in (as_float(r.get("duration_ms")) for r in finals) if d is not None]
    return finish_stream(
        turns.values(),
        status=status,
        usage=usage,
        texts=texts,
        skipped=skipped,
        error=error,
        # One query's duration_ms is the run's; several leave out the waits
        # between them (a background Agent running): the measured wall time
        # stands then.
        durationMs=durations[0] if len(durations) == 1 and len(finals) == 1 else None,
        results=results,
        sessionId=as_str((result or {}).get("session_id")) or session,
        model=answering_model(init_model, answered) or message_model,
        agentVersion=version,
        costUsd=as_float(result.get("total_cost_usd")) if result is not None else None,
        infra=infra,
    )


# `result.api_error_type` (the API's error type, as the body said it) -> error kind.
_API_ERROR_KINDS = {
    "rate_limit_error": "rate_limit",
    "overloaded_error": "overloaded",
    "api_error": "server",
    "authentication_error": "auth",
    "permission_error": "auth",
}


def result_infra(result: Mapping[str, Any]) -> InfraError | None:
    """Why a failed `result` measured nothing, or None when the agent itself failed.

    Claude Code (2.1) ends a run the API failed with `is_error`, the HTTP
    status in `api_error_status`, the API's error type in `api_error_type`
    and `terminal_reason: "api_error"`; a connection that broke off has
    `api_error_status: null`. A 400 (a request too long) is the agent's own.
    A login it could not make says so in `result` alone.
    """
    if not result.get("is_error") and result.get("subtype") == "success":
        return None
    status = result.get("api_error_status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    if status is not None:
        return from_status(status)
    kind = _API_ERROR_KINDS.get(str(result.get("api_error_type")))
    if kind is not None:
        return InfraError(kind)
    if result.get("terminal_reason") == "api_error":
        return InfraError("network")
    found = from_text(str(result.get("result") or ""))
    return found if found is not None and found.kind == "auth" else None


def _succeeded(result: Mapping[str, Any]) -> bool:
    """Whether a `result` event reports success: a failed login says "success" with is_error."""
    return result.get("subtype") == "success" and not result.get("is_error")


def _failure(result: Mapping[str, Any]) -> str:
    """The error a failed `result` event states: its kind, detail and permission denials."""
    detail = result.get("result") or result.get("errors") or ""
    if isinstance(detail, list):
        # Error results list their reasons as plain strings (`errors: [...]`).
        detail = "; ".join(d if isinstance(d, str) else text_of(d) for d in detail)
    # A failed login reports subtype "success" with is_error set.
    kind = result.get("subtype") if result.get("subtype") != "success" else None
    error = f"claude-code {kind or 'error'}: {text_of(detail)[:300]}".rstrip(": ")
    denials = result.get("permission_denials")
    if isinstance(denials, list) and denials:
        error += f" ({len(denials)} permission denial(s))"
    return error


# The `querySource` of the main agent loop's requests in `-p` mode; side
# queries (titles, compaction, the web search tool) have others.
MAIN_QUERY = "sdk"


def session_responses(lines: Iterable[str]) -> int | None:
    """The model responses of one Claude Code session, from its session log.

    An empty response (no text, no call) prints no `assistant` line: Claude
    nudges the model once ("no visible output") and ends if the next answer
    is empty too, so `turnsUsed` came out short (seen with Claude Code
    2.1.332). The log (`$CLAUDE_CONFIG_DIR/projects/<project>/<session
    id>.jsonl`) has one `api-request` entry per request of the main loop;
    a request drew a response when one is logged after it (`assistant`), or
    when the next request extends it (a `base` of it with a non-empty
    `tail`: the response and what followed), or when it is the last and no
    API error follows it (an empty final answer). A request that failed
    (every request answered HTTP 400, an overloaded API) is sent again with
    nothing added (an empty `tail`), or abandoned for a fresh request, or
    ends the run with Claude's own error message: none of those is a
    response, so none is a turn. None when the log holds no main-loop
    request (another version's layout): the stream's count stands.
    """
    requests = 0
    answered = 0
    pending: Mapping[str, Any] | None = None  # the last request, until its fate shows
    responded = failed = False  # what was logged after `pending`
    for line in lines:
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(entry, dict):
            continue
        kind = entry.get("type")
        if kind == "api-request" and entry.get("querySource") == MAIN_QUERY:
            if pending is not None:
                extends = entry.get("base") == pending.get("id") and bool(entry.get("tail"))
                answered += responded or extends
            requests += 1
            pending, responded, failed = entry, False, False
        elif kind == "assistant" and pending is not None and not entry.get("isSidechain"):
            message = entry.get("message")
            model = message.get("model") if isinstance(message, Mapping) else None
            if entry.get("isApiErrorMessage") or model == SYNTHETIC_MODEL:
                failed = True
            else:
                responded = True
    if pending is not None:
        answered += responded or not failed
    return answered if requests else None


class ClaudeCodeAdapter(CliAdapter):
    type = "claude-code"
    default_binary = "claude"
    parse = staticmethod(parse_claude_stream)
    env_needs = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")

    def cli_args(self, request: AgentRequest) -> list[str]:
        args = ["-p", "--output-format", "stream-json", "--verbose", "--model", request.model]
        if request.skip_permissions:
            args.append("--dangerously-skip-permissions")
        else:
            # Headless, nobody can approve: tools needing approval are denied
            # and listed in result.permission_denials.
            args += ["--permission-mode", "default"]
        return args

    def cli_env(self, request: AgentRequest) -> dict[str, str]:
        env = {
            "CLAUDE_CONFIG_DIR": config_home(request, ".claude", "claude-config"),
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        if request.skip_permissions and is_root() and runs_sandboxed(request):
            # As root Claude refuses --dangerously-skip-permissions unless it is
            # told it runs in a sandbox: said only when it does (bwrap, docker).
            env["IS_SANDBOX"] = "1"
        return env

    def amend(self, parsed: ParsedStream, request: AgentRequest) -> ParsedStream:
        if parsed.sessionId is None:
            return parsed
        projects = (
            self.home_of(request, "CLAUDE_CONFIG_DIR", "claude-config", ".claude") / "projects"
        )
        logs = sorted(projects.glob(f"*/{parsed.sessionId}.jsonl"))
        if len(logs) != 1:
            return parsed
        responses = session_responses(log_lines(logs[0]))
        return with_session_counts(parsed, responses, finished=parsed.status == "done")
