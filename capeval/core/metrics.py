"""The behavior-metric catalog: names and the direction in which "better" lies.

Kept apart from the derivations (`capeval.core.behaviors`) because the runner, the
aggregates, the case validator and the gate all need the names and directions,
while only some of them need the scanner.
"""

from __future__ import annotations

from typing import Literal

Direction = Literal["lower", "neutral"]

# Order is the order of docs/behavior-metrics.md#the-metrics; output keeps it.
NUMERIC_METRICS: dict[str, Direction] = {
    "shellCommandCount": "neutral",
    "envAssignmentCommandCount": "lower",
    "chainSegmentCount": "neutral",
    "maxChainSegmentsPerCommand": "lower",
    "networkCommandCount": "lower",
    "webFetchToolCallCount": "neutral",
    "taskToolCallCount": "neutral",
    "editViaShellCount": "lower",
    "repeatedSearchCount": "lower",
    "longestToolOnlyStreak": "lower",
    "maxTurnDurationMs": "lower",
}

METRIC_NAMES: tuple[str, ...] = tuple(NUMERIC_METRICS)

# Informational only: never aggregated into stats, never compared.
TOOL_CALLS_BY_NAME = "toolCallsByName"
# The calls of these tools are what `taskToolCallCount` counted before rows
# carried it (`capeval.core.behaviors.backfill_legacy`).
LEGACY_TASK_TOOLS = ("task", "spawn_agent")


def direction(metric: str) -> Direction:
    """Direction of a numeric metric; unknown metrics are neutral."""
    return NUMERIC_METRICS.get(metric, "neutral")


def is_numeric_metric(name: str) -> bool:
    return name in NUMERIC_METRICS
