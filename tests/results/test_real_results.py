"""The three real v3 files written by the original TypeScript harness.

What they show (checked below): every stored pass count, pass rate, total
and behavior stat agrees with an independent count of the rows, including
two-value medians (mean of the middles) in cells where some repeats have
null behaviors. The only difference is that the stored stats predate
`taskToolCallCount`; recomputed aggregates carry it, backfilled from
`toolCallsByName`. baseline-0286.json also shows the silent provider
fallback (docs/running.md#the-matrix): header and timed-out rows name one model, every
repeat that actually ran another.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from capeval.cli import main
from capeval.core.aggregate import aggregate, totals
from capeval.core.metrics import METRIC_NAMES
from capeval.results.load import read_rows
from capeval.results.v3 import read_v3

FILES = ("after-0286-grok.json", "baseline-0286-grok.json", "baseline-0286.json")


def independent_aggregates(cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A deliberately naive re-count from the raw JSON, sharing no code with capeval."""
    out: dict[str, dict[str, Any]] = {}
    for key in {c["variantId"] + "::" + c["id"] for c in cases}:
        cell = [c for c in cases if c["variantId"] + "::" + c["id"] == key]
        stats = {}
        for metric in METRIC_NAMES:
            values = []
            for c in cell:
                b = c["behaviors"]
                if b is None:
                    continue
                if metric == "taskToolCallCount" and metric not in b:
                    names = b.get("toolCallsByName", {})
                    values.append(names.get("task", 0) + names.get("spawn_agent", 0))
                elif metric in b:
                    values.append(b[metric])
            if values:
                stats[metric] = {
                    "min": min(values),
                    "median": statistics.median(values),
                    "max": max(values),
                }
        passes = len([c for c in cell if c["passed"]])
        out[key] = {
            "repeats": len(cell),
            "passCount": passes,
            "passRate": passes / len(cell),
            "behaviorStats": stats,
        }
    return out


@pytest.fixture(params=FILES)
def real_file(request: pytest.FixtureRequest, real_results: Path) -> Path:
    return real_results / request.param


def raw(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def test_reads_every_row(real_file: Path) -> None:
    header, rows = read_v3(real_file)
    assert header["version"] == 3 and len(rows) == 21
    assert read_rows(real_file)[0]["id"] == rows[0]["id"]


def test_recomputed_aggregates_equal_an_independent_count(real_file: Path) -> None:
    expected = independent_aggregates(raw(real_file)["cases"])
    got = aggregate(read_rows(real_file))
    assert [a["resultKey"] for a in got] == sorted(expected)
    for agg in got:
        want = expected[agg["resultKey"]]
        assert {k: agg[k] for k in want} == want, agg["resultKey"]


def test_stored_aggregates_agree_except_the_missing_task_metric(real_file: Path) -> None:
    stored = {a["resultKey"]: a for a in raw(real_file)["aggregates"]}
    recomputed = {a["resultKey"]: a for a in aggregate(read_rows(real_file))}
    assert stored.keys() == recomputed.keys()
    for key, old in stored.items():
        new = recomputed[key]
        for field in ("id", "variantId", "repeats", "passCount", "passRate"):
            assert old[field] == new[field], (key, field)
        assert "taskToolCallCount" not in old["behaviorStats"]
        assert new["behaviorStats"].pop("taskToolCallCount")["min"] >= 0
        assert old["behaviorStats"] == new["behaviorStats"], key


def test_stored_totals_agree(real_file: Path) -> None:
    ours = totals(read_rows(real_file))
    # The original harness knew no `error` outcome: every repeat of these files ran.
    assert ours.pop("error") == 0
    assert ours == raw(real_file)["totals"]


def test_two_value_medians_in_cells_with_null_behaviors(real_results: Path) -> None:
    # simple-health repeat 2 timed out (behaviors null): its stats use 2 repeats.
    (cell,) = [
        a
        for a in aggregate(read_rows(real_results / "baseline-0286.json"))
        if a["id"] == "simple-health"
    ]
    assert cell["repeats"] == 3 and cell["passCount"] == 2
    stats = cell["behaviorStats"]
    assert stats["repeatedSearchCount"] == {"min": 0, "median": 0.5, "max": 1}
    assert stats["longestToolOnlyStreak"] == {"min": 16, "median": 17, "max": 18}
    assert stats["maxTurnDurationMs"]["median"] == 20702


def test_subagent_bait_gets_task_tool_call_count(real_results: Path) -> None:
    for name in FILES:
        by_id = {a["id"]: a for a in aggregate(read_rows(real_results / name))}
        assert by_id["subagent-bait"]["behaviorStats"]["taskToolCallCount"]["median"] == 1
        assert by_id["complex-jwt"]["behaviorStats"]["taskToolCallCount"]["median"] == 0


def test_baseline_0286_shows_the_silent_fallback(real_results: Path) -> None:
    header, rows = read_v3(real_results / "baseline-0286.json")
    assert (header["provider"], header["model"]) == ("xai/thegreataxios", "grok-4.5")
    ran = {(r["provider"], r["model"]) for r in rows if r["status"] is not None}
    assert ran == {("zen", "north-mini-code-free")}
    mixed = {
        r["id"]
        for r in rows
        if len({(o["provider"], o["model"]) for o in rows if o["id"] == r["id"]}) > 1
    }
    assert mixed == {"simple-health", "complex-jwt"}


def test_cli_json_matches_library(real_file: Path) -> None:
    result = CliRunner().invoke(main, ["aggregate", str(real_file), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == aggregate(read_rows(real_file))
