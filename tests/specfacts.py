"""Facts the spec states, written out by hand so tests check the code against the spec.

Importing them from capeval instead would test the code against itself: a
wrong direction in `capeval.core.metrics` would then pass every test that uses it.
"""

from __future__ import annotations

# docs/behavior-metrics.md, written out by hand: the behavior metrics that
# are better lower; every other numeric metric is neutral (never gated).
LOWER_IS_BETTER = frozenset(
    {
        "envAssignmentCommandCount",
        "maxChainSegmentsPerCommand",
        "networkCommandCount",
        "editViaShellCount",
        "repeatedSearchCount",
        "longestToolOnlyStreak",
        "maxTurnDurationMs",
    }
)
