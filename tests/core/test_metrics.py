"""The metric catalog: which direction of each metric the gate treats as worse."""

from __future__ import annotations

from capeval.core.metrics import METRIC_NAMES, TOOL_CALLS_BY_NAME, direction
from tests.specfacts import LOWER_IS_BETTER


def test_directions_are_the_spec_table() -> None:
    """The gate flags a regression only in a metric's "lower" direction, so a
    wrong direction silently turns a gated metric off (or a neutral one on)."""
    assert {name: direction(name) for name in METRIC_NAMES} == {
        name: "lower" if name in LOWER_IS_BETTER else "neutral" for name in METRIC_NAMES
    }


def test_tool_calls_by_name_and_unknown_metrics_are_never_lower() -> None:
    assert direction(TOOL_CALLS_BY_NAME) == "neutral"
    assert direction("someFutureMetric") == "neutral"
