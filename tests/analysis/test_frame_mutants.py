"""What a frame, a plot's data or a named query promises, pinned where a break went unseen.

Each test here fails on a one-line break of `capeval.analysis.frame`,
`plots`, `cells` or an `analysis/*.sql` query that the other tests let
through: a column of the wrong type, a value silently changed on load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from capeval.analysis import frame as frame_module
from capeval.analysis.frame import FIXED_COLUMNS, load_frame, rows_to_frame
from capeval.core.metrics import METRIC_NAMES
from capeval.results.columns import ColumnTypeError
from tests.specfacts import LOWER_IS_BETTER


def row(case: str = "c", repeat: int = 0, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "resultKey": f"v::{case}",
        "id": case,
        "variantId": "v",
        "passed": True,
        "repeat": repeat,
        "runId": "r1",
        "behaviors": {"shellCommandCount": 1, "taskToolCallCount": 0, "toolCallsByName": {}},
    }
    out.update(extra)
    return out


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[pl.DataFrame]:
    """The frame through DuckDB (the file taking the fast path) and through the reference."""
    monkeypatch.setattr(frame_module, "FAST_MIN_BYTES", 0)
    return [load_frame([path]), load_frame([path], fast=False)]


# The column types a notebook relies on (section 7's row fields, flattened).
PROMISED = {
    "id": pl.String,
    "variantId": pl.String,
    "passed": pl.Boolean,
    "agentExitCode": pl.Int64,
    "verifyExitCode": pl.Int64,
    "durationMs": pl.Float64,
    "agentDurationMs": pl.Float64,
    "verifyDurationMs": pl.Float64,
    "turnsUsed": pl.Int64,
    "toolCallCount": pl.Int64,
    "costUsd": pl.Float64,
    "maxTurns": pl.Int64,
    "overBudget": pl.Boolean,
    "skipPermissions": pl.Boolean,
    "repeat": pl.Int64,
    "gitDirty": pl.Boolean,
    "baitMetric": pl.String,
    "baitThreshold": pl.Float64,
    "behaviorsCaptured": pl.Boolean,
    "maxTurnDurationMs": pl.Float64,
    "toolCallsByName": pl.String,
    "tokenInput": pl.Int64,
    "tokenThinking": pl.Int64,
    "source": pl.String,
    **{m: pl.Int64 for m in METRIC_NAMES if m != "maxTurnDurationMs"},
}


def test_columns_have_the_promised_types_and_fractional_costs_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code reports a cost like 0.0123 USD: an integer column refused the file.
    path = write_jsonl(
        tmp_path / "r.jsonl",
        [row("a", costUsd=0.0123, durationMs=1500.5, gitDirty=True), row("b", costUsd=2)],
    )
    for frame in both_ways(path, monkeypatch):
        assert {name: frame.schema[name] for name in PROMISED} == PROMISED
        assert frame["costUsd"].to_list() == [0.0123, 2.0]
        assert frame["durationMs"].to_list() == [1500.5, None]
    assert set(PROMISED) <= set(FIXED_COLUMNS)


@pytest.mark.parametrize(
    "field, value",
    [("turnsUsed", 3.5), ("turnsUsed", True), ("agentExitCode", False), ("shellCommandCount", 2.5)],
)
def test_a_count_that_is_no_integer_is_refused_not_rounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str, value: Any
) -> None:
    # 3.5 turns read as 3, or `true` read as 1, would silently move the
    # medians a notebook computes; the frame names the row instead.
    extra: dict[str, Any] = {field: value}
    if field in METRIC_NAMES:
        extra = {"behaviors": {field: value, "taskToolCallCount": 0}}
    bad = {**row("b", 1), **extra}
    with pytest.raises(ColumnTypeError, match=f"field '{field}'"):
        rows_to_frame([row("a"), bad])
    path = write_jsonl(tmp_path / "odd.jsonl", [row("a"), bad])
    monkeypatch.setattr(frame_module, "FAST_MIN_BYTES", 0)
    for fast in (True, False):
        with pytest.raises(ColumnTypeError, match=f"field '{field}'"):
            load_frame([path], fast=fast)


# -- plots' data ---------------------------------------------------------------------------


def test_history_data_leaves_tokens_null_when_no_repeat_reported_any() -> None:
    from capeval.analysis import plots

    started = "2026-01-01T00:00:00Z"
    frame = rows_to_frame(
        [
            # A run of an agent that reports no token usage (Codex): no tokens, not 0 tokens.
            row("a", 0, runId="quiet", runStartedAt=started, durationMs=2000),
            row("a", 1, runId="quiet", runStartedAt=started, durationMs=4000),
            # Tokens counted only over the repeats that reported them.
            row(
                "a",
                0,
                runId="loud",
                runStartedAt="2026-01-02T00:00:00Z",
                tokenUsage={"input": 10, "output": 4},
            ),
            row("a", 1, runId="loud", runStartedAt="2026-01-02T00:00:00Z", tokenUsage=None),
        ]
    )
    data = plots.history_data(frame)
    assert data["runId"].to_list() == ["quiet", "loud"]
    assert data["tokensPerRepeat"].to_list() == [None, 14.0]
    assert data["secondsPerRepeat"].to_list()[0] == 3.0
    figure = plots.history(frame)
    assert len(figure.axes) == 3  # the token panel: one run reported tokens


# -- named queries -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def con() -> Any:
    from capeval.analysis.history import connect
    from tests.analysis.test_history import SAMPLES

    connection = connect([SAMPLES])
    yield connection
    connection.close()


def test_metric_directions_are_the_specs(con: Any) -> None:
    found = dict(con.execute("SELECT metric, direction FROM metric_directions").fetchall())
    assert set(found) == set(METRIC_NAMES)
    assert {m for m, d in found.items() if d == "lower"} == LOWER_IS_BETTER
    assert {d for m, d in found.items() if m not in LOWER_IS_BETTER} == {"neutral"}


def test_slowest_cases_reports_each_time_of_its_own(con: Any) -> None:
    from collections import defaultdict

    import numpy as np

    from capeval.analysis.queries import run_query
    from capeval.core.aggregate import median
    from tests.analysis.test_history import sample_rows

    times: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in sample_rows():
        for field in ("durationMs", "agentDurationMs", "verifyDurationMs"):
            times[r["id"]][field].append(r[field])
    found = run_query(con, "slowest_cases")
    assert found and len(found) == min(20, len(times))
    for r in found:
        t = times[r["caseId"]]
        assert r["p90Seconds"] == pytest.approx(float(np.quantile(t["durationMs"], 0.9)) / 1000)
        assert r["medianAgentSeconds"] == pytest.approx(median(t["agentDurationMs"]) / 1000)
        assert r["medianVerifySeconds"] == pytest.approx(median(t["verifyDurationMs"]) / 1000)
    # The times differ, or the checks above could not tell one column from another.
    assert any(r["medianAgentSeconds"] != r["medianVerifySeconds"] for r in found)
    assert any(r["p90Seconds"] != r["medianSeconds"] for r in found)


def test_cost_per_pass_divides_output_tokens_by_passes(con: Any) -> None:
    from collections import defaultdict

    from capeval.analysis.queries import run_query
    from tests.analysis.test_history import sample_rows

    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in sample_rows():
        groups[(r["runId"], r["variantId"])].append(r)
    found = {(r["runId"], r["variantId"]): r for r in run_query(con, "cost_per_pass")}
    checked = 0
    for key, rows in groups.items():
        passes = sum(r["passed"] for r in rows)
        output = sum(r["tokenUsage"]["output"] for r in rows)
        want = output / passes if passes else None
        assert found[key]["tokenOutputPerPass"] == (None if want is None else pytest.approx(want))
        checked += passes > 0
    assert checked
