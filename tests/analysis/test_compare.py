"""Comparisons through the analysis layer: sides read from files by either reader, advisory
statistics beside the verdicts, comparisons as frames (the rules themselves: tests/core/test_verdict.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capeval.analysis.compare import compare_cells
from capeval.analysis.fastload import load_sides
from capeval.core.cell import BaitDecl, cells_from_rows
from tests.rowfactory import gate_row as row


def compare(base_rows: list[dict[str, Any]], cand_rows: list[dict[str, Any]], **kw: Any) -> Any:
    return compare_cells(cells_from_rows(base_rows), cells_from_rows(cand_rows), **kw)


# -- the DuckDB fast path agrees with the reference reader -------------------


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _write_v3(
    path: Path, rows: list[dict[str, Any]], *, indent: int | None = None, aggregates: Any = ()
) -> Path:
    doc = {
        "version": 3,
        "startedAt": "2026-01-01T00:00:00Z",
        "finishedAt": "2026-01-01T00:10:00Z",
        "provider": "prov",
        "model": "mod",
        "repeats": 3,
        "variants": [{"id": "v1"}],
        "aggregates": list(aggregates),
        "totals": {},
        "cases": rows,
    }
    path.write_text(json.dumps(doc, indent=indent))
    return path


def _crafted_rows() -> list[dict[str, Any]]:
    rows = []
    for r in range(4):
        rows.append(
            row("a", r % 2 == 0, repeat=r, repeatedSearchCount=r, maxTurnDurationMs=100.5 * r)
        )
        rows.append(
            row("b", True, repeat=r, behaviors=None)
            if r == 1
            else row("b", True, repeat=r, networkCommandCount=r)
        )
    legacy = row("c", False, bait={"metric": "networkCommandCount", "threshold": 0})
    del legacy["behaviors"]["taskToolCallCount"]
    legacy["behaviors"]["toolCallsByName"] = {"task": 2, "spawn_agent": 1, "read": 4}
    rows.append(legacy)
    rows.append(row("d", True, provider="other", model="x", maxTurnDurationMs=None))
    # A stream that reported no turn or token counts: unknown, not zero.
    rows.append({**row("d", True, repeat=1), "turnsUsed": None, "tokenUsage": None})
    return rows


@pytest.mark.parametrize("fmt", ["jsonl", "v3-compact", "v3-pretty"])
def test_fast_path_equals_reference_reader(tmp_path: Path, fmt: str) -> None:
    rows = _crafted_rows()
    if fmt == "jsonl":
        path = _write_jsonl(tmp_path / "r.jsonl", rows)
    else:
        path = _write_v3(tmp_path / "r.json", rows, indent=2 if fmt == "v3-pretty" else None)
    (fast,), warnings = load_sides([[path]], with_values=True, fast=True)
    (slow,), _ = load_sides([[path]], with_values=True, fast=False)
    assert warnings == []
    assert fast.keys() == slow.keys() == {"v1::a", "v1::b", "v1::c", "v1::d"}
    for key in fast:
        f, s = fast[key], slow[key]
        assert (f.repeats, f.passCount, f.resolved, f.bait, f.tier) == (
            s.repeats,
            s.passCount,
            s.resolved,
            s.bait,
            s.tier,
        )
        assert dict(f.medians) == dict(s.medians)
        headline = ("durationMs", "turnsUsed", "tokenInput")
        counts = ("durationReported", "turnsReported", "tokenReported")
        assert [getattr(f, n) for n in headline + counts] == [
            getattr(s, n) for n in headline + counts
        ]
        assert f.values is not None and s.values is not None
        assert {m: sorted(v) for m, v in f.values.items()} == {
            m: sorted(v) for m, v in s.values.items()
        }
    # The legacy row's task count is backfilled from toolCallsByName (task + spawn_agent).
    assert fast["v1::c"].medians["taskToolCallCount"] == 3
    assert fast["v1::a"].medians["maxTurnDurationMs"] == 150.75
    d = fast["v1::d"]
    assert (d.durationReported, d.turnsReported, d.tokenReported) == (2, 1, 1)
    assert (d.durationMs, d.turnsUsed, d.tokenInput) == (2000, 3, 10)


def _odd(case: str, **changes: Any) -> list[dict[str, Any]]:
    """Two rows of one cell, the second with `changes` applied (dotted keys reach behaviors)."""
    good, odd = row(case, True, repeat=0), row(case, False, repeat=1, repeatedSearchCount=4)
    for key, value in changes.items():
        target, _, field = key.rpartition(".")
        (odd[target] if target else odd)[field] = value
    return [good, odd]


def _with_key(case: str, key: str) -> list[dict[str, Any]]:
    rows = _odd(case)
    for r in rows:
        r["resultKey"] = key
    return rows


ODD_ROWS = {
    "passed as the string true": _odd("a", passed="true"),
    "passed as 1": _odd("a", passed=1),
    "an empty id": _odd("a", id=""),
    "an empty resultKey": _odd("a", resultKey=""),
    "a NaN metric": _odd("a", **{"behaviors.repeatedSearchCount": float("nan")}),
    "an infinite metric": _odd("a", **{"behaviors.maxTurnDurationMs": float("inf")}),
    "taskToolCallCount null": _odd("a", **{"behaviors.taskToolCallCount": None}),
    "a case id holding ::": [{**r, "id": "a::b", "resultKey": "v1::a::b"} for r in _odd("x")],
    "a resultKey that is not variant::id": _with_key("a", "v1::other"),
    "a variantId that disagrees with the resultKey": [
        {**r, "variantId": "elsewhere"} for r in _odd("a")
    ],
    "no variantId and a case id holding ::": [
        {k: v for k, v in {**r, "id": "a::b", "resultKey": "d::a::b"}.items() if k != "variantId"}
        for r in _odd("x")
    ],
    "no resultKey, one repeat on another model": [
        {k: v for k, v in r.items() if k != "resultKey"} for r in _odd("a", model="other")
    ],
    "a bait threshold given as text": _odd(
        "a", bait={"metric": "networkCommandCount", "threshold": "5"}
    ),
    "two rows with different baits": [
        {**_odd("a")[0], "bait": {"metric": "networkCommandCount", "threshold": 0}},
        {**_odd("a")[1], "bait": {"metric": "networkCommandCount", "threshold": 1}},
    ],
    "an integer metric past the float range": _odd(
        "a", **{"behaviors.networkCommandCount": 10**400}
    ),
}


@pytest.mark.parametrize("name", sorted(ODD_ROWS))
def test_fast_path_reads_odd_rows_as_the_reference_reader_does(tmp_path: Path, name: str) -> None:
    """The gate's answer must not depend on which reader ran: the fast path gives way
    (or agrees) wherever the reference reader refuses or reads a value its own way."""
    from capeval.results.errors import ResultFileError

    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ODD_ROWS[name]))
    answers = []
    for fast in (True, False):
        try:
            (cells,), _ = load_sides([[path]], fast=fast)
        except ResultFileError as exc:
            answers.append(("error", str(exc)))
            continue
        answers.append(
            (
                "cells",
                {
                    k: (c.variantId, c.caseId, c.repeats, c.passCount, dict(c.medians), c.bait)
                    for k, c in cells.items()
                },
            )
        )
    assert answers[0] == answers[1]


def test_v3_without_a_version_is_refused_by_either_reader(tmp_path: Path) -> None:
    from capeval.results.errors import ResultFileError

    path = tmp_path / "nover.json"
    path.write_text(json.dumps({"cases": [row("a")]}))
    for fast in (True, False):
        with pytest.raises(ResultFileError, match="version"):
            load_sides([[path]], fast=fast)


def test_hand_edited_v3_aggregates_are_ignored(tmp_path: Path) -> None:
    rows = [row("a", r == 0, repeat=r, repeatedSearchCount=7) for r in range(3)]
    lie = {
        "resultKey": "v1::a",
        "id": "a",
        "variantId": "v1",
        "repeats": 3,
        "passCount": 3,
        "passRate": 1,
        "behaviorStats": {"repeatedSearchCount": {"min": 0, "median": 0, "max": 0}},
    }
    path = _write_v3(tmp_path / "edited.json", rows, aggregates=[lie])
    for fast in (True, False):
        (cells,), _ = load_sides([[path]], fast=fast)
        assert cells["v1::a"].passCount == 1
        assert cells["v1::a"].medians["repeatedSearchCount"] == 7


def test_v3_whose_cases_is_not_last_still_reads(tmp_path: Path) -> None:
    rows = [row("a", repeat=r) for r in range(2)]
    doc = {"version": 3, "cases": rows, "aggregates": [], "totals": {"total": 2}}
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(doc))
    (cells,), _ = load_sides([[path]])
    assert cells["v1::a"].repeats == 2


def test_several_files_on_one_side_pool_their_repeats(tmp_path: Path) -> None:
    one = _write_jsonl(tmp_path / "1.jsonl", [row("a", True, repeat=0, repeatedSearchCount=1)])
    two = _write_v3(tmp_path / "2.json", [row("a", False, repeat=1, repeatedSearchCount=2)])
    (cells,), _ = load_sides([[one, two]])
    assert (cells["v1::a"].repeats, cells["v1::a"].passCount) == (2, 1)
    assert cells["v1::a"].medians["repeatedSearchCount"] == 1.5


def test_v3_files_copied_side_by_side_keep_their_sides(tmp_path: Path) -> None:
    """The v3 copies run on a thread pool: each file's rows must stay on its side and cell."""
    files = []
    for i, (case, repeats) in enumerate([("a", 400), ("b", 3), ("c", 40), ("d", 1)]):
        rows = [
            row(case, r % (i + 2) == 0, repeat=r, repeatedSearchCount=i) for r in range(repeats)
        ]
        files.append(_write_v3(tmp_path / f"{i}.json", rows))
    fast, _ = load_sides([[files[0], files[1]], [files[2], files[3]]], fast=True)
    slow, _ = load_sides([[files[0], files[1]], [files[2], files[3]]], fast=False)
    assert [sorted(side) for side in fast] == [["v1::a", "v1::b"], ["v1::c", "v1::d"]]
    for f_side, s_side in zip(fast, slow, strict=True):
        for key, cell in f_side.items():
            assert (cell.repeats, cell.passCount, cell.medians) == (
                s_side[key].repeats,
                s_side[key].passCount,
                s_side[key].medians,
            )
    assert fast[0]["v1::a"].repeats == 400 and fast[1]["v1::c"].medians["repeatedSearchCount"] == 2


def test_v3_copies_are_removed_whether_duckdb_reads_them_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from capeval.results.errors import ResultFileError

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    good = _write_v3(tmp_path / "good.json", [row("a", repeat=r) for r in range(3)])
    bad = tmp_path / "bad.json"  # a row DuckDB refuses: the reference reader explains it
    bad.write_text('{"version": 3, "cases": [{"resultKey": "v1::a", "id": "a", "passed": tru}]}')
    load_sides([[good], [good]])
    with pytest.raises(ResultFileError, match=r"bad\.json"):
        load_sides([[good], [bad]])
    assert list(scratch.iterdir()) == []


def test_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "torn.jsonl", [row("a", True, repeat=0), row("a", False, repeat=1)]
    )
    with open(path, "a") as handle:
        handle.write('{"resultKey": "v1::a", "id": "a", "pass')
    (cells,), warnings = load_sides([[path]])
    assert cells["v1::a"].repeats == 2
    assert len(warnings) == 1 and "torn last line" in warnings[0] and "torn.jsonl:3" in warnings[0]


def test_a_bad_row_in_the_middle_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    from capeval.results.errors import ResultFileError

    path = tmp_path / "bad.jsonl"
    good = json.dumps(row("a"))
    bad = json.dumps({**row("a", repeat=1), "passed": "yes"})
    path.write_text(f"{good}\n{bad}\n{good}\n")
    with pytest.raises(ResultFileError, match=r"bad\.jsonl:2: field 'passed'"):
        load_sides([[path]])


def test_frames_give_the_same_comparison_as_files(real_results: Path) -> None:
    """The notebook path (polars frames) and the gate path (DuckDB) agree on the real files."""
    from capeval.analysis.cells import cell_frame
    from capeval.analysis.compare import behavior_frame, compare_frames, comparison_frame
    from capeval.analysis.frame import load_frame

    base_path, cand_path = (
        real_results / "baseline-0286-grok.json",
        real_results / "after-0286-grok.json",
    )
    from_frames = compare_frames(
        load_frame([base_path]), load_frame([cand_path]), allow_provider_fallback=True
    )
    (base, cand), _ = load_sides([[base_path], [cand_path]])
    from_files = compare_cells(base, cand, allow_provider_fallback=True)
    assert from_frames.to_json() == from_files.to_json()
    frame = comparison_frame(from_files)
    assert frame.height == 7 and frame.filter(status="improved")["caseId"].to_list() == [
        "complex-jwt"
    ]
    regress = behavior_frame(from_files).filter(verdict="regress")
    assert regress.select("caseId", "metric").rows() == [("web-bait", "longestToolOnlyStreak")]
    cells = cell_frame(base)
    assert cells.filter(caseId="complex-jwt")["passCount"].item() == 1


def test_a_v3_file_of_another_version_is_refused_by_name(tmp_path: Path) -> None:
    from capeval.results.errors import ResultFileError

    path = tmp_path / "old.json"
    path.write_text(json.dumps({"version": 2, "cases": [row("a")]}))
    with pytest.raises(ResultFileError, match=r"old\.json.*version"):
        load_sides([[path]])


@pytest.mark.parametrize("fmt", ["jsonl", "v3-compact", "v3-pretty"])
def test_clean_files_never_fall_back_to_the_reference_reader(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Otherwise the fast path could be broken and every equality test above still pass."""
    import capeval.results.load

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("fell back to the reference reader")

    monkeypatch.setattr(capeval.results.load, "read_rows", refuse)  # mock: detects the slow path
    rows = _crafted_rows()  # includes a legacy row without taskToolCallCount
    if fmt == "jsonl":
        path = _write_jsonl(tmp_path / "r.jsonl", rows)
    else:
        path = _write_v3(tmp_path / "r.json", rows, indent=2 if fmt == "v3-pretty" else None)
    (cells,), _ = load_sides([[path]], with_values=True)
    assert cells["v1::c"].medians["taskToolCallCount"] == 3


def test_a_line_that_is_not_an_object_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    """DuckDB reads records only; the reference reader then names the line."""
    from capeval.results.errors import ResultFileError

    path = tmp_path / "array.jsonl"
    good = json.dumps(row("a"))
    path.write_text(f"{good}\n[1, 2]\n{good}\n")
    with pytest.raises(ResultFileError, match=r"array\.jsonl:2"):
        load_sides([[path]])


SAMPLE_RUN = Path(__file__).resolve().parents[2] / "evals/capability/samples/run2-dev-flaky"


@pytest.mark.parametrize("fast", [True, False])
def test_a_runs_stream_beside_its_v3_export_is_warned_about(fast: bool) -> None:
    # Both files hold the same 42 repeats: every one would count twice, silently.
    paths = [SAMPLE_RUN.with_suffix(".json"), SAMPLE_RUN.with_suffix(".jsonl")]
    (cells,), warnings = load_sides([paths], fast=fast)
    assert sum(c.repeats for c in cells.values()) == 84  # still counted: data is never dropped
    assert len(warnings) == 1 and "run2-dev-flaky.json" in warnings[0]
    assert "pass one file per run" in warnings[0]
    (alone,), quiet = load_sides([paths[1:]], fast=fast)
    assert quiet == [] and sum(c.repeats for c in alone.values()) == 42


def test_text_after_a_v3_document_is_refused_by_either_reader(tmp_path: Path) -> None:
    from capeval.results.errors import ResultFileError

    path = tmp_path / "trailing.json"
    path.write_text(json.dumps({"version": 3, "cases": [row("a")]}) + " xyz\n")
    for fast in (True, False):
        with pytest.raises(ResultFileError, match="not valid JSON"):
            load_sides([[path]], fast=fast)


@pytest.mark.parametrize(
    "declared",
    [
        {"metric": "networkCommandCount", "threshold": "0"},
        {"metric": "networkCommandCount"},
        "networkCommandCount:0",
        {"threshold": 0},
    ],
)
@pytest.mark.parametrize("fast", [True, False])
def test_a_row_bait_that_is_no_declaration_is_warned_about_by_either_reader(
    declared: Any, fast: bool, tmp_path: Path
) -> None:
    # A string threshold made the bait vanish without a word: a bait case
    # whose misbehavior the baseline reproduces gated clean.
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row("a", bait=declared, networkCommandCount=0)) + "\n")
    (base, cand), _ = load_sides([[path], [path]], fast=fast)
    result = compare_cells(base, cand)
    expected = (
        f"v1::a: its baseline and candidate rows declare bait {json.dumps(declared)}, which "
        "is no bait (it needs a "
        "metric name and a numeric threshold; fix the rows or pass --bait a=METRIC:THRESHOLD), "
        "so it can never flag or prove anything"
    )
    assert result.warnings == [expected]
    # A declaration from elsewhere judges the cell, and then nothing is passed over.
    flagged = compare_cells(base, cand, bait_overrides=["a=networkCommandCount:0"])
    assert flagged.warnings == [] and flagged.bait_flags


def test_a_frame_without_baits_gives_cells_without_unread_baits() -> None:
    from capeval.analysis.cells import cells_from_frame
    from capeval.analysis.frame import rows_to_frame

    cells = cells_from_frame(rows_to_frame([row("a")]))
    assert cells["v1::a"].bait is None and cells["v1::a"].baitUnread is None


@pytest.mark.parametrize(
    ("name", "decoy"), [("run[1].jsonl", "run1.jsonl"), ("c*.jsonl", "cx.jsonl")]
)
def test_a_file_name_duckdb_would_glob_reads_that_file_and_no_other(
    tmp_path: Path, name: str, decoy: str
) -> None:
    """DuckDB expands `*`, `?` and `[...]` in paths: the gate must judge the file
    it was given, not a neighbour whose name the pattern happens to match."""
    path = _write_jsonl(tmp_path / name, [row("a", True)])
    _write_jsonl(tmp_path / decoy, [row("a", False, repeat=r) for r in range(3)])
    for fast in (True, False):
        (cells,), _ = load_sides([[path]], fast=fast)
        assert (cells["v1::a"].repeats, cells["v1::a"].passCount) == (1, 1)


def test_a_pipe_is_read_whole_once() -> None:
    """`--candidate <(zcat run.jsonl.gz)`: a pipe can be read once, so the fast
    path must not consume its head before the reference reader reads it."""
    import os

    read_end, write_end = os.pipe()
    try:
        text = "".join(json.dumps(row("a", r != 1, repeat=r)) + "\n" for r in range(3))
        os.write(write_end, text.encode())
        os.close(write_end)
        (cells,), _ = load_sides([[Path(f"/dev/fd/{read_end}")]])
    finally:
        os.close(read_end)
    assert (cells["v1::a"].repeats, cells["v1::a"].passCount) == (3, 2)


def test_rows_that_disagree_on_the_bait_use_the_newest_run_in_any_order(tmp_path: Path) -> None:
    # Two baseline runs, the case's bait threshold edited in between: which
    # declaration counts must not depend on the order the files are given.
    def run(started: str, threshold: int) -> list[dict[str, Any]]:
        bait = {"metric": "networkCommandCount", "threshold": threshold}
        # On the row itself: gate_row's keywords are behavior metrics.
        return [
            {**row("a", repeat=r, bait=bait, networkCommandCount=1), "runStartedAt": started}
            for r in range(3)
        ]

    old, new = run("2026-11-01T00:00:00Z", 0), run("2026-11-02T00:00:00Z", 5)
    for rows in (old + new, new + old, (old + new)[::-1]):
        assert cells_from_rows(rows)["v1::a"].bait == BaitDecl("networkCommandCount", 5)
    files = []
    for name, rows in (("old.jsonl", old), ("new.jsonl", new)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        files.append(tmp_path / name)
    cand = tmp_path / "cand.jsonl"
    cand.write_text(json.dumps(row("a", networkCommandCount=0)) + "\n")
    from capeval.analysis.gatecheck import gate_files

    codes = {gate_files(order, cand).exit_code for order in (files, files[::-1])}
    assert codes == {3}  # median 1 does not exceed the newest threshold, 5


@pytest.mark.parametrize(
    "decl", [{"metric": "networkCommandCount"}, ("networkCommandCount",), 0, None]
)
def test_malformed_bait_override_is_a_clear_error(tmp_path: Path, decl: Any) -> None:
    from capeval.analysis.gatecheck import gate_files

    with pytest.raises(ValueError, match="bait override for 'a': expected a BaitDecl"):
        compare([row("a")], [row("a")], bait_overrides={"a": decl})
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(row("a")) + "\n")
    result = gate_files(path, path, bait_overrides={"a": decl})
    assert result.exit_code == 2 and "bait override for 'a'" in result.text


def test_gate_files_takes_root_as_a_string(tmp_path: Path) -> None:
    from capeval.analysis.gatecheck import gate_files

    (tmp_path / "evals" / "capability" / "cases").mkdir(parents=True)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(row("a")) + "\n")
    assert gate_files(path, path, root=str(tmp_path)).exit_code == 0


def test_compare_frames_names_what_is_wrong_with_its_input(tmp_path: Path) -> None:
    from capeval.analysis.compare import compare_frames
    from capeval.analysis.frame import load_frame

    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(row("a")) + "\n")
    frame = load_frame(path)
    with pytest.raises(TypeError, match=r"expected a polars DataFrame .* found list"):
        compare_frames([], frame)
    with pytest.raises(ValueError, match=r"the frame lacks column\(s\) id, passed"):
        compare_frames(frame.drop("id", "passed"), frame)
    with pytest.raises(ValueError, match=r"lacks column\(s\) variantId"):
        compare_frames(frame, frame.drop("variantId", "resultKey"))
    # A variant read from the resultKey alone is enough.
    assert compare_frames(frame.drop("variantId"), frame).summary["unchanged"] == 1


@pytest.mark.parametrize(
    "header",
    [
        pytest.param(b'{"version": 3 "cases": ', id="no-comma-between-members"),
        pytest.param(b'{"version": 3, 7: 1, "cases": ', id="non-string-key"),
        pytest.param(b'{"version": 3, "note": "\xff", "cases": ', id="not-utf8"),
        pytest.param(b'{"version": 3, "n": ' + b"9" * 5000 + b', "cases": ', id="huge-integer"),
        pytest.param(
            b'{"version": 3, "n": ' + b"[" * 5000 + b"]" * 5000 + b', "cases": ', id="deep"
        ),
    ],
)
def test_a_v3_header_python_cannot_read_is_refused_by_either_reader(
    tmp_path: Path, header: bytes
) -> None:
    """DuckDB only sees the `cases` array: the header walker must give way
    wherever the reference reader refuses the document, and never crash."""
    from capeval.results.errors import ResultFileError

    path = tmp_path / "header.json"
    path.write_bytes(header + json.dumps([row("a")]).encode() + b"}")
    for fast in (True, False):
        with pytest.raises(ResultFileError, match=r"header\.json: "):
            load_sides([[path]], fast=fast)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "1e400"])
def test_headline_sums_skip_numbers_that_are_not_finite_in_either_reader(
    tmp_path: Path, token: str
) -> None:
    good = {**row("a"), "durationMs": 5, "turnsUsed": 2, "tokenUsage": {"input": 3}}
    odd = {**row("a", repeat=1), "durationMs": "@", "turnsUsed": "@", "tokenUsage": {"input": "@"}}
    path = tmp_path / "odd.jsonl"
    text = json.dumps(odd).replace('"@"', token)
    path.write_text(f"{json.dumps(good)}\n{text}\n")
    for fast in (True, False):
        (cells,), _ = load_sides([[path]], fast=fast)
        cell = cells["v1::a"]
        assert (cell.durationMs, cell.turnsUsed, cell.tokenInput) == (5, 2, 3)
        assert (cell.durationReported, cell.turnsReported, cell.tokenReported) == (1, 1, 1)
