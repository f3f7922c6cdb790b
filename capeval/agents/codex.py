"""OpenAI Codex CLI (`codex exec --json ...`).

Codex reports items, not model responses, so turns are reconstructed. One
model response is: any reasoning/message items, then the tool calls it
requested, which Codex runs concurrently when there are several. Hence:

- a tool item that starts while no tool of the current turn is still running,
  after that turn already made a call, opens a new turn (its response could
  only be requested once the earlier results were in);
- a tool item that starts while another is in flight joins its turn
  (parallel calls of one response);
- a message or reasoning item after the current turn's calls opens a new turn.

Some responses leave no item at all (see `parse_rollout`), so a run's turns
are read from Codex's own session log when it has one; the reconstruction
here serves a stream read alone (a saved stream, a log of another layout, a
run cut off before its log caught up). The plan tool is the exception: Codex shows all of a
run's `update_plan` calls as one `todo_list` item, started by the first,
updated by each later one and completed only when the whole run ends. Each
start or update is taken as one call that returned at once; were the item
left in flight until the run ends, every later call would join its turn.
Sub-agent tools (`collab_tool_call` items) are calls named by their `tool`
(`spawn_agent` is of kind `task`). Codex's `exec` run is one `turn.started` /
`turn.completed` pair (a *user* turn): its usage is summed, it is not a
model turn. No duration is reported: the run's is wall time, and each turn
is timed by when its events' lines reached capeval (without that, as when a
saved stream is re-read, turn durations are unknown, not zero).

`input` token usage is the uncached part of Codex's `input_tokens` (which
includes `cached_input_tokens`, given as `cacheRead`), the meaning Claude Code
and opencode use; `thinking` is `reasoning_output_tokens`.
"""

from __future__ import annotations

import itertools
import json
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from capeval.agents.base import AgentRequest
from capeval.agents.cliadapter import CliAdapter, config_home
from capeval.agents.infra import InfraError, from_text
from capeval.agents.streams import (
    BROKE_OFF,
    ParsedStream,
    Skipped,
    TurnBuilder,
    as_int,
    as_str,
    build_summary,
    finish_stream,
    log_lines,
    make_call,
    timed_events,
    timestamp_ms,
    uncached_input,
    unfinished,
    with_session_counts,
)
from capeval.core.turns import TokenUsage, ToolCall

TEXT_ITEMS = ("agent_message", "reasoning")
PLAN_ITEM = "todo_list"
TOOL_ITEMS = (
    "command_execution",
    "file_change",
    "mcp_tool_call",
    "web_search",
    "collab_tool_call",
    PLAN_ITEM,
)


def _tool_call(item: Mapping[str, Any]) -> ToolCall:
    """A Codex item as a tool call named for the tool the model used."""
    item_id = str(item.get("id") or "")
    itype = item.get("type")
    if itype == "command_execution":
        return make_call(
            item_id,
            "command_execution",
            {"command": item.get("command")},
            item.get("aggregated_output"),
        )
    if itype == "file_change":
        # The stream names the files a patch touched, not the patch: without the
        # item id, two different edits of one file would share a signature and
        # count toward repeatedSearchCount (a loop bait) as a repeated call.
        arguments = {"changes": item.get("changes") or [], "item": item_id}
        return make_call(item_id, "apply_patch", arguments, item.get("status"))
    if itype == "mcp_tool_call":
        name = f"mcp__{item.get('server')}__{item.get('tool')}"
        return make_call(
            item_id, name, item.get("arguments"), item.get("result") or item.get("error")
        )
    if itype == "web_search":
        return make_call(item_id, "web_search", {"query": item.get("query")})
    if itype == "collab_tool_call":
        arguments = {k: item.get(k) for k in ("prompt", "receiver_thread_ids")}
        return make_call(item_id, str(item.get("tool")), arguments, item.get("status"))
    if itype == PLAN_ITEM:
        return make_call(item_id, "update_plan", {"items": item.get("items")})
    return make_call(
        item_id, str(itype), {k: v for k, v in item.items() if k not in ("id", "type")}
    )


def parse_codex_stream(
    lines: Iterable[str], arrivals: Iterable[float | None] | None = None
) -> ParsedStream:
    """Codex `exec --json` lines -> turns, usage, verdict, session.

    Codex stamps no times on its events; `arrivals` (epoch ms per line, as the
    adapter read them) time the turns. Without them turn durations are unknown.
    """
    timed = zip(lines, arrivals if arrivals is not None else itertools.repeat(None), strict=False)
    skipped = Skipped("codex")
    builders: list[TurnBuilder] = [TurnBuilder()]
    placed: dict[str, tuple[TurnBuilder, int]] = {}  # tool item id -> (turn, index in calls)
    in_flight: set[str] = set()
    anonymous: list[str] = []  # ids given to running tool items that came without one
    numbers = itertools.count()
    usage: TokenUsage | None = None
    texts: list[str] = []
    warnings: list[str] = []
    session = None
    failed: str | None = None
    completed = False
    last_ts: float | None = None  # arrival of the previous event

    def place(item: Mapping[str, Any]) -> None:
        item_id = str(item.get("id") or "")
        if item_id in placed:
            return
        current = builders[-1]
        if current.calls and not (in_flight & {c.id for c in current.calls}):
            current = TurnBuilder(start=last_ts)
            builders.append(current)
        current.calls.append(_tool_call(item))
        placed[item_id] = (current, len(current.calls) - 1)

    for event, ts in timed_events(timed, skipped):
        kind = event.get("type")
        if kind == "thread.started":
            session = as_str(event.get("thread_id")) or session
        elif kind == "turn.started":
            pass
        elif kind == "turn.completed":
            completed = True
            raw = event.get("usage")
            if isinstance(raw, Mapping):
                usage = (usage or TokenUsage()) + TokenUsage(
                    input=uncached_input(raw.get("input_tokens"), raw.get("cached_input_tokens")),
                    output=as_int(raw.get("output_tokens")),
                    cacheRead=as_int(raw.get("cached_input_tokens")),
                    cacheWrite=as_int(raw.get("cache_write_input_tokens")),
                    thinking=as_int(raw.get("reasoning_output_tokens")),
                )
        elif kind == "turn.failed":
            err = event.get("error")
            failed = str(err.get("message") if isinstance(err, Mapping) else err)
        elif kind == "error":
            warnings.append(str(event.get("message")))
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if not isinstance(item, Mapping):
                skipped.add(f"{kind}(no item)")
                continue
            itype = item.get("type")
            if itype in TOOL_ITEMS and itype != PLAN_ITEM and not item.get("id"):
                # Without ids every such item would be one call, each replacing
                # the last: pair an id-less item's events first in, first out.
                if kind == "item.started" or not anonymous:
                    item = {**item, "id": f"anonymous-{next(numbers)}"}
                    if kind != "item.completed":
                        anonymous.append(item["id"])
                else:
                    item = {
                        **item,
                        "id": anonymous.pop(0) if kind == "item.completed" else anonymous[0],
                    }
            item_id = str(item.get("id") or "")
            if itype == PLAN_ITEM:
                # One update_plan call per start or update, never in flight; the
                # completion at the run's end is no call (see the module docstring).
                if kind != "item.completed":
                    place({**item, "id": f"{PLAN_ITEM}-{next(numbers)}"})
            elif itype in TOOL_ITEMS:
                place(item)
                if kind == "item.completed":
                    in_flight.discard(item_id)
                    turn, index = placed[item_id]
                    turn.calls[index] = _tool_call(item)
                else:
                    in_flight.add(item_id)
            elif itype in TEXT_ITEMS:
                if kind == "item.completed":
                    if builders[-1].calls:
                        builders.append(TurnBuilder(start=last_ts))
                    if itype == "agent_message" and isinstance(item.get("text"), str):
                        builders[-1].texts.append(item["text"])
                        texts.append(item["text"])
            elif itype == "error":
                # e.g. "Model metadata for `x` not found": a warning, not a turn.
                if kind == "item.completed":
                    warnings.append(str(item.get("message")))
            else:
                skipped.add(f"item/{itype}")
        else:
            skipped.add(kind)
        if kind in ("item.started", "item.updated", "item.completed"):
            builders[-1].touch(ts)
        last_ts = ts if ts is not None else last_ts

    infra: InfraError | None = None
    if failed is not None:
        status, error = "failed", f"codex turn failed: {failed}"
        # Codex words the provider's failure in the message (docs/agents.md#outcome-signals).
        infra = from_text(failed)
    elif completed:
        status, error = "done", None
    else:
        status = "failed"
        error = "codex: " + (warnings[-1] if warnings else unfinished("`turn.completed`"))
        infra = (from_text(warnings[-1]) if warnings else None) or BROKE_OFF
    # Codex names neither the model nor the provider in its stream.
    return finish_stream(
        builders,
        status=status,
        usage=usage,
        texts=texts,
        skipped=skipped,
        error=error,
        sessionId=session,
        infra=infra,
    )


@dataclass
class Rollout:
    """The model responses Codex's session log records: turns, and tool results by call id."""

    builders: list[TurnBuilder]
    results: dict[str, Any]

    @property
    def counts(self) -> tuple[int, int]:
        return len(self.builders), sum(len(b.calls) for b in self.builders)


def parse_rollout(lines: Iterable[str]) -> Rollout | None:
    """Codex's session log -> one turn per model response, with every call it made.

    The `exec --json` stream shows only some tools as items: a response that
    only polled a running command (`write_stdin`), viewed an image or
    searched its tools leaves no trace there (seen with Codex 0.171), so
    `turnsUsed` came out short (a turn budget could pass a run that overran
    it) and behaviors missed those calls; and a patch and a command asked for
    together run one after the other, looking like two responses. The log
    (`$CODEX_HOME/sessions/.../rollout-*-<thread id>.jsonl`) records each
    response's output items followed by one usage entry, then its calls'
    outputs. A response is what came between two usage entries; an output
    joins the response of its call. None when the log holds no usage entry
    (another version's layout): the stream stands.
    """
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(entry, dict) and isinstance(entry.get("payload"), Mapping):
            entries.append(entry)
    # Older logs mark a response by a `token_count` event with usage instead.
    records = any(e.get("type") == "token_usage_record" for e in entries)
    builders: list[TurnBuilder] = []
    current: TurnBuilder | None = None
    owner: dict[str, TurnBuilder] = {}
    results: dict[str, Any] = {}
    last_ts: float | None = None
    for entry in entries:
        kind, payload = entry.get("type"), entry["payload"]
        ts = timestamp_ms(entry.get("timestamp"))
        ptype = str(payload.get("type", ""))
        if _is_boundary(kind, payload, records):
            if current is None:  # an empty response: no text, no call
                current = TurnBuilder(start=last_ts)
                builders.append(current)
            current.opened = True
            current.touch(ts)
            current = None
        elif kind == "response_item" and ptype.endswith("_output"):
            call_id = str(payload.get("call_id") or "")
            if call_id in owner:
                results[call_id] = payload.get("output")
                owner[call_id].touch(ts)
        elif kind == "response_item" and (
            ptype.endswith("_call") or ptype == "reasoning" or _is_answer(payload)
        ):
            if current is None:
                current = TurnBuilder(start=last_ts)
                builders.append(current)
            current.touch(ts)
            if ptype.endswith("_call"):
                call = _rollout_call(payload)
                current.calls.append(call)
                owner[call.id] = current
            elif ptype == "message":
                current.texts += [
                    c["text"]
                    for c in payload.get("content") or ()
                    if isinstance(c, Mapping) and isinstance(c.get("text"), str)
                ]
        last_ts = ts if ts is not None else last_ts
    if not any(b.opened for b in builders):
        return None
    return Rollout(builders, results)


def _is_boundary(kind: Any, payload: Mapping[str, Any], records: bool) -> bool:
    if records:
        return kind == "token_usage_record"
    if kind == "event_msg" and payload.get("type") == "token_count":
        info = payload.get("info")
        return isinstance(info, Mapping) and bool(info.get("last_token_usage"))
    return False


def _is_answer(payload: Mapping[str, Any]) -> bool:
    return payload.get("type") == "message" and payload.get("role") == "assistant"


def _rollout_call(payload: Mapping[str, Any]) -> ToolCall:
    """A logged call under the names the stream gives the same tools, so both read alike."""
    ptype = str(payload.get("type"))
    call_id = str(payload.get("call_id") or payload.get("id") or "")
    name = str(payload.get("name") or ptype.removesuffix("_call"))
    raw = payload.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):
        arguments = raw
    if ptype == "function_call" and name == "exec_command" and isinstance(arguments, Mapping):
        return make_call(call_id, "command_execution", {"command": arguments.get("cmd")})
    if ptype == "local_shell_call":
        action = payload.get("action")
        command = action.get("command") if isinstance(action, Mapping) else None
        if isinstance(command, list):
            command = shlex.join(str(part) for part in command)
        return make_call(call_id, "command_execution", {"command": command})
    if ptype == "custom_tool_call":
        return make_call(call_id, name, {"input": payload.get("input")})
    if ptype == "web_search_call":
        action = payload.get("action")
        query = action.get("query") if isinstance(action, Mapping) else None
        return make_call(call_id, "web_search", {"query": query})
    namespace = payload.get("namespace")
    if isinstance(namespace, str) and namespace:
        name = f"{namespace}__{name}"  # an MCP tool found by search: mcp__<server>__<tool>
    if arguments is None:
        arguments = {k: v for k, v in payload.items() if k not in ("type", "id", "call_id")}
    return make_call(call_id, name, arguments)


def with_rollout(parsed: ParsedStream, rollout: Rollout | None, *, finished: bool) -> ParsedStream:
    """The run as Codex's log has it: its turns when the run finished, else the larger counts.

    A run that did not finish (a timeout, a failed turn) may have shown a
    response its log never got to: then the stream's turns stay, with the
    larger of the two counts.
    """
    if rollout is None:
        return parsed
    if not finished:
        responses, calls = rollout.counts
        return with_session_counts(parsed, responses, calls, finished=False)
    summary = parsed.summary
    rebuilt = build_summary(
        rollout.builders,
        status=summary.status,
        usage=summary.tokenUsage,
        durationMs=summary.durationMs,
        error=summary.error,
        results=rollout.results,
    )
    # The log holds every response and call: an event the stream lost (a line
    # cut short) is no longer missing from the turns.
    return replace(parsed, summary=rebuilt, unparsed=())


def provider_args(provider: str, base_url: str, env_key: str) -> list[str]:
    """`-c` overrides that define a Responses API provider (e.g. the scripted model server).

    Codex has no flag for a base URL; a custom `model_providers` entry, chosen
    with `model_provider`, is how a run is pointed somewhere else.
    """
    keys = {"name": provider, "base_url": base_url, "wire_api": "responses", "env_key": env_key}
    args: list[str] = []
    for key, value in keys.items():
        args += ["-c", f'model_providers.{provider}.{key}="{value}"']
    return args


class CodexAdapter(CliAdapter):
    type = "codex"
    default_binary = "codex"
    parse = staticmethod(parse_codex_stream)
    env_needs = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY")

    @classmethod
    def parse_timed(cls, lines: list[tuple[str, float | None]]) -> ParsedStream:
        # Whole milliseconds, as the CLIs that stamp their events give them: a
        # clock reading's fraction is noise, and showed as 181.279785156 in reports.
        arrivals = [None if ts is None else float(round(ts)) for _, ts in lines]
        return parse_codex_stream([line for line, _ in lines], arrivals)

    def cli_args(self, request: AgentRequest) -> list[str]:
        args = [
            "exec",
            "--json",
            "-m",
            request.model,
            "-C",
            str(request.workdir),
            "--skip-git-repo-check",
        ]
        if request.skip_permissions:
            args.append("--dangerously-bypass-approvals-and-sandbox")
        # else: Codex's own defaults (sandboxed; `exec` never prompts, so a
        # command needing approval is refused).
        if request.provider:
            args += ["-c", f"model_provider={request.provider}"]
        return args

    def cli_env(self, request: AgentRequest) -> dict[str, str]:
        return {"CODEX_HOME": config_home(request, ".codex", "codex-home")}

    def exit_infra(self, exit_code: int | None, stderr: str) -> InfraError | None:
        # Codex's stderr holds warnings of its own side traffic (plugin sync "error
        # sending request" offline): its stream's events are the only word on a run.
        return None

    def amend(self, parsed: ParsedStream, request: AgentRequest) -> ParsedStream:
        sessions = self.home_of(request, "CODEX_HOME", "codex-home", ".codex") / "sessions"
        logs = sorted(sessions.rglob(f"rollout-*{parsed.sessionId or ''}.jsonl"))
        if len(logs) != 1:
            return parsed  # none (another layout), or several and no thread id to choose
        rollout = parse_rollout(log_lines(logs[0]))
        return with_rollout(parsed, rollout, finished=parsed.status == "done")
