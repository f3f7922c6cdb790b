"""The data the viewer's pages get: matrices, cells, repeats, transcripts, the Paperclip explorer.

Each page must show what the analysis layer computes, so these tests hold
the pages against it: the history views, the gate's comparison, the cells,
the behavior metrics of the rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capeval.analysis import history
from capeval.analysis.gatecheck import gate_files
from capeval.core.behaviors import behavior_contributions, derive_behaviors
from capeval.core.metrics import METRIC_NAMES
from capeval.core.runsummary import summary_from_json
from capeval.view.model import Viewer, load_viewer, outcome_of
from tests.view.runs import CLEAN, GRADER_LOG, REPO, SLOPPY, row, small_run, write_run

SAMPLES = REPO / "evals" / "capability" / "samples"
BASELINE = REPO / "evals" / "capability" / "results" / "baseline.json"


def matrix_cells(viewer: Viewer, m: int) -> dict[str, dict[str, Any]]:
    page = viewer.page(f"matrix-{m}")
    assert page is not None
    return {c["key"]: c for c in page["cells"]}


@pytest.fixture
def small(tmp_path: Path) -> Viewer:
    small_run(tmp_path / "results")
    return load_viewer([tmp_path / "results"])


def test_outcome_is_the_rows_own_when_it_holds_one_else_passed_or_failed() -> None:
    assert outcome_of({"passed": True}) == "passed"
    assert outcome_of({"passed": False}) == "failed"
    assert outcome_of({"passed": False, "outcome": "error"}) == "error"
    assert outcome_of({"passed": True, "outcome": "passed"}) == "passed"
    assert outcome_of({"passed": False, "outcome": "weird"}) == "failed"
    assert outcome_of({"passed": False, "outcome": None}) == "failed"


def test_a_run_matrix_has_each_cell_with_counts_outcomes_and_bait(small: Viewer) -> None:
    index = small.page("index")
    assert index is not None
    assert [m["kind"] for m in index["matrices"]] == ["run"]
    cells = matrix_cells(small, 0)
    assert sorted(cells) == ["clean::edit", "clean::plain", "sloppy::edit", "sloppy::plain"]
    sloppy = cells["sloppy::edit"]
    assert sloppy["sides"]["c"]["passCount"] == 0
    assert sloppy["sides"]["c"]["outcomes"] == {"passed": 0, "failed": 2, "error": 0}
    assert sloppy["bait"]["metric"] == "editViaShellCount"
    assert sloppy["bait"]["misbehaving"] is True
    assert cells["clean::edit"]["bait"]["misbehaving"] is False
    assert cells["clean::plain"]["bait"] is None
    # the row's own outcome counts: one repeat says error
    assert cells["clean::plain"]["sides"]["c"]["outcomes"] == {"passed": 0, "failed": 1, "error": 1}
    assert cells["sloppy::plain"]["sides"]["c"]["passRate"] == 0.5


def test_run_matrices_count_as_the_history_views_count() -> None:
    # The samples hold run 2 twice (stream and v3 export): shown once, as history counts it.
    viewer = load_viewer([SAMPLES])
    con = history.open_db(schema=False)
    history.scan(con, [SAMPLES])
    expected = {
        (r["runId"], r["resultKey"]): (r["repeats"], r["passCount"])
        for r in history.records(con, "SELECT runId, resultKey, repeats, passCount FROM cells")
    }
    index = viewer.page("index")
    assert index is not None
    assert len(index["matrices"]) == len(history.runs(con)) == 4
    found = {}
    for m, matrix in enumerate(index["matrices"]):
        for key, cell in matrix_cells(viewer, m).items():
            side = cell["sides"]["c"]
            found[(matrix["runId"], key)] = (side["repeats"], side["passCount"])
    assert found == expected
    assert [r["runId"] for r in index["runs"]] == [m["runId"] for m in index["matrices"]]
    assert {(t["runId"], t["variantId"]) for t in index["trend"]} == {
        (r, v) for (r, key) in expected for v in [key.split("::")[0]]
    }


@pytest.mark.slow
def test_a_comparison_matrix_is_the_gates_comparison(small: Viewer, tmp_path: Path) -> None:
    base = small_run(tmp_path / "base")
    viewer = load_viewer([tmp_path / "results"], baseline=[base])
    index = viewer.page("index")
    assert index is not None
    assert index["matrices"][0]["kind"] == "comparison"
    gate = gate_files([base], [tmp_path / "results" / "run.jsonl"], gate=False)
    assert gate.json is not None
    statuses = {c["resultKey"]: c["status"] for c in gate.json["cells"]}
    cells = matrix_cells(viewer, 0)
    assert {k: c["status"] for k, c in cells.items()} == statuses
    cell = viewer.page("cell-0-0")
    assert cell is not None
    assert set(cell["repeats"]) == {"b", "c"}
    assert cell["advisory"]["baseline"]["wilson"] is not None


def test_a_cell_lists_its_repeats_with_metrics_and_intervals(small: Viewer) -> None:
    cells = matrix_cells(small, 0)
    cell = small.page(f"cell-0-{cells['sloppy::edit']['id']}")
    assert cell is not None
    repeats = cell["repeats"]["c"]
    assert [r["repeat"] for r in repeats] == [0, 1]
    expected = derive_behaviors(summary_from_json(SLOPPY))
    for r in repeats:
        assert r["outcome"] == "failed"
        assert r["metrics"] == {m: expected[m] for m in METRIC_NAMES}
        assert r["hasArtifacts"] is True
    assert cell["advisory"]["candidate"]["wilson"] == pytest.approx([0.0, 0.6576], abs=1e-3)
    assert set(cell["advisory"]["behaviors"]) <= set(METRIC_NAMES)


def _repeat_of(viewer: Viewer, key: str) -> dict[str, Any]:
    cells = matrix_cells(viewer, 0)
    cell = viewer.page(f"cell-0-{cells[key]['id']}")
    assert cell is not None
    page = viewer.page(cell["repeats"]["c"][0]["key"])
    assert page is not None
    return page


def test_a_repeat_marks_every_place_behavior_contributions_counts(small: Viewer) -> None:
    page = _repeat_of(small, "sloppy::edit")
    transcript = page["transcript"]
    assert page["transcriptFile"] == "summary.json"
    found = behavior_contributions(summary_from_json(SLOPPY))
    # the totals shown are the row's metrics
    assert {x["metric"]: x["total"] for x in transcript["metrics"]} == page["stored"]
    for metric in transcript["metrics"]:
        places = {
            f"t{x.turn}" if x.call is None else f"t{x.turn}c{x.call}"
            for x in found[metric["metric"]]
        }
        assert set(metric["places"]) == places
    first = transcript["turns"][0]["calls"][0]
    assert first["command"].startswith("sed -i")
    assert "editViaShellCount" in first["metrics"]
    sed, make = first["segments"]
    assert sed["text"].startswith("sed -i") and sed["metrics"] == ["editViaShellCount"]
    assert sed["command"] == "sed" and make["metrics"] == []
    curl = transcript["turns"][1]["calls"][0]["segments"][0]
    assert curl["command"] == "curl" and curl["metrics"] == ["networkCommandCount"]
    assert page["grader"]["text"] == GRADER_LOG
    assert page["grader"]["url"].startswith("files/0/")
    assert {f["name"] for f in page["files"]} == {"summary.json", "verify.log"}


def test_a_repeat_without_artifacts_says_why(tmp_path: Path) -> None:
    write_run(tmp_path, [(row("a", "v", 0, passed=True, turns=CLEAN), None, None)])
    page = _repeat_of(load_viewer([tmp_path]), "v::a")
    assert page["transcript"] is None
    assert "no artifact folder" in page["transcriptError"]
    assert page["stored"] is not None  # the row's metrics are still shown


def test_artifacts_outside_the_results_folders_are_neither_read_nor_linked(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "elsewhere" / "a"
    outside.mkdir(parents=True)
    (outside / "summary.json").write_text(json.dumps(CLEAN))
    results = tmp_path / "results"
    write_run(results, [(row("a", "v", 0, passed=True, artifacts="../elsewhere/a"), None, None)])
    page = _repeat_of(load_viewer([results]), "v::a")
    assert page["transcript"] is None and page["files"] == []
    assert "outside the results folders" in page["transcriptError"]


def test_a_symlink_out_of_the_results_folder_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.log"
    secret.write_text("do not show")
    results = tmp_path / "results"
    write_run(results, [(row("a", "v", 0, passed=False, turns=CLEAN), CLEAN, None)])
    folder = results / "run.artifacts" / "v" / "a" / "0"
    (folder / "verify.log").symlink_to(secret)
    page = _repeat_of(load_viewer([results]), "v::a")
    assert page["grader"] is None
    assert [f["name"] for f in page["files"]] == ["summary.json"]


def test_an_unreadable_summary_is_said_not_shown_empty(tmp_path: Path) -> None:
    write_run(tmp_path, [(row("a", "v", 0, passed=True), {"turns": "no"}, None)])
    page = _repeat_of(load_viewer([tmp_path]), "v::a")
    assert page["transcript"] is None
    assert page["transcriptError"].startswith("summary.json: turns:")


def test_page_keys_name_every_page_and_no_other_key_builds_one(small: Viewer) -> None:
    keys = list(small.page_keys())
    assert keys[0] == "index" and "paperclip" in keys
    assert sum(k.startswith("repeat-") for k in keys) == 8
    for key in keys:
        assert small.page(key) is not None, key
    for bad in [
        "matrix-9",
        "cell-0-99",
        "repeat-x-0",
        "repeat-c-99",
        "../index",
        "index-1",
        "pcase-999",
        "",
    ]:
        assert small.page(bad) is None, bad


@pytest.mark.slow
def test_ten_thousand_repeats_load_without_reading_a_transcript(tmp_path: Path) -> None:
    # 500 cases x 4 variants x 5 repeats. The matrix holds cells, not repeats;
    # a cell holds its own repeats; transcripts are read only for their page.
    lines = []
    for case in range(500):
        for variant in range(4):
            for repeat in range(5):
                r = row(f"case-{case:03d}", f"v{variant}", repeat, passed=(case + repeat) % 3 > 0)
                r["artifacts"] = f"missing/{case}/{variant}/{repeat}"
                lines.append(json.dumps(r))
    (tmp_path / "big.jsonl").write_text("\n".join(lines) + "\n")
    viewer = load_viewer([tmp_path])
    index = viewer.page("index")
    assert index is not None and index["matrices"][0]["repeats"] == 10_000
    matrix = viewer.page("matrix-0")
    assert matrix is not None and len(matrix["cells"]) == 2000
    assert len(json.dumps(matrix)) < 3_000_000
    cell = viewer.page("cell-0-0")
    assert cell is not None and len(cell["repeats"]["c"]) == 5
    assert not any(k.startswith("repeat-") for k in viewer._pages)


def test_the_paperclip_explorer_holds_the_106_cases_in_16_groups(small: Viewer) -> None:
    page = small.page("paperclip")
    assert page is not None
    assert len(page["cases"]) == 106
    assert len({c["group"] for c in page["cases"]}) == 16 == len(page["groups"])
    assert all(c["passed"] for c in page["cases"])
    multi_hop = next(c for c in page["cases"] if c["group"] == "mh")
    case = small.page(f"pcase-{multi_hop['id']}")
    assert case is not None
    assert "combined_multi_hop" in case["assertionClasses"]
    assert case["scenario"] and case["expectedOutcome"] and case["actor"] and case["taskMode"]
    assert case["plan"]["steps"]
    granted = next(c for c in case["configurations"] if c["grants"] == "granted")
    assert granted["calls"] and all(c["decision"] and c["reason"] for c in granted["calls"])
    assert granted["stateDiff"], "a multi-hop plan changes the state"
    assert {"entity", "id", "field", "before", "after"} <= set(granted["stateDiff"][0])
    ungranted = next(c for c in case["configurations"] if c["grants"] == "ungranted")
    assert set(granted["claims"]) > set(ungranted["claims"])


def test_recorded_paperclip_rows_are_shown_and_compared(tmp_path: Path) -> None:
    from capeval.paperclip.derivative import DERIVATIVE_PATH, load_derivative
    from capeval.paperclip.report import write_rows
    from capeval.paperclip.suite import run_suite

    rows = [r for r in load_derivative(REPO / DERIVATIVE_PATH) if r.group == "mh"]
    stream = tmp_path / "rows.jsonl"
    write_rows(run_suite(rows), stream)
    lines = stream.read_text().splitlines()
    tampered = json.loads(lines[0])
    tampered["passed"] = False
    tampered["failures"] = [{"assertionClass": "x", "operation": "y", "message": "<b>no</b>"}]
    lines[0] = json.dumps(tampered)
    stream.write_text("\n".join(lines) + "\n")
    live = tmp_path / "live-rows.jsonl"
    old_row = {"caseId": rows[0].id, "group": "mh", "surface": ["a"], "codexExitCode": 0}
    # Since Claude Code ran beside Codex, a live row names its agent and outcome.
    new_row = {
        "caseId": rows[0].id,
        "group": "mh",
        "surface": ["b"],
        "agentExitCode": 0,
        "agent": "claude-code",
        "grants": "granted",
        "outcome": "error",
    }
    live.write_text(
        json.dumps({**old_row, "passed": True})
        + "\n"
        + json.dumps({**new_row, "passed": False})
        + "\n"
    )
    viewer = load_viewer([], paperclip=[stream, live])
    index = viewer.page("paperclip")
    assert index is not None
    assert index["recordedFiles"] == [str(stream), str(live)]
    first = next(c for c in index["cases"] if c["caseId"] == tampered["caseId"])
    assert first["recorded"] and first["passed"] is False  # the recorded verdict is shown
    case = viewer.page(f"pcase-{first['id']}")
    assert case is not None
    config = next(c for c in case["configurations"] if c["grants"] == tampered["grants"])
    assert config["recorded"]["sameAsComputed"] is False
    assert config["computedPassed"] is True
    others = [c["recorded"]["sameAsComputed"] for c in case["configurations"] if c is not config]
    assert all(others)
    with_live = next(c for c in index["cases"] if c["caseId"] == rows[0].id)
    assert with_live["live"] == 2
    live_case = viewer.page(f"pcase-{with_live['id']}")
    assert live_case is not None
    assert [r["surface"] for r in live_case["live"]] == [["a"], ["b"]]
    assert [(r["agent"], r["outcome"]) for r in live_case["live"]] == [
        (None, None),
        ("claude-code", "error"),
    ]


def test_no_results_still_shows_the_explorer(tmp_path: Path) -> None:
    viewer = load_viewer([tmp_path])
    index = viewer.page("index")
    assert index is not None
    assert index["matrices"] == [] and index["runs"] == []
    explorer = viewer.page("paperclip")
    assert explorer is not None and len(explorer["cases"]) == 106


def test_a_control_plane_journal_shows_each_call_with_its_decision_and_diff(
    tmp_path: Path,
) -> None:
    # The journal the MCP server writes for a live turn, here driven directly.
    import io

    from capeval.paperclip.derivative import DERIVATIVE_PATH, load_derivative
    from capeval.paperclip.fakeagent import derive_plan
    from capeval.paperclip.mcpserver import ControlPlaneServer

    case = next(r for r in load_derivative(REPO / DERIVATIVE_PATH) if r.group == "mh")
    journal = io.StringIO()
    server = ControlPlaneServer(case, journal)
    server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    step = derive_plan(case).steps[0]
    server.handle(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": step.operation, "arguments": step.args},
        }
    )
    server.handle(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "checkout_task", "arguments": {}},
        }
    )
    path = tmp_path / "journal.jsonl"
    path.write_text(journal.getvalue())
    viewer = load_viewer([], paperclip=[path])
    index = viewer.page("paperclip")
    assert index is not None and index["recordedFiles"] == [str(path)]
    entry = next(c for c in index["cases"] if c["caseId"] == case.id)
    assert entry["live"] == 1
    page = viewer.page(f"pcase-{entry['id']}")
    assert page is not None
    (shown,) = page["journals"]
    assert shown["granted"] is True and "checkout_task" not in shown["surface"]
    first, refused = shown["calls"]
    assert first["operation"] == step.operation and first["decision"] == "allowed"
    assert first["ok"] is True and first["stateDiff"]
    assert refused["decision"] == "absent" and refused["reason"] == "control_plane_owned_operation"
    assert refused["onSurface"] is False and refused["stateDiff"] == []


def test_a_comparison_is_judged_by_the_workspaces_bait_policy(tmp_path: Path) -> None:
    # `bait = "report"` (A/B of two builds) shows bait flags without failing on
    # them; the viewer judged every comparison by the strict default instead.
    base = small_run(tmp_path / "base")
    cand = small_run(tmp_path / "results")
    policies = {}
    for policy in ("require", "report"):
        workspace = tmp_path / policy
        (workspace / "evals" / "capability" / "cases").mkdir(parents=True)
        (workspace / "capeval.toml").write_text(f'bait = "{policy}"\n')
        policies[policy] = load_viewer([cand], baseline=[base], root=workspace).page("index")
    strict, lenient = policies["require"], policies["report"]
    assert strict is not None and lenient is not None
    assert strict["matrices"][0]["baitFlags"] == lenient["matrices"][0]["baitFlags"] != []
    assert strict["matrices"][0]["exitCode"] == 3
    assert lenient["matrices"][0]["exitCode"] == 0


def test_a_run_stream_beside_its_v3_export_is_said_to_count_once(tmp_path: Path) -> None:
    # What `capeval view` says after the tutorial: `baseline freeze` leaves a run's
    # stream and its v3 export in the results folder. Its matrix keeps each repeat
    # once, so "both are counted: pass one file per run" would be untrue (no file was
    # passed), as it would be to a user who passed a folder.
    import shutil

    results = tmp_path / "results"
    results.mkdir()
    stream, export = SAMPLES / "run2-dev-flaky.jsonl", SAMPLES / "run2-dev-flaky.json"
    shutil.copy(stream, results / stream.name)
    shutil.copy(export, results / "baseline.json")
    viewer = load_viewer([results])
    index = viewer.page("index")
    assert index is not None
    said = [w for w in index["warnings"] if "holds too" in w]
    assert len(said) == 1 and said[0].endswith(
        "each is counted once, as `capeval history` counts it"
    ), said
    assert "both are counted" not in " ".join(index["warnings"])
    assert [m["repeats"] for m in index["matrices"]] == [
        sum(1 for line in stream.read_text().splitlines() if line.strip())
    ]


def test_error_repeats_are_in_no_pass_rate_of_the_matrix_or_the_trend(tmp_path: Path) -> None:
    # An error-only cell showed "0/0 0%" in red, as if it had failed, and the trend
    # counted error repeats as failures (19/21 where the runs table said 19/20).
    def one(case: str, repeat: int, outcome: str) -> dict[str, Any]:
        return {
            "runId": "r1", "runStartedAt": "2026-12-06T07:00:00Z", "id": case,
            "variantId": "v", "resultKey": f"v::{case}", "repeat": repeat,
            "passed": outcome == "passed", "outcome": outcome,
        }  # fmt: skip

    rows = [one("a", 0, "error"), one("b", 0, "passed"), one("b", 1, "error")]
    stream = tmp_path / "run.jsonl"
    stream.write_text("".join(json.dumps(r) + "\n" for r in rows))
    viewer = load_viewer([stream])
    cells = matrix_cells(viewer, 0)
    assert cells["v::a"]["sides"]["c"]["passRate"] is None
    assert cells["v::a"]["sides"]["c"]["outcomes"]["error"] == 1
    assert cells["v::b"]["sides"]["c"]["passRate"] == 1.0
    index = viewer.page("index")
    assert index is not None
    (trend,) = index["trend"]
    assert (trend["repeats"], trend["passed"], trend["passRate"]) == (1, 1, 1.0)
    (run,) = index["runs"]
    assert run["passRate"] == trend["passRate"]
