"""Result rows for tests, built one way.

A test states only the fields its assertions depend on; the identity every
row needs (resultKey, id, variantId, passed, repeat) comes from here, so the
resultKey always agrees with the variant and case it names.
"""

from __future__ import annotations

from typing import Any

from capeval.core.metrics import METRIC_NAMES


def result_row(
    case: str = "c", repeat: int = 0, *, variant: str = "v", passed: bool = True, **fields: Any
) -> dict[str, Any]:
    """A row of one repeat: the identity fields, then `fields` (which may override them)."""
    row: dict[str, Any] = {
        "resultKey": f"{variant}::{case}",
        "id": case,
        "variantId": variant,
        "passed": passed,
        "repeat": repeat,
    }
    row.update(fields)
    return row


def gate_row(
    case: str,
    passed: bool = True,
    *,
    variant: str = "v1",
    repeat: int = 0,
    provider: str = "prov",
    model: str = "mod",
    bait: dict[str, Any] | None = None,
    **metrics: float | None,
) -> dict[str, Any]:
    """A row as a comparison reads it; behaviors are all zeros unless given.

    `behaviors=None` is a lost stream; `metric=None` leaves that metric out.
    """
    if "behaviors" in metrics and metrics["behaviors"] is None:
        behaviors = None
    else:
        behaviors = dict.fromkeys(METRIC_NAMES, 0)
        behaviors.update({k: v for k, v in metrics.items() if v is not None})
        for k, v in metrics.items():
            if v is None:
                behaviors.pop(k, None)
        behaviors["toolCallsByName"] = {}
    return result_row(
        case,
        repeat,
        variant=variant,
        passed=passed,
        tier="simple",
        title=case,
        provider=provider,
        model=model,
        durationMs=1000,
        turnsUsed=3,
        tokenUsage={"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 0, "thinking": 0},
        behaviors=behaviors,
        bait=bait,
    )
