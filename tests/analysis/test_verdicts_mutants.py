"""Verdict and advisory rules a one-line break of the code left unnoticed (a mutation audit).

Each test pins one rule of section 7 or 8 of the spec (or of the advisory
statistics beside the gate) that no other test caught breaking.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from capeval.analysis import stats
from capeval.analysis.cells import Cell, cells_from_rows
from capeval.analysis.compare import compare_cells
from capeval.core import aggregate
from tests.rowfactory import gate_row as row


def _cell(case: str, passes: int, repeats: int, **fields: Any) -> Cell:
    rows = [row(case, r < passes, repeat=r, **fields) for r in range(repeats)]
    return cells_from_rows(rows)[f"v1::{case}"]


def test_a_baseline_that_never_passed_is_not_flaky() -> None:
    # Flaky means 0 < passes < repeats: a case that always fails is broken, not flaky.
    for passes, flaky in ((0, False), (1, True), (2, True), (3, False)):
        advisory = stats.cell_advisory(_cell("a", passes, 3), _cell("a", 3, 3), changed=True)
        assert advisory["flakyBaseline"] is flaky, passes


def test_a_candidate_that_adds_a_provider_is_a_provider_change() -> None:
    # The baseline resolved one model, the candidate that model and a fallback:
    # their resolved models differ, so compare refuses without the flag.
    base = cells_from_rows([row("a", provider="p", model="m")])
    cand = cells_from_rows(
        [row("a", provider="p", model="m"), row("a", repeat=1, provider="p", model="fallback")]
    )
    result = compare_cells(base, cand)
    assert len(result.provider_changes) == 1
    assert "p:m" in result.provider_changes[0] and "p:fallback" in result.provider_changes[0]
    assert result.refusals(gate=False) and not result.clean


def test_a_large_baseline_against_a_few_candidate_repeats_gets_a_difference_interval() -> None:
    # A pooled 60-repeat baseline against a 5-repeat candidate: each side had
    # an interval but their difference had none (MOVER found no exact
    # order-statistic interval for five values).
    base = [float(i % 7) for i in range(60)]
    cand = [1.0, 2.0, 3.0, 4.0, 9.0]
    seed = 4
    a, b = stats.order_statistic_median(base), stats.median_interval(cand, seed)
    assert a is not None and b is not None
    m1, m2 = aggregate.median(base), aggregate.median(cand)
    got = stats.median_difference_interval(base, cand, seed)
    assert got is not None
    assert got == pytest.approx(
        (
            m2 - m1 - math.hypot(m2 - b[0], a[1] - m1),
            m2 - m1 + math.hypot(b[1] - m2, m1 - a[0]),
        )
    )
    assert got[0] <= m2 - m1 <= got[1]
    # Either way round, and still none with a single value on one side.
    assert stats.median_difference_interval(cand, base, seed) is not None
    assert stats.median_difference_interval(base, [3.0], seed) is None


def test_wilcoxon_leaves_unchanged_cases_out() -> None:
    # Cases whose pass rate did not move carry no sign: they are dropped
    # (zero_method="wilcox"), not ranked as the smallest changes.
    from scipy.stats import wilcoxon

    # Enough cases for the normal approximation, where ranking the zeros moves p.
    moves = [(1, 2)] * 20 + [(2, 1)] * 8 + [(0, 2)] * 5 + [(1, 1)] * 10
    pairs = [(_cell(f"c{i}", b, 4), _cell(f"c{i}", c, 4)) for i, (b, c) in enumerate(moves)]
    out = stats.paired_cases(pairs, seed=0)
    nonzero = [(c - b) / 4 for b, c in moves if c != b]
    assert out["wilcoxonP"] == pytest.approx(float(wilcoxon(nonzero).pvalue))


def test_median_of_two_values_near_the_float_limit_is_finite() -> None:
    assert aggregate.median([1.5e308, 1.7e308]) == pytest.approx(1.6e308)


def test_an_empty_result_key_is_filed_under_variant_and_case() -> None:
    rows = [{"resultKey": "", "id": "a", "variantId": "v", "passed": True}]
    (agg,) = aggregate.aggregate(rows)
    assert agg["resultKey"] == "v::a"


def test_an_aggregate_without_a_variant_id_takes_it_from_the_key() -> None:
    rows = [{"resultKey": "base::a", "id": "a", "passed": False}]
    (agg,) = aggregate.aggregate(rows)
    assert (agg["variantId"], agg["passRate"]) == ("base", 0.0)


def test_a_task_count_written_as_null_is_backfilled_from_tool_names() -> None:
    # An older writer's null is "without taskToolCallCount" (section 6).
    behaviors = {"taskToolCallCount": None, "toolCallsByName": {"task": 2, "spawn_agent": 1}}
    stats_ = aggregate.behavior_stats([{"behaviors": behaviors}])
    assert stats_["taskToolCallCount"]["median"] == 3


def test_a_frame_bait_without_a_threshold_is_warned_about() -> None:
    # A bait metric with no threshold is no declaration: the comparison must
    # say it was passed over, not drop it silently.
    import polars as pl

    from capeval.analysis.cells import cells_from_frame

    frame = pl.DataFrame(
        {
            "id": ["web"],
            "variantId": ["v"],
            "passed": [True],
            "networkCommandCount": [0],
            "baitMetric": ["networkCommandCount"],
            "baitThreshold": pl.Series([None], dtype=pl.Float64),
        }
    )
    cells = cells_from_frame(frame)
    (cell,) = cells.values()
    assert cell.bait is None and cell.baitUnread is not None
    result = compare_cells(cells, cells)
    assert any("no bait" in w for w in result.warnings)


def test_gate_files_bootstraps_with_the_seed_it_is_given(tmp_path: Path) -> None:
    # `--seed` reaches the statistics through gate_files: the same seed gives
    # the same intervals, another seed other ones.
    from capeval.analysis.gatecheck import gate_files

    # Twelve cases of unequal rates and repeats: the case-resampling interval
    # has many values to land on, so two seeds do not give the same one.
    rows = [
        row(f"c{k}", r < k % 5, repeat=r, maxTurnDurationMs=(r * 37 + k * 11) % 23)
        for k in range(12)
        for r in range(4 + k % 3)
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def advisory(seed: int) -> Any:
        result = gate_files(path, path, advisory=True, seed=seed)
        assert result.comparison is not None
        return result.comparison.advisory["variants"], [
            c.advisory["behaviors"] for c in result.comparison.cells
        ]

    assert advisory(1) == advisory(1)
    assert advisory(1) != advisory(2)
