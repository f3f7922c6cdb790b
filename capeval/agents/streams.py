"""Pieces every CLI stream parser shares: the parse result and its building blocks.

The per-CLI parsers (`parse_claude_stream`, `parse_codex_stream`, ...) are
pure functions from lines to a `ParsedStream`, so golden streams are tested
without starting a process. Everything here is pure too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from capeval.agents.infra import InfraError
from capeval.core.nesting import NESTED_TOO_DEEPLY, too_deep
from capeval.core.toolkinds import make_tool_call
from capeval.core.turns import RunSummary, TokenUsage, ToolCall, Turn

log = logging.getLogger(__name__)

PREVIEW_CHARS = 400
# Tool results are kept for reading, truncated (docs/result-formats.md#the-run-summary).
RESULT_CHARS = 2000


@dataclass(frozen=True)
class ParsedStream:
    """What one agent run's stream says, normalized.

    `status` is what the stream itself concludes (`done`/`failed`), or None
    when it ended without saying (the adapter then falls back on the exit
    code). `summary` always carries the turns seen, even for a failed run.
    """

    summary: RunSummary
    status: str | None = None
    sessionId: str | None = None
    provider: str | None = None
    model: str | None = None
    durationMs: float | None = None  # as the CLI reports it; None: measure wall time
    costUsd: float | None = None  # as the CLI reports it (Claude Code, opencode)
    error: str | None = None
    agentVersion: str | None = None
    textPreview: str = ""
    skipped: Mapping[str, int] = field(default_factory=dict)  # unknown event type -> count
    # Lines that began an event but were not JSON (cut short, torn by a kill):
    # what they held is lost, so the turns above are not the whole run.
    unparsed: tuple[int, ...] = ()
    # The stream says the run measured nothing: the provider failed it, or the
    # stream stopped before its final event (the adapter drops it on a timeout).
    infra: InfraError | None = None


def unparsed_error(parsed: ParsedStream) -> str | None:
    """Why a stream with lost events cannot be measured; None when every event was read."""
    if not parsed.unparsed:
        return None
    where = ", ".join(str(n) for n in parsed.unparsed[:5])
    more = f" and {len(parsed.unparsed) - 5} more" if len(parsed.unparsed) > 5 else ""
    plural = "s" if len(parsed.unparsed) > 1 else ""
    return (
        f"stream line{plural} {where}{more} cut short or nested too deeply (not readable JSON): "
        "the stream was not fully parsed, so its turns, calls and behaviors are not reported"
    )


def json_events(lines: Iterable[str], skipped: Skipped) -> Iterator[dict[str, Any]]:
    """The JSON objects among `lines`; anything else is logged and skipped.

    CLIs print the odd warning on stdout between events; a stray line must
    not cost the whole stream. A line that opens an object and is not JSON is
    no stray line but an event cut short: it is noted in `skipped.unparsed`,
    since the run it belonged to can no longer be measured from the stream.
    """
    for event, _ in timed_events(((line, None) for line in lines), skipped):
        yield event


def timed_events(
    lines: Iterable[tuple[str, float | None]], skipped: Skipped
) -> Iterator[tuple[dict[str, Any], float | None]]:
    """`json_events` over lines that carry the time they arrived (epoch ms or None)."""
    source = skipped.source
    for number, (line, arrived) in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
            deep = too_deep(event)
        except RecursionError:
            deep = True
        except json.JSONDecodeError:
            if line.startswith("{"):
                log.warning("%s stream line %d is cut short: %.120s", source, number, line)
                skipped.unparsed.append(number)
            else:
                log.warning("%s stream line %d is not JSON, skipped: %.120s", source, number, line)
            continue
        if deep:
            # An event no CLI prints; what it held is lost like a line cut short.
            log.warning("%s stream line %d %s, skipped", source, number, NESTED_TOO_DEEPLY)
            skipped.unparsed.append(number)
            continue
        if isinstance(event, dict):
            yield event, arrived
        else:
            log.warning("%s stream line %d is not a JSON object, skipped", source, number)


class Skipped:
    """Counts unknown event types, logging each type once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.counts: dict[str, int] = {}
        self.unparsed: list[int] = []  # numbers of lines that were events cut short

    def add(self, kind: Any) -> None:
        key = str(kind)
        if key not in self.counts:
            log.info("%s stream: unknown event type %r skipped", self.source, key)
        self.counts[key] = self.counts.get(key, 0) + 1


def make_call(call_id: Any, name: str, arguments: Any, result: Any = None) -> ToolCall:
    """A tool call with its kind and unwrapped shell command; the result kept truncated."""
    return make_tool_call(str(call_id), name, arguments, truncate(result))


def truncate(value: Any, limit: int = RESULT_CHARS) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    return value if len(value) <= limit else value[:limit] + "…"


def preview(texts: Iterable[str], limit: int = PREVIEW_CHARS) -> str:
    """The assistant's text joined, cut to `limit` characters (as old result files have it)."""
    joined = "".join(texts)
    return joined if len(joined) <= limit else joined[:limit] + "…"


@dataclass
class TurnBuilder:
    """Accumulates one model response while a parser walks the events.

    A turn's duration runs from the last event before it (the previous
    turn's tool results, i.e. when its request went out) to its own last
    event (its tool results), so it covers model latency and tool execution.
    """

    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    start: float | None = None  # epoch ms
    end: float | None = None
    durationMs: float | None = None  # when the CLI states it, wins over start/end
    # Opened by an event that marks a model call (Claude's message, opencode's
    # step_start): kept even without text or calls (e.g. only thinking).
    opened: bool = False

    @property
    def empty(self) -> bool:
        return not self.texts and not self.calls and not self.opened

    def touch(self, ts: float | None) -> None:
        if ts is None:
            return
        if self.start is None:
            self.start = ts
        self.end = ts

    def build(self, index: int) -> Turn:
        duration = self.durationMs
        if duration is None and self.start is not None and self.end is not None:
            duration = max(0.0, self.end - self.start)
        return Turn(
            turnIndex=index,
            texts=tuple(self.texts),
            toolCalls=tuple(self.calls),
            durationMs=duration,
        )


def timestamp_ms(value: Any) -> float | None:
    """Epoch milliseconds from an ISO-8601 string or an epoch-ms number; None if neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp() * 1000.0
        except ValueError:
            return None
    return None


def build_summary(
    builders: Iterable[TurnBuilder],
    *,
    status: str,
    usage: TokenUsage | None,
    durationMs: float | None = None,
    error: str | None = None,
    results: Mapping[str, Any] | None = None,
) -> RunSummary:
    """A RunSummary from the turns a parser collected; `results` fills in tool results by call id."""
    turns: list[Turn] = []
    for builder in builders:
        if builder.empty:
            continue
        if results:
            builder.calls = [
                c if c.result is not None or c.id not in results else _with_result(c, results[c.id])
                for c in builder.calls
            ]
        turns.append(builder.build(len(turns)))
    return RunSummary(
        status=status,
        durationMs=durationMs,
        turnsUsed=len(turns),
        tokenUsage=usage,
        toolCallCount=sum(len(t.toolCalls) for t in turns),
        turns=tuple(turns),
        error=error,
    )


_UNFINISHED = "stream ended without"


def unfinished(awaited: str) -> str:
    """The error of a stream that stopped before its verdict (`awaited` names the event)."""
    return f"{_UNFINISHED} {awaited}"


# A stream that stopped before its verdict broke off: unless the agent timed out
# (the adapter's to tell), nothing was measured.
BROKE_OFF = InfraError("stream")


def reported_error(parsed: ParsedStream) -> str | None:
    """The error the CLI itself reported in its stream, not merely that the stream stopped."""
    if parsed.error is None or _UNFINISHED in parsed.error:
        return None
    return parsed.error


def finish_stream(
    builders: Iterable[TurnBuilder],
    *,
    status: str | None,
    usage: TokenUsage | None,
    texts: Iterable[str],
    skipped: Skipped,
    error: str | None = None,
    durationMs: float | None = None,
    results: Mapping[str, Any] | None = None,
    sessionId: str | None = None,
    model: str | None = None,
    agentVersion: str | None = None,
    costUsd: float | None = None,
    infra: InfraError | None = None,
) -> ParsedStream:
    """The ParsedStream every parser ends with, its summary built from the same facts.

    A stream that reached no verdict (`status` None) still has its turns
    summarized as done; the adapter then decides by the exit code. No CLI
    names its provider in the stream, so `provider` stays None.
    """
    summary = build_summary(
        builders,
        status=status or "done",
        usage=usage,
        durationMs=durationMs,
        error=error,
        results=results,
    )
    return ParsedStream(
        summary=summary,
        status=status,
        sessionId=sessionId,
        model=model,
        durationMs=durationMs,
        costUsd=costUsd,
        error=error,
        agentVersion=agentVersion,
        textPreview=preview(texts),
        skipped=dict(skipped.counts),
        unparsed=tuple(skipped.unparsed),
        infra=infra,
    )


def with_session_counts(
    parsed: ParsedStream,
    responses: int | None,
    calls: int | None = None,
    *,
    finished: bool,
) -> ParsedStream:
    """The stream's summary with the counts of responses (and calls) the CLI's own log gives.

    Some streams leave model responses out (Codex's hidden tools, an empty
    response from Claude Code or Gemini CLI), so a turn budget judged on
    the stream could pass a run that overran it. A run that did not finish
    (a timeout, a failure) may have shown a response its log never got to:
    then the larger count stands. None keeps the stream's count (a log of
    another layout). The turns themselves, and the behaviors derived from
    them, stay the stream's.
    """
    summary = parsed.summary
    if responses is not None and not finished:
        responses = max(responses, summary.turnsUsed or 0)
    if calls is not None and not finished:
        calls = max(calls, summary.toolCallCount or 0)
    if responses is None and calls is None:
        return parsed
    amended = replace(
        summary,
        turnsUsed=summary.turnsUsed if responses is None else responses,
        toolCallCount=summary.toolCallCount if calls is None else calls,
    )
    return replace(parsed, summary=amended)


def log_lines(path: Path) -> list[str]:
    """The lines of a CLI's own log; none when it cannot be read (the stream's counts stand)."""
    try:
        return path.read_text(errors="replace").splitlines()
    except OSError:
        return []


def _with_result(call: ToolCall, result: Any) -> ToolCall:
    return ToolCall(call.id, call.name, call.arguments, call.kind, call.command, truncate(result))


def as_int(value: Any) -> int:
    """A token count from a drifted field: 0 unless a number, and never negative.

    A negative count would silently shrink summed usage (and the totals).
    """
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float):
        return max(int(value), 0)
    return 0


def as_str(value: Any) -> str | None:
    """An id or a name from a drifted field: a non-empty string, else None.

    Session ids, models and versions go into rows as strings; a number or an
    object where a CLI used to print a string must not leak through.
    """
    return value if isinstance(value, str) and value else None


def uncached_input(prompt: Any, cached: Any) -> int:
    """Prompt tokens that were not read from cache.

    Claude Code and opencode report input that way; Codex and Gemini report
    the whole prompt with the cached part inside it. One meaning for `input`
    keeps a cross-agent matrix (and the report's input-token headline) honest.
    """
    return max(as_int(prompt) - as_int(cached), 0)


def answering_model(announced: str | None, answered: Iterable[str]) -> str | None:
    """The model a run really resolved to, from the models that answered its turns.

    The announced model (the CLI's init event) only repeats what was asked
    for; a silent fallback shows in the responses. If any response came from
    another model, that model is reported (the most frequent such, first seen
    on a tie), so the provider check sees the fallback.
    """
    counts: dict[str, int] = {}
    for model in answered:
        if model and model != announced:
            counts[model] = counts.get(model, 0) + 1
    if not counts:
        return announced
    return max(counts, key=lambda m: counts[m])


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def text_of(content: Any) -> str:
    """Plain text of a tool result that may be a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "")
            for b in content
            if isinstance(b, Mapping) and isinstance(b.get("text"), str)
        )
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)
