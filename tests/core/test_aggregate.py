"""Aggregates are recomputed from rows: medians, null behaviors, totals, the CLI."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from capeval.cli import main
from capeval.core.aggregate import aggregate, behavior_stats, median, row_result_key, totals
from capeval.results.jsonl import JsonlWriter
from capeval.results.v3 import write_v3
from tests.rowfactory import result_row


def make_row(
    case: str = "c", repeat: int = 0, behaviors: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return result_row(case, repeat, behaviors=behaviors, **extra)


def test_median_odd_count_is_middle_value() -> None:
    assert median([5, 1, 4]) == 4


def test_median_even_count_is_mean_of_two_middles() -> None:
    assert median([4, 1, 3, 10]) == 3.5
    assert median([16, 18]) == 17
    assert isinstance(median([16, 18]), int)  # written as 17, like the original harness
    assert median([0, 1]) == 0.5
    assert median([1.5, 2.0]) == 1.75


def test_median_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        median([])


@given(st.lists(st.integers(-(10**9), 10**9) | st.floats(-1e9, 1e9), min_size=1))
def test_median_agrees_with_statistics(values: list[float]) -> None:
    assert median(values) == pytest.approx(statistics.median(values))


def test_null_behaviors_are_excluded_from_stats() -> None:
    rows = [
        make_row(repeat=0, behaviors={"shellCommandCount": 4}),
        make_row(repeat=1, behaviors=None),
        make_row(repeat=2, behaviors={"shellCommandCount": 6}),
    ]
    (agg,) = aggregate(rows)
    # Counting the null repeat as 0 would give min 0, median 4.
    assert agg["behaviorStats"]["shellCommandCount"] == {"min": 4, "median": 5, "max": 6}
    assert agg["repeats"] == 3


def test_all_null_behaviors_give_no_stats() -> None:
    (agg,) = aggregate([make_row(repeat=0), make_row(repeat=1)])
    assert agg["behaviorStats"] == {}


def test_pass_counts_and_rate() -> None:
    rows = [make_row(repeat=i, passed=i != 1) for i in range(3)]
    (agg,) = aggregate(rows)
    assert (agg["passCount"], agg["repeats"]) == (2, 3)
    assert agg["passRate"] == pytest.approx(2 / 3)


def test_a_repeat_that_does_not_say_it_passed_is_a_failure() -> None:
    # Fail closed: a row whose `passed` is missing or null must not count as a pass.
    rows = [make_row(repeat=0), make_row(repeat=1, passed=None), make_row(repeat=2)]
    del rows[2]["passed"]
    (agg,) = aggregate(rows)
    assert (agg["passCount"], agg["repeats"]) == (1, 3)
    assert (totals(rows)["passed"], totals(rows)["failed"]) == (1, 2)


def test_sorted_by_result_key_with_fallback_key() -> None:
    rows = [
        make_row("zeta"),
        {"id": "alpha", "variantId": "w", "passed": False, "behaviors": None},
        make_row("beta"),
    ]
    assert [a["resultKey"] for a in aggregate(rows)] == ["v::beta", "v::zeta", "w::alpha"]
    assert row_result_key(rows[1]) == "w::alpha"
    assert aggregate(rows)[2]["variantId"] == "w"


def test_only_catalog_metrics_in_catalog_order() -> None:
    behaviors = {
        "maxTurnDurationMs": 10,
        "shellCommandCount": 1,
        "toolCallsByName": {"run_shell": 1},
        "someFutureMetric": 3,
        "taskToolCallCount": 0,
    }
    (agg,) = aggregate([make_row(behaviors=behaviors)])
    assert list(agg["behaviorStats"]) == [
        "shellCommandCount",
        "taskToolCallCount",
        "maxTurnDurationMs",
    ]


def test_task_tool_call_count_backfilled_for_older_rows() -> None:
    old = {"shellCommandCount": 0, "toolCallsByName": {"task": 2, "spawn_agent": 1, "Task": 5}}
    rows = [
        make_row(repeat=0, behaviors=old),
        make_row(repeat=1, behaviors={"shellCommandCount": 0}),
    ]
    (agg,) = aggregate(rows)
    assert agg["behaviorStats"]["taskToolCallCount"] == {"min": 0, "median": 1.5, "max": 3}


def test_totals_sum_every_repeat_and_treat_missing_as_zero() -> None:
    rows = [
        make_row(repeat=0, durationMs=10, turnsUsed=2, toolCallCount=3, tokenUsage={"input": 5}),
        make_row(repeat=1, passed=False, durationMs=None, turnsUsed=None, tokenUsage=None),
    ]
    assert totals(rows) == {
        "total": 2,
        "passed": 1,
        "failed": 1,
        "error": 0,
        "durationMs": 10,
        "turnsUsed": 2,
        "toolCallCount": 3,
        "tokenUsage": {"input": 5, "output": 0, "cacheRead": 0, "cacheWrite": 0, "thinking": 0},
    }
    rows.append(make_row(repeat=2, durationMs=7, turnsUsed=4, toolCallCount=1))
    rows[2]["tokenUsage"] = {"input": 6, "output": 2}
    summed = totals(rows)
    assert (summed["durationMs"], summed["turnsUsed"], summed["toolCallCount"]) == (17, 6, 4)
    assert (summed["tokenUsage"]["input"], summed["tokenUsage"]["output"]) == (11, 2)


def test_aggregate_module_is_pure_and_light() -> None:
    code = "import sys, capeval.core.aggregate; print(sorted(m for m in ('polars','duckdb','scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the `capeval aggregate` command ---------------------------------------


def mixed_files(tmp_path: Path) -> list[str]:
    jsonl = tmp_path / "run.jsonl"
    with JsonlWriter(jsonl) as writer:
        writer.write(make_row("b", 0, behaviors={"shellCommandCount": 1}))
        writer.write(make_row("b", 1, passed=False, behaviors={"shellCommandCount": 3}))
    v3 = tmp_path / "old.json"
    write_v3(v3, [make_row("a", 0)], started_at=None, finished_at=None)
    return [str(jsonl), str(v3)]


def test_cli_json_pools_files_and_sorts(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["aggregate", *mixed_files(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [d["resultKey"] for d in data] == ["v::a", "v::b"]
    assert data[1] == {
        "resultKey": "v::b",
        "id": "b",
        "variantId": "v",
        "repeats": 2,
        "passCount": 1,
        "passRate": 0.5,
        "errorCount": 0,
        "behaviorStats": {
            "shellCommandCount": {"min": 1, "median": 2, "max": 3},
            # backfilled: these rows predate the metric and have no task calls
            "taskToolCallCount": {"min": 0, "median": 0, "max": 0},
        },
    }


def test_cli_table_is_readable(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["aggregate", *mixed_files(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["resultKey", "pass", "rate", "err", "shell", "task"]
    assert lines[2].split() == ["v::b", "1/2", "50%", "0", "2", "0"]
    assert lines[1].split() == ["v::a", "1/1", "100%", "0", "-", "-"]


def test_cli_bad_file_exits_2_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"version": 2, "cases": []}')
    result = CliRunner().invoke(main, ["aggregate", *mixed_files(tmp_path), str(bad)])
    assert result.exit_code == 2
    assert "broken.json: field 'version' is 2" in result.output


def test_cli_json_bad_file_still_prints_json(tmp_path: Path) -> None:
    # `capeval aggregate --json | jq` read nothing: the refusal went to stderr
    # only, while `capeval gate --json` prints {"errors", "exitCode"} on stdout.
    bad = tmp_path / "broken.json"
    bad.write_text('{"version": 2, "cases": []}')
    result = CliRunner().invoke(main, ["aggregate", str(bad), "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["exitCode"] == 2 and "broken.json: field 'version' is 2" in doc["errors"][0]
    assert "broken.json" in result.stderr


def test_cli_torn_line_warns_and_still_aggregates(tmp_path: Path) -> None:
    files = mixed_files(tmp_path)
    with open(files[0], "a") as handle:
        handle.write('{"id": "b", "pa')
    result = CliRunner().invoke(main, ["aggregate", files[0], "--json"])
    assert result.exit_code == 0
    assert "warning:" in result.stderr and "torn" in result.stderr
    assert json.loads(result.stdout)[0]["repeats"] == 2


def test_cli_does_not_import_the_analysis_stack(tmp_path: Path) -> None:
    files = mixed_files(tmp_path)
    code = (
        "import sys\nfrom capeval.cli import main\n"
        f"try:\n    main(['aggregate', *{files!r}, '--json'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('polars','duckdb','scipy','matplotlib') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_non_numeric_metric_values_are_not_counted() -> None:
    rows = [
        make_row(repeat=0, behaviors={"shellCommandCount": True, "taskToolCallCount": 0}),
        make_row(repeat=1, behaviors={"shellCommandCount": 4, "taskToolCallCount": 0}),
    ]
    (agg,) = aggregate(rows)
    assert agg["behaviorStats"]["shellCommandCount"] == {"min": 4, "median": 4, "max": 4}
    assert totals([make_row(durationMs=True)])["durationMs"] == 0


def test_median_of_two_values_near_the_float_limit_is_finite() -> None:
    assert median([1.5e308, 1.7e308]) == pytest.approx(1.6e308)


def test_an_empty_result_key_is_filed_under_variant_and_case() -> None:
    rows = [{"resultKey": "", "id": "a", "variantId": "v", "passed": True}]
    (agg,) = aggregate(rows)
    assert agg["resultKey"] == "v::a"


def test_an_aggregate_without_a_variant_id_takes_it_from_the_key() -> None:
    rows = [{"resultKey": "base::a", "id": "a", "passed": False}]
    (agg,) = aggregate(rows)
    assert (agg["variantId"], agg["passRate"]) == ("base", 0.0)


def test_a_task_count_written_as_null_is_backfilled_from_tool_names() -> None:
    # An older writer's null is "without taskToolCallCount" (docs/behavior-metrics.md).
    behaviors = {"taskToolCallCount": None, "toolCallsByName": {"task": 2, "spawn_agent": 1}}
    stats_ = behavior_stats([{"behaviors": behaviors}])
    assert stats_["taskToolCallCount"]["median"] == 3
