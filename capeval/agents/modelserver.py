"""A scripted model server on loopback, so real agent CLIs run without a model.

Claude Code (and opencode's `anthropic` provider) speaks the Anthropic
Messages API, Codex the OpenAI Responses API and Gemini CLI the Gemini API
(`streamGenerateContent`); each accepts a custom base URL. Pointing them here lets `capeval agents
check` and the real-CLI tests drive the genuine binaries through complete
agent loops (the CLI really executes the scripted tool calls in the workdir)
offline, in well under a second per run.

The server is stateless: the step it answers is the number of tool results
already in the request, so concurrent or retried requests cannot desync it.
A script is a list of steps; each step is optional text plus tool calls in
the CLI's own tool vocabulary (`Bash`/`Write`/`Edit` for Claude,
`exec_command`/`apply_patch` for Codex, `run_shell_command`/`write_file`/
`replace` for Gemini). Past the last step the model answers
`done` and stops.

Codex defers MCP tools behind its client-side `tool_search`: a scripted call
named `tool_search` is sent as a `tool_search_call` item, and a call with a
`namespace` (`mcp__<server>`) names a tool that search exposed.

Placeholders in step text and tool inputs are filled from the request:
`{{CWD}}` (the working directory the CLI told the model) and `{{URL}}` (the
first loopback http URL in the user's messages other than the server's own,
i.e. the hermetic HTTP fixture; CLIs add links of their own to user messages,
and nothing off loopback may be contacted anyway).

A `Fault` makes the server misbehave the way a provider does on a bad day:
answer a model request with an HTTP error (429, 529/overloaded, 500, an
authentication error), in the API's own error shape and optionally with
`x-should-retry: false`, or start a 200 stream and cut the connection
mid-way. It applies to the requests of the first `sessions` agent runs (told
apart by the working directory the CLI tells the model), so a test can make
one attempt fail and the next succeed, as a provider that recovers.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)

# Token counts each response reports: fixed so tests can assert sums.
INPUT_TOKENS = 10
OUTPUT_TOKENS = 5
# Thinking tokens, reported where the wire format has a count of its own for
# them (Gemini's `thoughtsTokenCount`); no thought text is sent.
THOUGHT_TOKENS = 3
FINAL_TEXT = "done"

_CWD_PATTERNS = (
    re.compile(r"Primary working directory:\s*(\S+)"),
    re.compile(r"Working directory:\s*(\S+)"),
    re.compile(r"<cwd>\s*(\S+?)\s*</cwd>"),
    re.compile(r"current working directory[^/\n]*?(/\S+)", re.IGNORECASE),
    re.compile(r"\*\*Workspace Directories:\*\*\s*-\s*(\S+)"),  # Gemini CLI
)
_URL = re.compile(r"http://(?:127\.\d+\.\d+\.\d+|localhost|\[::1\])(?::\d+)?[^\s\"'<>)\]]*")


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call. `input` is a JSON object for function tools, a string for freeform ones."""

    name: str
    input: Any
    namespace: str | None = None  # Responses API: the namespace a deferred tool was found in


@dataclass(frozen=True)
class ScriptStep:
    text: str | None = None
    calls: tuple[ScriptedCall, ...] = ()


@dataclass(frozen=True)
class Script:
    steps: tuple[ScriptStep, ...] = ()
    final_text: str = FINAL_TEXT

    @classmethod
    def from_json(cls, obj: Sequence[Mapping[str, Any]]) -> Script:
        """`[{"text"?: str, "calls"?: [{"name": str, "input": object | str, "namespace"?: str}]}]`."""
        steps = []
        for i, raw in enumerate(obj):
            if not isinstance(raw, Mapping):
                raise ValueError(f"script step {i}: expected an object, got {type(raw).__name__}")
            calls = []
            for j, call in enumerate(raw.get("calls") or ()):
                if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                    raise ValueError(f"script step {i} call {j}: needs a string `name`")
                namespace = call.get("namespace")
                if namespace is not None and not isinstance(namespace, str):
                    raise ValueError(f"script step {i} call {j}: `namespace` must be a string")
                calls.append(ScriptedCall(call["name"], call.get("input", {}), namespace))
            steps.append(ScriptStep(raw.get("text"), tuple(calls)))
        return cls(tuple(steps))

    def step_for(self, tool_results: int) -> ScriptStep:
        """The step that follows `tool_results` answered calls; past the end, the final text."""
        seen = 0
        for step in self.steps:
            if seen == tool_results:
                return step
            if not step.calls:  # a text-only answer ends the agent loop
                break
            seen += len(step.calls)
        return ScriptStep(text=self.final_text)


@dataclass
class RequestLog:
    """What the server was asked, for tests and `agents check` diagnostics."""

    method: str
    path: str
    step: int | None = None
    model: str | None = None
    tools: tuple[str, ...] = ()


# The API whose wire a request speaks: how an error body is shaped.
ANTHROPIC, RESPONSES, GEMINI = "anthropic", "responses", "gemini"

_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_GEMINI_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


@dataclass(frozen=True)
class Fault:
    """How the server fails a model request, and which requests it fails.

    `status`: answer with this HTTP status and the API's error body (None:
    `cut`, a 200 stream cut off after its first event). `retry=False` adds
    `x-should-retry: false` (Claude Code then gives up instead of retrying).
    `sessions`: fail the requests of the first N agent runs (by working
    directory), None for every run (a provider that never recovers);
    `requests`: within a failed run, only its first N requests (a blip the
    CLI's own retry rides out), None for all of them.
    """

    status: int | None = None
    retry: bool | None = None
    sessions: int | None = 1
    requests: int | None = None
    message: str = "scripted fault"

    def body(self, api: str) -> bytes:
        status = self.status or 500
        if api == ANTHROPIC:
            kind = _ANTHROPIC_ERRORS.get(status, "api_error")
            return json.dumps(
                {"type": "error", "error": {"type": kind, "message": self.message}}
            ).encode()
        if api == GEMINI:
            state = _GEMINI_STATUSES.get(status, "UNKNOWN")
            return json.dumps(
                {"error": {"code": status, "message": self.message, "status": state}}
            ).encode()
        codes = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
        kind = "server_error" if status >= 500 else codes.get(status, "invalid_request_error")
        return json.dumps(
            {"error": {"message": self.message, "type": kind, "code": codes.get(status)}}
        ).encode()


# ---------------------------------------------------------------- request facts


def _texts(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (prompts are nested differently per API)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)


def _find_cwd(body: Mapping[str, Any]) -> str | None:
    for text in _texts(
        [
            body.get("system"),
            body.get("instructions"),
            body.get("messages"),
            body.get("input"),
            body.get("contents"),
        ]
    ):
        for pattern in _CWD_PATTERNS:
            m = pattern.search(text)
            if m:
                return m.group(1).rstrip(".,;")
    return None


def _find_url(user_texts: Iterator[str], own_prefix: str) -> str | None:
    for text in user_texts:
        for m in _URL.finditer(text):
            url = m.group(0).rstrip(".,;/")
            if not url.startswith(own_prefix):
                return url
    return None


def _fill(value: Any, facts: Mapping[str, str | None]) -> Any:
    if isinstance(value, str):
        for key, fact in facts.items():
            if fact is not None:
                value = value.replace("{{" + key + "}}", fact)
        return value
    if isinstance(value, Mapping):
        return {k: _fill(v, facts) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, facts) for v in value]
    return value


def anthropic_tool_results(body: Mapping[str, Any]) -> int:
    count = 0
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list):
            count += sum(
                1 for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"
            )
    return count


def responses_tool_results(body: Mapping[str, Any]) -> int:
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    return sum(
        1
        for item in items
        if isinstance(item, Mapping)
        and item.get("type")
        in ("function_call_output", "custom_tool_call_output", "tool_search_output")
    )


def gemini_tool_results(body: Mapping[str, Any]) -> int:
    return sum(
        1
        for content in body.get("contents") or ()
        if isinstance(content, Mapping)
        for part in content.get("parts") or ()
        if isinstance(part, Mapping) and "functionResponse" in part
    )


def _user_texts_gemini(body: Mapping[str, Any]) -> Iterator[str]:
    for content in body.get("contents") or ():
        if isinstance(content, Mapping) and content.get("role") == "user":
            yield from _texts(content.get("parts"))


def _user_texts_anthropic(body: Mapping[str, Any]) -> Iterator[str]:
    for message in body.get("messages") or ():
        if isinstance(message, Mapping) and message.get("role") == "user":
            yield from _texts(message.get("content"))


def _user_texts_responses(body: Mapping[str, Any]) -> Iterator[str]:
    items = body.get("input")
    if isinstance(items, str):
        yield items
    elif isinstance(items, list):
        for item in items:
            if isinstance(item, Mapping) and item.get("role") == "user":
                yield from _texts(item.get("content"))


# ---------------------------------------------------------------- wire formats


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_events(step: ScriptStep, model: str) -> list[bytes]:
    """One Messages API response as streaming SSE events."""
    msg_id = f"msg_{uuid.uuid4().hex[:24]}"
    usage = {
        "input_tokens": INPUT_TOKENS,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
    ]
    index = 0
    if step.text:
        out.append(
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        out.append(
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": step.text},
                },
            )
        )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for call in step.calls:
        block = {
            "type": "tool_use",
            "id": f"toolu_{uuid.uuid4().hex[:24]}",
            "name": call.name,
            "input": {},
        }
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        out.append(
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(call.input)},
                },
            )
        )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if step.calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": OUTPUT_TOKENS},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def anthropic_message(step: ScriptStep, model: str) -> dict[str, Any]:
    """The same response, non-streaming (side requests sometimes ask for it)."""
    content: list[dict[str, Any]] = []
    if step.text:
        content.append({"type": "text", "text": step.text})
    for call in step.calls:
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{uuid.uuid4().hex[:24]}",
                "name": call.name,
                "input": call.input,
            }
        )
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if step.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS},
    }


def responses_events(step: ScriptStep, model: str) -> list[bytes]:
    """One Responses API response as streaming SSE events."""
    resp_id = f"resp_{uuid.uuid4().hex[:24]}"
    items: list[dict[str, Any]] = []
    if step.text:
        items.append(
            {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }
        )
    for call in step.calls:
        call_id = f"call_{uuid.uuid4().hex[:24]}"
        if call.name == "tool_search" and call.namespace is None:
            items.append(
                {
                    "id": f"tsc_{uuid.uuid4().hex[:24]}",
                    "type": "tool_search_call",
                    "status": "completed",
                    "call_id": call_id,
                    "execution": "client",
                    "arguments": call.input,
                }
            )
        elif isinstance(call.input, str):
            items.append(
                {
                    "id": f"ctc_{uuid.uuid4().hex[:24]}",
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": call.name,
                    "input": call.input,
                }
            )
        else:
            items.append(
                {
                    "id": f"fc_{uuid.uuid4().hex[:24]}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": call.name,
                    "arguments": json.dumps(call.input),
                    **({"namespace": call.namespace} if call.namespace else {}),
                }
            )
    seq = iter(range(1_000_000))
    base = {"id": resp_id, "object": "response", "model": model, "created_at": 0}
    out = [
        _sse(
            "response.created",
            {
                "type": "response.created",
                "sequence_number": next(seq),
                "response": {**base, "status": "in_progress", "output": []},
            },
        )
    ]
    for index, item in enumerate(items):
        out.append(
            _sse(
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "sequence_number": next(seq),
                    "output_index": index,
                    "item": item,
                },
            )
        )
        if item["type"] == "message":
            out.append(
                _sse(
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "sequence_number": next(seq),
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": item["content"][0]["text"],
                    },
                )
            )
        out.append(
            _sse(
                "response.output_item.done",
                {
                    "type": "response.output_item.done",
                    "sequence_number": next(seq),
                    "output_index": index,
                    "item": item,
                },
            )
        )
    usage = {
        "input_tokens": INPUT_TOKENS,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": OUTPUT_TOKENS,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
    }
    out.append(
        _sse(
            "response.completed",
            {
                "type": "response.completed",
                "sequence_number": next(seq),
                "response": {**base, "status": "completed", "output": items, "usage": usage},
            },
        )
    )
    return out


def gemini_response(step: ScriptStep, model: str) -> dict[str, Any]:
    """One Gemini `GenerateContentResponse`: the step's text and function calls as parts."""
    parts: list[dict[str, Any]] = []
    if step.text:
        parts.append({"text": step.text})
    for call in step.calls:
        args = call.input if isinstance(call.input, Mapping) else {"input": call.input}
        parts.append({"functionCall": {"name": call.name, "args": dict(args)}})
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": INPUT_TOKENS,
            "candidatesTokenCount": OUTPUT_TOKENS,
            "thoughtsTokenCount": THOUGHT_TOKENS,
            "totalTokenCount": INPUT_TOKENS + OUTPUT_TOKENS + THOUGHT_TOKENS,
        },
        "modelVersion": model,
    }


def gemini_events(step: ScriptStep, model: str) -> list[bytes]:
    """`streamGenerateContent?alt=sse`: data-only SSE, here one chunk holding the whole answer."""
    return [f"data: {json.dumps(gemini_response(step, model))}\r\n\r\n".encode()]


# ---------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("modelserver: " + format, *args)

    def _send(self, status: int, body: bytes = b"", content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _stream(self, events: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            self.wfile.write(event)
        self.wfile.flush()
        self.close_connection = True

    def do_HEAD(self) -> None:
        self.server.record(RequestLog("HEAD", self.path))
        self._send(200)

    def do_GET(self) -> None:
        self.server.record(RequestLog("GET", self.path))
        path = self.path.split("?", 1)[0]
        if path.endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [], "models": []}).encode())
        else:
            self._send(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except (json.JSONDecodeError, RecursionError):
            self._send(400, b'{"error": "body is not JSON"}')
            return
        path = self.path.split("?", 1)[0]
        if path.endswith("/messages/count_tokens"):
            self.server.record(RequestLog("POST", self.path))
            self._send(200, json.dumps({"input_tokens": INPUT_TOKENS}).encode())
        elif path.endswith("/messages"):
            self._anthropic(body)
        elif path.endswith("/responses"):
            self._responses(body)
        elif path.endswith(":countTokens"):
            self.server.record(RequestLog("POST", self.path))
            self._send(200, json.dumps({"totalTokens": INPUT_TOKENS}).encode())
        elif path.endswith((":streamGenerateContent", ":generateContent")):
            self._gemini(body, model=path.rsplit("/", 1)[-1].split(":", 1)[0], path=path)
        else:
            self.server.record(RequestLog("POST", self.path))
            self._send(404, b'{"error": "not found"}')

    def _tool_names(self, body: Mapping[str, Any]) -> tuple[str, ...]:
        names = []
        for tool in body.get("tools") or ():
            if isinstance(tool, Mapping):
                declarations = tool.get("functionDeclarations")  # Gemini: many per tool
                if isinstance(declarations, list):
                    names += [
                        d["name"]
                        for d in declarations
                        if isinstance(d, Mapping) and isinstance(d.get("name"), str)
                    ]
                    continue
                name = (
                    tool.get("name") or (tool.get("function") or {}).get("name") or tool.get("type")
                )
                if isinstance(name, str):
                    names.append(name)
        return tuple(names)

    def _answer(
        self, body: Mapping[str, Any], results: int, user_texts: Iterator[str]
    ) -> tuple[ScriptStep, str, int | None]:
        model = str(body.get("model") or "scripted")
        tools = self._tool_names(body)
        if not tools:
            # Side requests (titles, summaries, quota probes) carry no tools:
            # answer them with plain text so they never consume a script step.
            step, index = ScriptStep(text="ok"), None
        else:
            step, index = self.server.script.step_for(results), results
            facts = {"CWD": _find_cwd(body), "URL": _find_url(user_texts, self.server.url)}
            step = ScriptStep(
                _fill(step.text, facts),
                tuple(ScriptedCall(c.name, _fill(c.input, facts), c.namespace) for c in step.calls),
            )
        self.server.record(RequestLog("POST", self.path, index, model, tools))
        return step, model, index

    def _failed(self, body: Mapping[str, Any], api: str, first_event: bytes) -> bool:
        """Answer with the server's fault when this request is one it fails."""
        fault = self.server.fault
        if fault is None or not self._tool_names(body) or not self.server.faulted(_find_cwd(body)):
            return False
        self.server.record(RequestLog("POST", self.path, None, str(body.get("model") or "")))
        if fault.status is None:
            # A stream that breaks off: headers and one event, then the connection drops.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(first_event)
            self.wfile.flush()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return True
        data = fault.body(api)
        self.send_response(fault.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if fault.retry is not None:
            self.send_header("x-should-retry", "true" if fault.retry else "false")
        if fault.status == 429:
            self.send_header("retry-after", "0")
        self.end_headers()
        self.wfile.write(data)
        return True

    def _anthropic(self, body: Mapping[str, Any]) -> None:
        if self._failed(body, ANTHROPIC, anthropic_events(ScriptStep("..."), "scripted")[0]):
            return
        step, model, _ = self._answer(
            body, anthropic_tool_results(body), _user_texts_anthropic(body)
        )
        if body.get("stream"):
            self._stream(anthropic_events(step, model))
        else:
            self._send(200, json.dumps(anthropic_message(step, model)).encode())

    def _gemini(self, body: Mapping[str, Any], *, model: str, path: str) -> None:
        first = b'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "."}]}}]}\r\n\r\n'
        if self._failed({**body, "model": model}, GEMINI, first):
            return
        step, _, _ = self._answer(
            {**body, "model": model}, gemini_tool_results(body), _user_texts_gemini(body)
        )
        if path.endswith(":streamGenerateContent"):
            self._stream(gemini_events(step, model))
        else:
            self._send(200, json.dumps(gemini_response(step, model)).encode())

    def _responses(self, body: Mapping[str, Any]) -> None:
        if self._failed(body, RESPONSES, responses_events(ScriptStep("..."), "scripted")[0]):
            return
        step, model, _ = self._answer(
            body, responses_tool_results(body), _user_texts_responses(body)
        )
        self._stream(responses_events(step, model))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script, fault: Fault | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.fault = fault
        self.requests: list[RequestLog] = []
        self._lock = threading.Lock()
        self._sessions: dict[str | None, int] = {}  # working directory -> requests failed

    def faulted(self, cwd: str | None) -> bool:
        """Whether the fault applies to a request from the agent run in `cwd` (counting it)."""
        fault = self.fault
        if fault is None:
            return False
        with self._lock:
            if cwd not in self._sessions:
                if fault.sessions is not None and len(self._sessions) >= fault.sessions:
                    return False
                self._sessions[cwd] = 0
            if fault.requests is not None and self._sessions[cwd] >= fault.requests:
                return False
            self._sessions[cwd] += 1
            return True

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}"

    def record(self, entry: RequestLog) -> None:
        with self._lock:
            self.requests.append(entry)


@dataclass
class ModelServer:
    """`with ModelServer(script) as server:` serves on `server.url` until the block ends."""

    script: Script = field(default_factory=Script)
    fault: Fault | None = None
    _server: _Server | None = None
    _thread: threading.Thread | None = None

    def start(self) -> ModelServer:
        self._server = _Server(self.script, self.fault)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # a quick stop keeps tests and checks fast
            name="capeval-modelserver",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("model server is not running")
        return self._server.url

    @property
    def requests(self) -> list[RequestLog]:
        return list(self._server.requests) if self._server is not None else []

    def scripted_requests(self) -> list[RequestLog]:
        """Requests that consumed a script step (side requests excluded)."""
        return [r for r in self.requests if r.step is not None]
