"""Field-level state diffs: which entity, which id, which field, before -> after.

Pure. The public suite compares a single revision marker; a field-level diff
lets a failure say exactly what a plan changed (or should not have), and lets
restraint rows demand an empty diff that means something.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Bookkeeping that is not part of the observable state.
IGNORED_TOP_LEVEL = frozenset({"_seq"})
_MISSING = object()


@dataclass(frozen=True, order=True)
class Change:
    entity: str
    id: str
    field: str
    before: Any
    after: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "entity": self.entity,
            "id": self.id,
            "field": self.field,
            "before": self.before,
            "after": self.after,
        }

    def __str__(self) -> str:
        return f"{self.entity}[{self.id}].{self.field}: {self.before!r} -> {self.after!r}"


def _order_key(change: Change) -> tuple[str, str, str]:
    return (change.entity, change.id, change.field)


def state_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """Every field that differs, sorted; a new entity lists all its fields with before None."""
    changes: list[Change] = []
    for top in sorted(set(before) | set(after)):
        if top in IGNORED_TOP_LEVEL:
            continue
        b, a = before.get(top, _MISSING), after.get(top, _MISSING)
        if isinstance(b, Mapping) and isinstance(a, Mapping):
            for eid in sorted(set(b) | set(a)):
                eb, ea = b.get(eid, {}), a.get(eid, {})
                if not isinstance(eb, Mapping) or not isinstance(ea, Mapping):
                    if eb != ea:
                        changes.append(Change(top, str(eid), "*", _plain(eb), _plain(ea)))
                    continue
                for fld in sorted(set(eb) | set(ea)):
                    fb, fa = eb.get(fld), ea.get(fld)
                    if fb != fa or (fld in eb) != (fld in ea):
                        changes.append(Change(top, str(eid), fld, fb, fa))
        elif b != a:
            changes.append(Change("state", "-", top, _plain(b), _plain(a)))
    return sorted(changes, key=_order_key)


def _plain(value: Any) -> Any:
    return None if value is _MISSING else value


def changed(diff: list[Change], entity: str, eid: str, fld: str) -> Change | None:
    for c in diff:
        if c.entity == entity and c.id == eid and c.field == fld:
            return c
    return None


def apply_diff(state: Mapping[str, Any], changes: list[Change]) -> dict[str, Any]:
    """`state` with `changes` applied (a copy): what a journal's per-call diffs rebuild.

    The inverse of `state_diff` for the states the control plane produces:
    `state_diff(s, apply_diff(s, state_diff(s, t))) == []` for any later state
    `t` of the same run (entities are added or changed, never removed).
    """
    out = copy.deepcopy(dict(state))
    for c in changes:
        if c.entity == "state":
            out[c.field] = copy.deepcopy(c.after)
        elif c.field == "*":
            out.setdefault(c.entity, {})[c.id] = copy.deepcopy(c.after)
        else:
            out.setdefault(c.entity, {}).setdefault(c.id, {})[c.field] = copy.deepcopy(c.after)
    return out
