"""Reading the corbits run-summary JSON into a typed `RunSummary` (docs/result-formats.md#the-run-summary).

The corbits post-run hook hands this shape back as is, and other adapters may
write it too, so the reader is the one place where an untrusted stream becomes
typed turns. It is defensive in both directions: missing optional fields and
unknown extra fields are fine (newer and older agents differ), but a shape it
cannot read is a `RunSummaryError` naming the file and the field, never a
silently empty stream — behaviors of an unreadable stream must be null, not
zeros.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from capeval.core.nesting import NESTED_TOO_DEEPLY, too_deep
from capeval.core.toolkinds import make_tool_call
from capeval.core.turns import RunSummary, TokenUsage, ToolCall, Turn

_USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite", "thinking")


class RunSummaryError(ValueError):
    """A run summary that cannot be read: where, which field, and what is wrong."""

    def __init__(self, file: str, field: str, message: str) -> None:
        self.file = file
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, field: str, message: str) -> RunSummaryError:
        return RunSummaryError(self.source, field, message)

    def mapping(self, value: Any, field: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(field, f"expected a JSON object, got {_json_type(value)}")
        return value

    def array(self, value: Any, field: str) -> Sequence[Any]:
        if not isinstance(value, list):
            raise self.fail(field, f"expected a JSON array, got {_json_type(value)}")
        return value

    def number(self, obj: Mapping[str, Any], key: str, field: str) -> float | int | None:
        value = obj.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(field, f"expected a number or null, got {_json_type(value)}")
        return value

    def integer(self, obj: Mapping[str, Any], key: str, field: str) -> int | None:
        """A count (turns, calls, an index): whole and not negative.

        A negative turnsUsed would pass any turn budget.
        """
        value = self.number(obj, key, field)
        if value is None:
            return None
        if isinstance(value, float):
            if not value.is_integer():
                raise self.fail(field, f"expected a whole number, got {value}")
            value = int(value)
        if value < 0:
            raise self.fail(field, f"expected a count (0 or more), got {value}")
        return value

    def string(self, obj: Mapping[str, Any], key: str, field: str) -> str | None:
        value = obj.get(key)
        if value is None or isinstance(value, str):
            return value
        raise self.fail(field, f"expected a string or null, got {_json_type(value)}")

    def summary(self, obj: Any) -> RunSummary:
        top = self.mapping(obj, "(top level)")
        if "turns" not in top:
            raise self.fail(
                "turns",
                "missing: a run summary lists its turns (an empty list for a run without any)",
            )
        raw_turns = self.array(top["turns"], "turns")
        turns = self.ordered(tuple(self.turn(t, k) for k, t in enumerate(raw_turns)))
        error = top.get("error")
        return RunSummary(
            status=self.string(top, "status", "status") or "done",
            startedAt=self.string(top, "startedAt", "startedAt"),
            finishedAt=self.string(top, "finishedAt", "finishedAt"),
            durationMs=self.number(top, "durationMs", "durationMs"),
            turnsUsed=self.integer(top, "turnsUsed", "turnsUsed"),
            tokenUsage=self.usage(top.get("tokenUsage")),
            toolCallCount=self.integer(top, "toolCallCount", "toolCallCount"),
            turns=turns,
            error=_error_text(error),
        )

    def ordered(self, turns: tuple[Turn, ...]) -> tuple[Turn, ...]:
        """Turns in `turnIndex` order: streaks and repeated calls are about
        consecutive turns, which a writer may have listed in another order."""
        seen: dict[int, int] = {}
        for k, turn in enumerate(turns):
            if turn.turnIndex in seen:
                raise self.fail(
                    f"turns[{k}].turnIndex",
                    f"{turn.turnIndex} is also turns[{seen[turn.turnIndex]}]'s; "
                    "give every turn its own index",
                )
            seen[turn.turnIndex] = k
        return tuple(sorted(turns, key=lambda t: t.turnIndex))

    def usage(self, value: Any) -> TokenUsage | None:
        """Token counts, each a count: a string would silently read as 0 tokens,
        and a negative one would shrink the totals it is summed into."""
        if value is None:
            return None
        obj = self.mapping(value, "tokenUsage")
        counts = {k: self.integer(obj, k, f"tokenUsage.{k}") or 0 for k in _USAGE_KEYS}
        return TokenUsage(**counts)

    def turn(self, value: Any, k: int) -> Turn:
        where = f"turns[{k}]"
        obj = self.mapping(value, where)
        index = self.integer(obj, "turnIndex", f"{where}.turnIndex")
        texts: list[str] = []
        assistant = obj.get("assistantTurn")
        if assistant is not None:
            assistant = self.mapping(assistant, f"{where}.assistantTurn")
            texts = self.texts(assistant.get("content"), f"{where}.assistantTurn.content")
        calls = obj.get("toolCalls")
        tool_calls: tuple[ToolCall, ...] = ()
        if calls is not None:
            raw = self.array(calls, f"{where}.toolCalls")
            tool_calls = tuple(
                self.call(c, f"{where}.toolCalls[{j}]", k, j) for j, c in enumerate(raw)
            )
        return Turn(
            turnIndex=k if index is None else index,
            texts=tuple(texts),
            toolCalls=tool_calls,
            durationMs=self.number(obj, "durationMs", f"{where}.durationMs"),
        )

    def texts(self, content: Any, where: str) -> list[str]:
        """Text blocks only: thinking and tool-use blocks are not what the model said."""
        if content is None:
            return []
        if isinstance(content, str):
            return [content]
        out: list[str] = []
        for j, block in enumerate(self.array(content, where)):
            block = self.mapping(block, f"{where}[{j}]")
            if block.get("type") != "text":
                continue
            text = block.get("text")
            if text is None:
                continue
            if not isinstance(text, str):
                raise self.fail(f"{where}[{j}].text", f"expected a string, got {_json_type(text)}")
            out.append(text)
        return out

    def call(self, value: Any, where: str, k: int, j: int) -> ToolCall:
        obj = self.mapping(value, where)
        name = obj.get("name")
        if name is not None and not isinstance(name, str):
            raise self.fail(f"{where}.name", f"expected a string, got {_json_type(name)}")
        if not name:
            raise self.fail(f"{where}.name", "missing: every tool call needs its tool's name")
        call_id = obj.get("id")
        result = obj.get("result")
        if result is not None and not isinstance(result, str):
            result = json.dumps(result, ensure_ascii=False)
        return make_tool_call(
            id=str(call_id) if call_id is not None else f"turn{k}-call{j}",
            name=name,
            arguments=obj.get("arguments", {}),
            result=result,
        )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _error_text(error: Any) -> str | None:
    if error is None or isinstance(error, str):
        return error
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return error["message"]
    return json.dumps(error, ensure_ascii=False)


def summary_from_json(obj: Mapping[str, Any], *, source: str = "<run summary>") -> RunSummary:
    """A run summary from its decoded JSON; `source` names it in errors."""
    return _Reader(source).summary(obj)


class _NotJson(ValueError):
    pass


def _no_constant(name: str) -> object:
    """NaN and Infinity: Python's json reads them, no row can store them."""
    raise _NotJson(name)


def summary_from_text(text: str, *, source: str) -> RunSummary:
    """A run summary from a file's text; every failure is a `RunSummaryError` naming `source`."""
    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except _NotJson as exc:
        raise RunSummaryError(
            source, "(file)", f"contains {exc}, which is not JSON; write a number or null"
        ) from None
    except json.JSONDecodeError as exc:
        raise RunSummaryError(
            source,
            "(file)",
            f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
        ) from exc
    except RecursionError:
        raise RunSummaryError(source, "(file)", NESTED_TOO_DEEPLY) from None
    if too_deep(obj):
        raise RunSummaryError(source, "(file)", NESTED_TOO_DEEPLY)
    return summary_from_json(obj, source=source)
