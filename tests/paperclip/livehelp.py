"""A live turn driven in process: the MCP control-plane server answering calls a test names.

What a real CLI would do is replayed here without one: the server is opened
as the CLI's `paperclip` MCP server is, asked `tools/list` (unless a test
leaves it out), and sent each call; a call to a tool the server did not list
never reaches it (the CLI refuses it itself) and is returned as refused by
the CLI, as `liveagents` reads it from a CLI's own output.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

from capeval.paperclip.livecases import LISTED_TOOLS, LiveCase, scripted_calls
from capeval.paperclip.livejudge import Verdict, judge
from capeval.paperclip.mcpserver import ControlPlaneServer, serve


def journal_of(
    case: LiveCase,
    calls: Sequence[dict[str, Any]] | None = None,
    *,
    list_tools: bool = True,
    ungranted_tools: str = "absent",
    send_unlisted: bool = False,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The journal records of one turn of `case` making `calls` (default: the correct
    scripted turn), and the operations the CLI would have refused (none with
    `send_unlisted`: a client that sends every call on)."""
    out = io.StringIO()
    server = ControlPlaneServer(
        case.row,
        out,
        granted=case.granted,
        list_granted=not case.granted and ungranted_tools == LISTED_TOOLS,
    )
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    if list_tools:
        messages.append({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    refused: list[str] = []
    for i, call in enumerate(scripted_calls(case) if calls is None else calls, 2):
        if list_tools and not send_unlisted and call["operation"] not in server.names:
            refused.append(call["operation"])
            continue
        params = {"name": call["operation"], "arguments": call["arguments"]}
        messages.append({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
    serve(server, [json.dumps(m) + "\n" for m in messages], io.StringIO())
    return [json.loads(line) for line in out.getvalue().splitlines()], refused


def judged(
    case: LiveCase,
    calls: Sequence[dict[str, Any]] | None = None,
    *,
    list_tools: bool = True,
    ungranted_tools: str = "absent",
    send_unlisted: bool = False,
    exit_code: int | None = 0,
    **kwargs: Any,
) -> Verdict:
    records, refused = journal_of(
        case,
        calls,
        list_tools=list_tools,
        ungranted_tools=ungranted_tools,
        send_unlisted=send_unlisted,
    )
    return judge(case, records, exit_code=exit_code, cli_refused=refused, **kwargs)
