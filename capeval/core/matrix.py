"""The variant matrix: which provider/model/agent each column of a run uses.

Cells are written by hand on command lines and in config files, so the
syntax is forgiving where it can be unambiguous (`provider/model` or
`provider:model`, `--provider`/`--model` filling a missing side) and strict
where a guess could silently run the wrong model (every cell must resolve to
both a provider and a model; variant ids must be unique because rows are
keyed by them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from capeval.core.agentconfig import AgentConfig

_AGENT_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Variant:
    """One column of the matrix. `agent` None: the run's default agent."""

    id: str
    provider: str
    model: str
    agent: str | None = None

    def to_json(self) -> dict[str, str]:
        """The v3 `variants[]` entry."""
        return {"id": self.id, "provider": self.provider, "model": self.model}


def split_cells(spec: str | Sequence[str]) -> list[str]:
    """Comma-separated cells from one string or several (config lists, repeated flags)."""
    parts = [spec] if isinstance(spec, str) else list(spec)
    return [cell.strip() for part in parts for cell in part.split(",") if cell.strip()]


class IncompleteCell(ValueError):
    """A cell without its provider or model: `--provider`/`--model` may still fill it."""


def duplicate_ids(cells: Sequence[str], variants: Sequence[Variant]) -> list[str]:
    """One message per cell whose variant id an earlier cell already has."""
    seen: dict[str, str] = {}
    out: list[str] = []
    for cell, variant in zip(cells, variants, strict=True):
        if variant.id in seen:
            out.append(
                f"cells {seen[variant.id]!r} and {cell!r} both have variant id "
                f"{variant.id!r}; give one a label (label=provider:model)"
            )
        seen.setdefault(variant.id, cell)
    return out


def played_trajectory(variant: Variant, agents: Mapping[str, AgentConfig]) -> str | None:
    """The trajectory a cell plays when its agent is scripted (None: a real agent)."""
    agent = agents.get(variant.agent or "")
    if agent is None or agent.type != "scripted":
        return None
    return agent.trajectory or variant.model


def parse_cell(
    cell: str,
    *,
    provider: str | None = None,
    model: str | None = None,
    default_agent: str | None = None,
) -> Variant:
    """One cell: `[label=]provider:model[@agent]`, or `provider/model`, or a bare side."""
    text = cell.strip()
    label: str | None = None
    head, eq, rest = text.partition("=")
    if eq and not any(ch in head for ch in ":/@"):
        label = head.strip()
        text = rest.strip()
        if not label:
            raise ValueError(
                f"matrix cell {cell!r}: empty label before '='; write label=provider:model"
            )
    agent = default_agent
    body, at, suffix = text.rpartition("@")
    if at:
        if not _AGENT_NAME.match(suffix):
            raise ValueError(
                f"matrix cell {cell!r}: {suffix!r} after '@' is not an agent name; "
                "write provider:model@agent"
            )
        agent = suffix
        text = body.strip()

    if ":" in text:
        prov, _, mod = text.partition(":")
    elif "/" in text:
        prov, _, mod = text.partition("/")
    elif provider and not model:
        prov, mod = provider, text  # `--provider p --matrix m1,m2`
    elif model and not provider:
        prov, mod = text, model  # `--model m --matrix p1,p2`
    else:
        prov, mod = provider or "", text  # both given (or neither): a bare word is a model
    prov, mod = prov.strip() or (provider or ""), mod.strip() or (model or "")
    if not prov or not mod:
        missing = "provider" if not prov else "model"
        flag = f"--{missing}"
        raise IncompleteCell(
            f"matrix cell {cell!r} has no {missing}: write provider:model "
            f"(e.g. anthropic:claude-sonnet-4-5) or pass {flag} to fill it"
        )
    return Variant(id=label or f"{prov}:{mod}", provider=prov, model=mod, agent=agent)


def parse_matrix(
    spec: str | Sequence[str] | None,
    provider: str | None = None,
    model: str | None = None,
    default_agent: str | None = None,
) -> list[Variant]:
    """Every variant of a matrix spec, in order; ValueError with the fix on bad input.

    An empty spec means the single cell `provider:model` when both are given.
    """
    cells = split_cells(spec or ())
    if not cells:
        if provider and model:
            return [Variant(f"{provider}:{model}", provider, model, default_agent)]
        raise ValueError(
            "empty matrix: give cells like provider:model (comma separated), "
            "or both --provider and --model"
        )
    variants = [
        parse_cell(c, provider=provider, model=model, default_agent=default_agent) for c in cells
    ]
    duplicates = duplicate_ids(cells, variants)
    if duplicates:
        raise ValueError(f"matrix {duplicates[0]}")
    return variants
