"""The two bindings of the 18-operation surface: the fake agent's and Codex's.

Both are built from the same catalog and the same authorization listing, so
the parity check (18/18, byte-identical name lists) fails only if one binding
drops, renames or adds an operation. The Codex binding is data only (function
tool definitions with strict parameters); no Codex process, network or
credential is involved.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from capeval.core.paperclip.authorization import AuthContext, surface
from capeval.core.paperclip.catalog import CATALOG, FAKE_AGENT_SEED_GRANTS, Catalog

SURFACE_CONTEXT = AuthContext(role="engineer", claims=frozenset(FAKE_AGENT_SEED_GRANTS))


@dataclass(frozen=True)
class FakeAgentTool:
    operation_id: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "operationId": self.operation_id,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
        }


def fake_agent_binding(
    catalog: Catalog = CATALOG, ctx: AuthContext = SURFACE_CONTEXT
) -> list[FakeAgentTool]:
    tools = []
    for name in surface(ctx, catalog=catalog):
        op = catalog.operations[name]
        tools.append(FakeAgentTool(name, op.description, op.input_schema(), op.output_schema()))
    return tools


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI strict function parameters: every property required, optional ones nullable."""
    props: dict[str, Any] = {}
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        p = dict(prop)
        if name not in required:
            t = p.get("type", "string")
            types = t if isinstance(t, list) else [t]
            if "null" not in types:
                p["type"] = [*types, "null"]
        if p.get("type") == "object" or (isinstance(p.get("type"), list) and "object" in p["type"]):
            p.setdefault("properties", {})
            p.setdefault("required", [])
            p["additionalProperties"] = False
        props[name] = p
    return {
        "type": "object",
        "properties": props,
        "required": sorted(props),
        "additionalProperties": False,
    }


def codex_binding(
    catalog: Catalog = CATALOG, ctx: AuthContext = SURFACE_CONTEXT
) -> list[dict[str, Any]]:
    """Codex function tools for the same surface."""
    out = []
    for name in surface(ctx, catalog=catalog):
        op = catalog.operations[name]
        out.append(
            {
                "type": "function",
                "name": name,
                "description": op.description,
                "strict": True,
                "parameters": _strict(op.input_schema()),
            }
        )
    return out


def operation_names_json(names: list[str]) -> str:
    """The canonical byte form the parity check compares."""
    return json.dumps(names, separators=(",", ":"))


def parity(catalog: Catalog = CATALOG) -> tuple[list[str], list[str], bool]:
    fake = [t.operation_id for t in fake_agent_binding(catalog)]
    codex = [t["name"] for t in codex_binding(catalog)]
    return fake, codex, operation_names_json(fake) == operation_names_json(codex)
