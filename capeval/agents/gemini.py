"""Gemini CLI (`gemini -p ... --output-format stream-json`).

Gemini has no turn events. A turn is an assistant message with the tool
calls that follow it: assistant text after the current turn's calls opens a
new turn, and so does a tool call once the current turn's calls have all
returned (the model can only have asked for it in a later response). Calls
issued back to back before any result are one response's parallel calls.
Results are joined to calls on `tool_id`. Assistant text arrives in chunks
(`delta: true`) that are joined into one block.

A response with no text and no call (an empty answer, or thoughts only)
leaves no event, so `turnsUsed` is read from Gemini CLI's own chat log when
there is one (`chat_responses`). The stream's stats carry no thought count
either (Gemini CLI 0.61: `total_tokens`, `input_tokens`, `output_tokens`,
`cached`, `input`, `duration_ms`, `tool_calls`, `models`), so `thinking` is
read from the same log's per-response `tokens.thoughts` (`chat_thoughts`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from capeval.agents.base import AgentRequest
from capeval.agents.cliadapter import CliAdapter, isolated_dir
from capeval.agents.infra import InfraError, from_text, status_in
from capeval.agents.streams import (
    BROKE_OFF,
    ParsedStream,
    Skipped,
    TurnBuilder,
    as_float,
    as_int,
    as_str,
    finish_stream,
    json_events,
    log_lines,
    make_call,
    text_of,
    timestamp_ms,
    uncached_input,
    unfinished,
    with_session_counts,
)
from capeval.core.turns import TokenUsage

# Gemini CLI's exit code for a FatalAuthenticationError (0.61).
AUTH_EXIT_CODE = 41


def parse_gemini_stream(lines: Iterable[str]) -> ParsedStream:
    """Gemini CLI stream-json lines -> turns, usage, verdict, session and model."""
    skipped = Skipped("gemini")
    builders: list[TurnBuilder] = [TurnBuilder()]
    pending: set[str] = set()  # tool ids of the current turn without a result yet
    results: dict[str, str] = {}
    texts: list[str] = []
    errors: list[str] = []
    session = model = None
    result: Mapping | None = None
    last_ts: float | None = None
    text_open = False  # the current turn's last block is assistant text (more chunks may follow)

    for event in json_events(lines, skipped):
        kind = event.get("type")
        ts = timestamp_ms(event.get("timestamp"))
        current = builders[-1]
        if kind == "init":
            session = as_str(event.get("session_id")) or session
            model = as_str(event.get("model")) or model
        elif kind == "message":
            if event.get("role") != "assistant":
                pass  # the user's prompt echoed back
            elif isinstance(event.get("content"), str):
                if current.calls:
                    current = TurnBuilder(start=last_ts)
                    builders.append(current)
                    text_open = False
                if text_open and current.texts:
                    current.texts[-1] += event["content"]
                else:
                    current.texts.append(event["content"])
                    text_open = True
                texts.append(event["content"])
        elif kind == "tool_use":
            if current.calls and not pending:
                current = TurnBuilder(start=last_ts)
                builders.append(current)
            tool_id = str(event.get("tool_id") or "")
            current.calls.append(
                make_call(tool_id, str(event.get("tool_name")), event.get("parameters"))
            )
            pending.add(tool_id)
            text_open = False
        elif kind == "tool_result":
            tool_id = str(event.get("tool_id") or "")
            pending.discard(tool_id)
            output = event.get("output") if event.get("status") == "success" else event.get("error")
            results[tool_id] = text_of(output)
        elif kind == "error":
            message = event.get("message")
            errors.append(str(message if message is not None else event))
        elif kind == "result":
            result = event
        else:
            skipped.add(kind)
        current.touch(ts)
        last_ts = ts if ts is not None else last_ts

    usage = None
    duration = None
    if result is not None and isinstance(result.get("stats"), Mapping):
        stats = result["stats"]
        # `input` is the uncached prompt; older releases only give the total.
        uncached = stats.get("input")
        usage = TokenUsage(
            input=as_int(uncached)
            if isinstance(uncached, int)
            else uncached_input(stats.get("input_tokens"), stats.get("cached")),
            output=as_int(stats.get("output_tokens")),
            cacheRead=as_int(stats.get("cached")),
            # Not in 0.61's stats: the adapter reads thoughts from the chat log.
            thinking=as_int(stats.get("thoughts")),
        )
        duration = as_float(stats.get("duration_ms"))
        if duration is not None and duration <= 0:
            # Gemini CLI's error path writes its stats with a duration of 0:
            # unknown, so the run's measured wall time stands instead.
            duration = None
        model = _answering_model(model, stats.get("models"))
    infra: InfraError | None = None
    if result is None:
        status = "failed"
        error = "gemini: " + (errors[-1] if errors else unfinished("a `result` event"))
        infra = (from_text(errors[-1]) if errors else None) or BROKE_OFF
    elif result.get("status") == "success":
        status, error = "done", None
    else:
        status = "failed"
        detail = result.get("error")
        if isinstance(detail, Mapping):
            detail = detail.get("message")
        error = f"gemini: {detail or (errors[-1] if errors else result.get('status'))}"
        # The API's error body, quoted in the message ("[API Error: {...code: 429...}]"),
        # or the event before the result ("Model stream ended without a finish reason").
        infra = from_text(str(detail or "")) or (from_text(errors[-1]) if errors else None)
    return finish_stream(
        builders,
        status=status,
        usage=usage,
        texts=texts,
        skipped=skipped,
        error=error,
        durationMs=duration,
        results=results,
        sessionId=session,
        model=model,
        infra=infra,
    )


def chat_messages(lines: Iterable[str], session_id: str) -> dict[str, Mapping] | None:
    """The `gemini` messages of one Gemini CLI session's chat log, by id: each one's last record.

    The log (`$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-*.jsonl`)
    opens with the session's header, then appends every message, and appends
    a message again under the same `id` as it changes (its calls return).
    None when the log is another session's.
    """
    messages: dict[str, Mapping] = {}
    header = True
    for line in lines:
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(entry, dict):
            continue
        if header:
            header = False
            if entry.get("sessionId") != session_id:
                return None
        elif entry.get("type") == "gemini" and isinstance(entry.get("id"), str):
            messages[entry["id"]] = entry
    return messages


def chat_responses(lines: Iterable[str], session_id: str) -> int | None:
    """The model responses of one Gemini CLI session, from its chat log.

    An empty response (no text, no call: it ends the run) or one of thoughts
    only prints nothing in the stream, so `turnsUsed` came out short (seen
    with Gemini CLI 0.61). The chat log records every response as a `gemini`
    message (`chat_messages`); a failed attempt that was retried records
    none. None when the log is another session's or holds no such message
    (another version's layout): the stream's count stands.
    """
    messages = chat_messages(lines, session_id)
    return len(messages) if messages else None


def chat_thoughts(messages: Mapping[str, Mapping]) -> int | None:
    """The thinking tokens of a session's responses (`chat_messages`), from their `tokens`.

    Gemini CLI 0.61 records each response's usage on its message as
    `tokens: {input, output, cached, thoughts, tool, total}` (`thoughts` is
    the API's `thoughtsTokenCount`). None when no message records a thought
    count (another version's layout): the stream's value stands.
    """
    counts = [
        tokens["thoughts"]
        for message in messages.values()
        if isinstance(tokens := message.get("tokens"), Mapping)
        and isinstance(tokens.get("thoughts"), int)
    ]
    return sum(counts) if counts else None


def with_chat_thinking(parsed: ParsedStream, thoughts: int | None) -> ParsedStream:
    """The stream's usage with the chat log's thinking tokens, when the stream has none.

    Only `thinking` is taken from the log; input, output and cache reads stay
    the stream's. A stream without usage (no `result`) stays without.
    """
    usage = parsed.summary.tokenUsage
    if not thoughts or usage is None or usage.thinking:
        return parsed
    summary = replace(parsed.summary, tokenUsage=replace(usage, thinking=thoughts))
    return replace(parsed, summary=summary)


class GeminiAdapter(CliAdapter):
    type = "gemini"
    default_binary = "gemini"
    parse = staticmethod(parse_gemini_stream)
    env_needs = (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_GEMINI_BASE_URL",
    )

    def cli_args(self, request: AgentRequest) -> list[str]:
        mode = "yolo" if request.skip_permissions else "default"
        return ["-m", request.model, "--output-format", "stream-json", "--approval-mode", mode]

    def cli_env(self, request: AgentRequest) -> dict[str, str]:
        # Every repeat's workdir is a new directory, so Gemini CLI's folder
        # trust would never know it: headless, it then drops --approval-mode
        # yolo to "default" or exits. The workdir is capeval's throwaway copy
        # of the fixture, as trusted as the fixture itself.
        env = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
        copied = _copied_home(request)
        if copied is not None and "GEMINI_CLI_HOME" not in self.config.env:
            # The entry's home_dirs brought the user's ~/.gemini into the repeat's home.
            env["GEMINI_CLI_HOME"] = str(copied)
        elif "GEMINI_CLI_HOME" not in self.config.env:  # the agent's own env names its home
            outer = {**os.environ, **request.env, **self.config.env}
            home = Path(isolated_dir(request, "gemini-home"))
            seed_home(home, auth_type(self.config.env, outer))
            env["GEMINI_CLI_HOME"] = str(home)
        return env

    def exit_infra(self, exit_code: int | None, stderr: str) -> InfraError | None:
        # Gemini CLI exits 41 when it cannot authenticate (FatalAuthenticationError).
        if exit_code == AUTH_EXIT_CODE:
            return InfraError("auth", status_in(stderr))
        return super().exit_infra(exit_code, stderr)

    def prompt_args(self, request: AgentRequest) -> list[str]:
        # `--prompt=<text>` keeps a prompt that starts with `-` a value.
        return [f"--prompt={request.prompt}"]

    def amend(self, parsed: ParsedStream, request: AgentRequest) -> ParsedStream:
        session = parsed.sessionId
        if session is None:
            return parsed
        given = {**request.env, **self.config.env}.get("GEMINI_CLI_HOME")
        home = Path(given) if given else _copied_home(request)
        home = home or request.capture_dir / "gemini-home"
        chats = home / ".gemini" / "tmp"
        logs = [
            messages
            for log in chats.glob(f"*/chats/session-*-{session[:8]}.jsonl")
            if (messages := chat_messages(log_lines(log), session))
        ]
        if len(logs) != 1:
            return parsed
        (messages,) = logs
        counted = with_session_counts(parsed, len(messages), finished=parsed.status == "done")
        return with_chat_thinking(counted, chat_thoughts(messages))


def _copied_home(request: AgentRequest) -> Path | None:
    """The repeat's home when `home_dirs` copied the user's ~/.gemini into it."""
    home = request.home
    return home if home is not None and (home / ".gemini").is_dir() else None


# Gemini CLI keeps its settings, chat history, project registry and temp files
# under `$GEMINI_CLI_HOME/.gemini` (default: the user's home). Each repeat gets
# a scratch home in its capture directory, as Claude Code and Codex get a
# config directory, so no run adds to the user's history. Headless Gemini
# needs one thing from there: which auth method to use (else it exits 41).
_SELECTED = re.compile(r'"(?:selectedType|selectedAuthType)"\s*:\s*"([^"]+)"')


def auth_type(agent_env: Mapping[str, str], env: Mapping[str, str]) -> str | None:
    """The auth method a run's scratch Gemini home selects, or None to leave it to Gemini.

    First what the agent's own `env` (capeval.toml) provides a key for, then
    the user's choice in their Gemini settings, then what the rest of the
    environment provides a key for (`env`: the agent's whole environment).
    """
    return auth_from_env(agent_env) or _selected_in(_user_settings(env)) or auth_from_env(env)


def auth_from_env(env: Mapping[str, str]) -> str | None:
    """The auth method the variables in `env` make usable, as Gemini CLI names it.

    Gemini's own fallback, except that GOOGLE_API_KEY alone (Vertex AI
    express mode) also counts: only Vertex accepts that key.
    """
    if env.get("GOOGLE_GENAI_USE_GCA") == "true":
        return "oauth-personal"
    if env.get("GOOGLE_GENAI_USE_VERTEXAI") == "true":
        return "vertex-ai"
    if env.get("GEMINI_API_KEY"):
        return "gemini-api-key"
    if env.get("GOOGLE_API_KEY") or (
        env.get("GOOGLE_CLOUD_PROJECT") and env.get("GOOGLE_CLOUD_LOCATION")
    ):
        return "vertex-ai"
    if env.get("CLOUD_SHELL") == "true" or env.get("GEMINI_CLI_USE_COMPUTE_ADC") == "true":
        return "compute-default-credentials"
    return None


def _user_settings(env: Mapping[str, str]) -> Path | None:
    home = env.get("GEMINI_CLI_HOME") or env.get("HOME")
    return Path(home) / ".gemini" / "settings.json" if home else None


def _selected_in(settings: Path | None) -> str | None:
    """The auth method a Gemini settings file selects, or None (no file, none chosen).

    Read with a pattern, not a JSON parser: the file may hold comments, and
    older releases kept the choice at the top level as `selectedAuthType`.
    """
    try:
        text = settings.read_text(encoding="utf-8") if settings is not None else ""
    except (OSError, UnicodeDecodeError):
        return None
    match = _SELECTED.search(text)
    return match.group(1) if match else None


def seed_home(home: Path, auth: str | None) -> None:
    """Write the scratch home's settings: the auth method, and no usage reporting.

    Nothing else of the user's settings (MCP servers, extensions, history)
    reaches a run, as nothing of their Claude Code config does.
    """
    settings: dict[str, Any] = {
        "telemetry": {"enabled": False},
        "privacy": {"usageStatisticsEnabled": False},
    }
    if auth is not None:
        settings["security"] = {"auth": {"selectedType": auth}}
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")


def scripted_env(base_url: str, api_key: str) -> dict[str, str]:
    """Env that aims Gemini CLI at `base_url` (e.g. the scripted model server).

    The endpoint is `GOOGLE_GEMINI_BASE_URL`; the API key in the agent's own
    env makes the adapter's scratch home select API-key auth (Gemini's own
    fallback would pick its "gateway" method for a custom endpoint). Folder
    trust stays on, as on a user's machine: the adapter trusts each workdir.
    """
    # An agent env choosing Vertex or a Google login would override the key.
    off = {"GOOGLE_GENAI_USE_VERTEXAI": "", "GOOGLE_GENAI_USE_GCA": ""}
    return {**off, "GEMINI_API_KEY": api_key, "GOOGLE_GEMINI_BASE_URL": base_url}


def _answering_model(announced: str | None, models: Any) -> str | None:
    """The model the run resolved to, from `result.stats.models`.

    `init` only repeats `-m`; the stats are keyed by the models really called.
    Gemini CLI also calls small models for its own checks (next speaker, loop
    detection), so another key beside the announced model proves nothing. But
    when the announced model was never called (a quota or overload fallback),
    the model with the most tokens is the one that answered the turns.
    """
    if not isinstance(models, Mapping) or not models or announced in models:
        return announced
    sizes = {
        str(name): as_int(stats.get("total_tokens")) if isinstance(stats, Mapping) else 0
        for name, stats in models.items()
    }
    return max(sizes, key=lambda name: sizes[name])
