"""Gemini CLI (`gemini -p ... --output-format stream-json`).

Gemini has no turn events. A turn is an assistant message with the tool
calls that follow it: assistant text after the current turn's calls opens a
new turn, and so does a tool call once the current turn's calls have all
returned (the model can only have asked for it in a later response). Calls
issued back to back before any result are one response's parallel calls.
Results are joined to calls on `tool_id`. Assistant text arrives in chunks
(`delta: true`) that are joined into one block.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from capeval.agents.base import AgentRequest
from capeval.agents.cliadapter import CliAdapter
from capeval.agents.streams import (
    ParsedStream,
    Skipped,
    TurnBuilder,
    as_float,
    as_int,
    as_str,
    finish_stream,
    json_events,
    make_call,
    text_of,
    timestamp_ms,
    uncached_input,
    unfinished,
)
from capeval.turns import TokenUsage


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

    for event in json_events(lines, "gemini"):
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
            thinking=as_int(stats.get("thoughts")),
        )
        duration = as_float(stats.get("duration_ms"))
        model = _answering_model(model, stats.get("models"))
    if result is None:
        status = "failed"
        error = "gemini: " + (errors[-1] if errors else unfinished("a `result` event"))
    elif result.get("status") == "success":
        status, error = "done", None
    else:
        status = "failed"
        detail = result.get("error")
        if isinstance(detail, Mapping):
            detail = detail.get("message")
        error = f"gemini: {detail or (errors[-1] if errors else result.get('status'))}"
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
    )


class GeminiAdapter(CliAdapter):
    type = "gemini"
    default_binary = "gemini"
    parse = staticmethod(parse_gemini_stream)

    def cli_args(self, request: AgentRequest) -> list[str]:
        mode = "yolo" if request.skip_permissions else "default"
        return ["-m", request.model, "--output-format", "stream-json", "--approval-mode", mode]

    def cli_env(self, request: AgentRequest) -> dict[str, str]:
        # Every repeat's workdir is a new directory, so Gemini CLI's folder
        # trust would never know it: headless, it then drops --approval-mode
        # yolo to "default" or exits. The workdir is capeval's throwaway copy
        # of the fixture, as trusted as the fixture itself.
        return {"GEMINI_CLI_TRUST_WORKSPACE": "true"}

    def prompt_args(self, request: AgentRequest) -> list[str]:
        # `--prompt=<text>` keeps a prompt that starts with `-` a value.
        return [f"--prompt={request.prompt}"]


def scripted_home(base_url: str, home: Path, api_key: str) -> dict[str, str]:
    """Env that aims Gemini CLI at `base_url` (e.g. the scripted model server), from a scratch home.

    The endpoint is `GOOGLE_GEMINI_BASE_URL`; the API-key auth method lives
    in `~/.gemini/settings.json`, so `home` gets one saying "API key" (without
    it a headless run exits 41). Folder trust stays on, as on a user's
    machine: the adapter itself trusts each workdir. Writes that file.
    """
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "telemetry": {"enabled": False},
        "privacy": {"usageStatisticsEnabled": False},
    }
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return {"HOME": str(home), "GEMINI_API_KEY": api_key, "GOOGLE_GEMINI_BASE_URL": base_url}


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
