"""The mock control plane as an MCP server on stdio, for a real agent CLI's turn.

The CLI starts this process itself (Codex from `mcp_servers.paperclip.*`,
Claude Code from `--mcp-config`), so the control plane lives in the same
process that answers the agent's tool calls: one case, one fixture, one run,
exactly as the offline suite opens it. The agent sees the case's surface
through the same Codex binding the parity check compares
(`bindings.codex_binding`), and every call is decided and executed by the
same `ControlPlane`.

What happened is written to a journal (JSON Lines, flushed per line) that the
live matrix reads after the CLI exits: how the control plane opened the run
(its own actions and the field-level diff they made; with no running run, the
writes the case withholds tried on a copy), each surface it listed
(`tools/list`), then one record per call with the authorization decision and
the field-level state diff it caused. The journal, not the CLI's own stream,
is the evidence: it is what the control plane did.

`--ungranted` withholds the row's grants. `--list-granted` (with it) still
lists the tools the grant would unlock while every call is decided without
the grant: a control plane whose listing runs ahead of its grants, so a call
to the optional tool reaches the control plane and its refusal is measured
(an agent CLI never sends a call to a tool it was not shown).

Only the part of MCP a tool server needs is spoken: `initialize`, `ping`,
`tools/list`, `tools/call` (newline-delimited JSON-RPC 2.0); notifications
are read and ignored. The MCP SDK would bring some twenty packages (an ASGI
server, an HTTP client, cryptography) for these four methods.

    python -m capeval.paperclip.mcpserver --case ID --journal FILE [--derivative FILE]
        [--ungranted [--list-granted]]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from capeval.core.problems import ProblemsError
from capeval.paperclip.bindings import codex_binding
from capeval.paperclip.controlplane import ControlPlane
from capeval.paperclip.derivative import Row, find_derivative, load_derivative
from capeval.paperclip.diff import state_diff
from capeval.paperclip.fakeagent import auth_context, derive_plan, plan_fixture
from capeval.paperclip.suite import GRANTED, UNGRANTED, gate_probes

SERVER_NAME = "paperclip"
PROTOCOL_VERSION = "2025-06-18"
_METHOD_NOT_FOUND = -32601
_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603


class ControlPlaneServer:
    """Answers MCP requests for one case's run; writes the journal as it goes."""

    def __init__(
        self, row: Row, journal: IO[str], *, granted: bool = True, list_granted: bool = False
    ) -> None:
        plan = derive_plan(row)
        self.ctx = auth_context(row, plan.run_task, granted=granted)
        self.cp = ControlPlane(plan_fixture(plan), self.ctx)
        fixture_state = copy.deepcopy(self.cp.state)
        actions = self.cp.open_run()
        shown = auth_context(row, plan.run_task, granted=True) if list_granted else self.ctx
        self.tools = codex_binding(ctx=shown)
        self.names = {t["name"] for t in self.tools}
        self.journal = journal
        self._record(
            {
                "kind": "open",
                "caseId": row.id,
                "granted": granted,
                "listing": GRANTED if list_granted else (GRANTED if granted else UNGRANTED),
                "runId": self.cp.run_id,
                "runTask": plan.run_task,
                # What the control plane did before the agent's first turn, and what it
                # changed doing so: the evidence that it, not the agent, acted.
                "controlPlaneActions": actions,
                "openDiff": [c.to_json() for c in state_diff(fixture_state, self.cp.state)],
                # With no running run: each write the case withholds, tried on a copy,
                # so a control plane whose execution gate lets it through shows live too.
                "gateProbes": [
                    {**res.to_json(), "stateDiff": [c.to_json() for c in changed]}
                    for _, res, changed in gate_probes(plan, self.cp, {})
                ],
            }
        )

    def _record(self, entry: dict[str, Any]) -> None:
        self.journal.write(json.dumps(entry, sort_keys=True) + "\n")
        self.journal.flush()

    def handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The response to one JSON-RPC message (None for a notification)."""
        method, mid = message.get("method"), message.get("id")
        if mid is None:
            return None
        params = message.get("params") or {}
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": params.get("protocolVersion") or PROTOCOL_VERSION,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": SERVER_NAME, "version": "1"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            self._record({"kind": "surface", "operations": [t["name"] for t in self.tools]})
            result = {
                "tools": [
                    {
                        "name": t["name"],
                        "description": t["description"],
                        "inputSchema": t["parameters"],
                    }
                    for t in self.tools
                ]
            }
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            if not isinstance(name, str) or not isinstance(args, dict):
                return _error(
                    mid, _INVALID_PARAMS, "tools/call needs a name and an arguments object"
                )
            result = self.call(name, args)
        else:
            return _error(mid, _METHOD_NOT_FOUND, f"method not found: {method}")
        return {"jsonrpc": "2.0", "id": mid, "result": result}

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        # Codex adds `_meta` (call and turn ids) beside the tool's own arguments.
        args = {k: v for k, v in args.items() if k != "_meta"}
        before = copy.deepcopy(self.cp.state)
        res = self.cp.call(name, args)
        diff = state_diff(before, self.cp.state)
        self._record(
            {
                "kind": "call",
                "operation": name,
                "arguments": args,
                "onSurface": name in self.names,
                **res.to_json(),
                # What the agent was answered, so a read that answers wrongly shows.
                "output": res.output if res.ok else None,
                "stateDiff": [c.to_json() for c in diff],
            }
        )
        body = {"ok": res.ok, "decision": res.decision.decision, "reason": res.decision.reason}
        if res.ok:
            body["output"] = res.output
        else:
            body["error"] = res.error
            if res.detail:
                body["detail"] = res.detail
        return {"content": [{"type": "text", "text": json.dumps(body)}], "isError": not res.ok}


def _error(mid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}}


def serve(server: ControlPlaneServer, lines: Iterable[str], out: IO[str]) -> None:
    for line in lines:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            out.write(json.dumps(_error(None, -32700, "parse error")) + "\n")
            out.flush()
            continue
        if not isinstance(message, dict):
            continue
        try:
            response = server.handle(message)
        except Exception as exc:  # one bad request must not end the turn
            # Codex would see the server vanish and the journal stop mid-turn; an
            # error response keeps both going, and the journal says what broke.
            server._record({"kind": "error", "message": f"{type(exc).__name__}: {exc}"})
            if message.get("id") is None:
                continue
            response = _error(message.get("id"), _INTERNAL_ERROR, f"internal error: {exc}")
        if response is not None:
            out.write(json.dumps(response) + "\n")
            out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", required=True, help="corpus case id")
    parser.add_argument("--journal", required=True, type=Path, help="JSON Lines evidence file")
    parser.add_argument("--derivative", type=Path, default=None, help="the corpus derivative")
    parser.add_argument("--ungranted", action="store_true", help="withhold the row's grants")
    parser.add_argument(
        "--list-granted",
        action="store_true",
        help="with --ungranted: list the tools the grant would unlock, decide calls without it",
    )
    args = parser.parse_args(argv)
    if args.list_granted and not args.ungranted:
        parser.error("--list-granted goes with --ungranted")
    try:
        rows = {r.id: r for r in load_derivative(args.derivative or find_derivative())}
    except ProblemsError as exc:
        parser.error(str(exc))
    if args.case not in rows:
        parser.error(f"unknown case {args.case!r}")
    with open(args.journal, "a", encoding="utf-8") as journal:
        server = ControlPlaneServer(
            rows[args.case], journal, granted=not args.ungranted, list_granted=args.list_granted
        )
        serve(server, sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
