"""opencode (`opencode run --format json ...`).

Every line is `{type, timestamp, sessionID, part}`. One `step_start` ..
`step_finish` pair is one model call, so one step is one turn; a `tool_use`
event carries the call and its result together. There is no final event:
usage is the sum of the `step_finish` token counts, and the run's verdict is
the exit code unless an `error` event says otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from capeval.agents.base import AgentRequest
from capeval.agents.cliadapter import CliAdapter, isolated_dir
from capeval.agents.infra import InfraError, from_status, from_text
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
    timestamp_ms,
)
from capeval.core.turns import TokenUsage


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _step_usage(tokens: Any) -> TokenUsage:
    if not isinstance(tokens, Mapping):
        return TokenUsage()
    cache = _mapping(tokens.get("cache"))
    return TokenUsage(
        input=as_int(tokens.get("input")),
        output=as_int(tokens.get("output")),
        cacheRead=as_int(cache.get("read")),
        cacheWrite=as_int(cache.get("write")),
        thinking=as_int(tokens.get("reasoning")),
    )


def _error_text(event: Mapping[str, Any]) -> str:
    err = event.get("error") or event.get("part") or {}
    if isinstance(err, Mapping):
        data = err.get("data")
        if isinstance(data, Mapping) and data.get("message"):
            return str(data["message"])
        return str(err.get("message") or err.get("name") or err)
    return str(err)


def parse_opencode_stream(lines: Iterable[str]) -> ParsedStream:
    """opencode JSON lines -> turns (one per step), summed usage, session."""
    skipped = Skipped("opencode")
    builders: list[TurnBuilder] = []
    texts: list[str] = []
    usage: TokenUsage | None = None
    cost: float | None = None  # summed over steps; None when no step states one
    session = None
    error: str | None = None
    infra: InfraError | None = None
    last_ts: float | None = None

    def current(ts: float | None) -> TurnBuilder:
        if not builders:  # events before any step_start still belong to a turn
            builders.append(TurnBuilder(start=ts))
        return builders[-1]

    for event in json_events(lines, skipped):
        kind = event.get("type")
        ts = timestamp_ms(event.get("timestamp"))
        session = as_str(event.get("sessionID")) or session
        part = _mapping(event.get("part"))
        if kind == "step_start":
            # Timed from the previous event (the last step's finish, when this
            # call's request went out), not from step_start's own stamp: opencode
            # prints step_start late, with the step's first output, sometimes
            # only after the step's tools have already run.
            builders.append(TurnBuilder(start=last_ts if last_ts is not None else ts, opened=True))
        elif kind == "text":
            text = part.get("text")
            if isinstance(text, str):
                current(ts).texts.append(text)
                texts.append(text)
        elif kind == "reasoning":
            pass  # counted in tokens.reasoning; not assistant text
        elif kind == "tool_use":
            state = _mapping(part.get("state"))
            output = state.get("output") if state.get("status") != "error" else state.get("error")
            current(ts).calls.append(
                make_call(
                    str(part.get("callID") or part.get("id") or ""),
                    str(part.get("tool")),
                    state.get("input"),
                    output,
                )
            )
        elif kind == "step_finish":
            usage = (usage or TokenUsage()) + _step_usage(part.get("tokens"))
            step_cost = as_float(part.get("cost"))
            if step_cost is not None:
                cost = (cost or 0.0) + step_cost
        elif kind == "error":
            error = f"opencode: {_error_text(event)}"
            infra = _error_infra(event)
        else:
            skipped.add(kind)
        if builders:
            builders[-1].touch(ts)
        last_ts = ts if ts is not None else last_ts

    status = "failed" if error is not None else None  # else: the exit code decides
    return finish_stream(
        builders,
        status=status,
        usage=usage,
        texts=texts,
        skipped=skipped,
        error=error,
        sessionId=session,
        costUsd=cost,
        infra=infra,
    )


def _error_infra(event: Mapping[str, Any]) -> InfraError | None:
    """What an `error` event says of the provider (opencode 1.18): an `APIError` carries the
    HTTP status in `data.statusCode`; other errors (a refused login, a connection) say it
    in their name and message."""
    err = _mapping(event.get("error"))
    data = _mapping(err.get("data"))
    status = data.get("statusCode")
    if isinstance(status, int) and not isinstance(status, bool):
        return from_status(status)
    if "auth" in str(err.get("name", "")).lower():
        return InfraError("auth")
    return from_text(_error_text(event))


# The permissions opencode knows that guard changes and the outside world.
ASKED_TOOLS = ("edit", "bash", "webfetch")


class OpencodeAdapter(CliAdapter):
    type = "opencode"
    default_binary = "opencode"
    parse = staticmethod(parse_opencode_stream)
    env_needs = (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GOOGLE_GENERATIVE_AI_API_KEY",
        "OPENROUTER_API_KEY",
        "XAI_API_KEY",
        "OPENCODE_CONFIG",
        "OPENCODE_CONFIG_CONTENT",
    )

    def cli_args(self, request: AgentRequest) -> list[str]:
        args = ["run", "--format", "json", "-m", f"{request.provider}/{request.model}"]
        if request.skip_permissions:
            args.append("--dangerously-skip-permissions")
        return args

    def cli_env(self, request: AgentRequest) -> dict[str, str]:
        # opencode keeps sessions, its database and a git snapshot of every
        # project it worked in under XDG_DATA_HOME: each repeat would add to
        # the user's own history, and repeats of one case (one project to
        # opencode: their fixture commits are identical) would share one
        # snapshot repository and database while running side by side. Its
        # config (providers) and cache (provider packages) stay the user's;
        # credentials come from the environment, as for Claude Code and Codex.
        env = {
            "XDG_DATA_HOME": isolated_dir(request, "opencode-data"),
            "XDG_STATE_HOME": isolated_dir(request, "opencode-state"),
        }
        if not request.skip_permissions:
            # opencode's own default allows every tool, so leaving out
            # --dangerously-skip-permissions changes nothing: `--ask-permissions`
            # must ask, which headless means the calls are rejected.
            env["OPENCODE_PERMISSION"] = json.dumps(dict.fromkeys(ASKED_TOOLS, "ask"))
        return env


def scripted_env(base_url: str, home: Path, api_key: str) -> dict[str, str]:
    """Env that aims opencode's `anthropic` provider at `base_url` (e.g. the scripted model server).

    opencode takes extra configuration as JSON in `OPENCODE_CONFIG_CONTENT`;
    its config and cache directories go under `home` (its data and state are
    per repeat anyway), so the user's own opencode setup (providers, plugins)
    stays out of a check, and the model catalogue is not fetched.
    """
    config = {
        "provider": {"anthropic": {"options": {"baseURL": f"{base_url}/v1", "apiKey": api_key}}}
    }
    # Data and state are the adapter's own, per repeat (see OpencodeAdapter.cli_env).
    dirs = {f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in ("CONFIG", "CACHE")}
    return {
        **dirs,
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "OPENCODE_DISABLE_MODELS_FETCH": "true",
        "OPENCODE_DISABLE_AUTOUPDATE": "true",
    }
