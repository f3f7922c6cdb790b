"""Result rows as a polars frame: one row per repeat, a schema that does not drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from capeval.analysis.frame import FIXED_COLUMNS, load_frame, rows_to_frame
from capeval.core.metrics import METRIC_NAMES
from capeval.results.columns import ColumnTypeError
from capeval.results.jsonl import JsonlWriter
from capeval.results.v3 import write_v3


def make_row(case: str = "c", repeat: int = 0, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "resultKey": f"v::{case}",
        "id": case,
        "variantId": "v",
        "passed": True,
        "repeat": repeat,
        "durationMs": 1200,
        "tokenUsage": {"input": 10, "output": 2, "cacheRead": 3, "cacheWrite": 4, "thinking": 5},
        "behaviors": {
            "shellCommandCount": 2,
            "maxTurnDurationMs": 900,
            "taskToolCallCount": 1,
            "toolCallsByName": {"run_shell": 2},
        },
    }
    row.update(extra)
    return row


def test_one_frame_row_per_repeat_with_flattened_fields() -> None:
    frame = rows_to_frame([make_row(repeat=0), make_row(repeat=1, passed=False)], source="x.jsonl")
    assert frame.height == 2
    first = frame.row(0, named=True)
    assert first["shellCommandCount"] == 2
    assert first["maxTurnDurationMs"] == 900.0
    assert (first["tokenInput"], first["tokenOutput"], first["tokenCacheRead"]) == (10, 2, 3)
    assert (first["tokenCacheWrite"], first["tokenThinking"]) == (4, 5)
    assert json.loads(first["toolCallsByName"]) == {"run_shell": 2}
    assert first["source"] == "x.jsonl"
    assert frame["passed"].to_list() == [True, False]
    assert "behaviors" not in frame.columns and "tokenUsage" not in frame.columns


def test_null_behaviors_give_null_metrics_not_zeros() -> None:
    frame = rows_to_frame([make_row(behaviors=None, tokenUsage=None)])
    row = frame.row(0, named=True)
    assert row["behaviorsCaptured"] is False
    assert all(row[m] is None for m in METRIC_NAMES)
    assert row["tokenInput"] is None


def test_schema_is_the_same_whatever_fields_rows_carry() -> None:
    sparse = rows_to_frame([{"id": "a", "variantId": "v", "passed": True}])
    full = rows_to_frame(
        [make_row(runId="r1", bait={"metric": "networkCommandCount", "threshold": 0})]
    )
    assert sparse.schema == full.schema
    assert list(sparse.columns) == list(FIXED_COLUMNS)
    assert sparse["runId"].dtype == pl.String and sparse["runId"][0] is None
    assert full["runId"][0] == "r1"
    assert (full["baitMetric"][0], full["baitThreshold"][0]) == ("networkCommandCount", 0.0)
    assert pl.concat([sparse, full]).height == 2


def test_unknown_fields_become_extra_columns() -> None:
    frame = rows_to_frame(
        [make_row(score=1, label="x", meta={"k": 1}), make_row(score=2.5, label=None)]
    )
    assert frame["score"].dtype == pl.Float64 and frame["score"].to_list() == [1.0, 2.5]
    assert frame["label"].to_list() == ["x", None]
    assert json.loads(frame["meta"][0]) == {"k": 1}


def test_wrong_type_in_known_column_names_source_and_field() -> None:
    with pytest.raises(ColumnTypeError, match=r"f\.jsonl \(row 1, case 'b'\): field 'turnsUsed'"):
        rows_to_frame(
            [make_row("a", turnsUsed=3), make_row("b", turnsUsed="many")], source="f.jsonl"
        )


def test_integral_floats_fit_integer_columns() -> None:
    frame = rows_to_frame([make_row(turnsUsed=3.0)])
    assert frame["turnsUsed"].dtype == pl.Int64 and frame["turnsUsed"][0] == 3


def test_load_frame_mixes_formats_and_records_source(tmp_path: Path) -> None:
    jsonl = tmp_path / "new.jsonl"
    with JsonlWriter(jsonl) as writer:
        writer.write(make_row("a", runId="run-1", agent="scripted"))
    v3 = tmp_path / "old.json"
    old = make_row("b")
    old["behaviors"] = {"shellCommandCount": 1, "toolCallsByName": {"task": 3}}
    write_v3(v3, [old], started_at=None, finished_at=None)
    frame = load_frame([jsonl, v3])
    assert frame["source"].to_list() == [str(jsonl), str(v3)]
    # A v3 row names no run: it is its file's run, undated here (no startedAt).
    assert frame["runId"].to_list() == ["run-1", "old@"]
    assert frame["agent"].to_list() == ["scripted", None]
    # The older v3 row is backfilled on load.
    assert frame["taskToolCallCount"].to_list() == [1, 3]


def test_load_frame_accepts_one_path(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    with JsonlWriter(path) as writer:
        writer.write(make_row())
    assert load_frame(path).height == 1


# -- the fast path: same frame as the reference reader, or the reference reads ------------

from polars.testing import assert_frame_equal  # noqa: E402

from capeval.analysis import frame as frame_module  # noqa: E402
from capeval.analysis import framefast  # noqa: E402
from capeval.results.errors import ResultFileError  # noqa: E402


@pytest.fixture(autouse=True)
def fast_path_for_small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test files are small; load_frame would read them all by the reference."""
    monkeypatch.setattr(frame_module, "FAST_MIN_BYTES", 0)


def same_frame(paths: list[Path], *, fast: bool = True) -> tuple[pl.DataFrame, list[str]]:
    """Load both ways, assert the frames are equal; `fast` says whether every file
    must have taken the fast path (False: every file must have fallen back)."""
    taken = framefast.read_fast(paths)
    assert sorted(taken) == (list(range(len(paths))) if fast else [])
    got_warnings: list[str] = []
    quick = load_frame(paths, on_warning=got_warnings.append)
    ref_warnings: list[str] = []
    reference = load_frame(paths, on_warning=ref_warnings.append, fast=False)
    assert_frame_equal(quick, reference)
    assert got_warnings == ref_warnings
    return quick, got_warnings


def falls_back_alike(path: Path, error: type[Exception]) -> None:
    """The fast path declines the file; load_frame then gives the reference's
    frame, or raises the reference's `error` with the same message."""
    assert framefast.read_fast([path]) == {}
    try:
        expected = load_frame([path], fast=False)
    except error as exc:
        with pytest.raises(error) as raised:
            load_frame([path])
        assert str(raised.value) == str(exc)
    else:
        assert_frame_equal(load_frame([path]), expected)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def runner_rows(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """Rows shaped like the runner's, with the variety real runs have."""
    import random

    rng = random.Random(seed)
    rows = []
    for i in range(n):
        case = f"case-{i % 5}"
        behaviors: dict[str, Any] | None = {m: rng.randint(0, 9) for m in METRIC_NAMES}
        assert behaviors is not None
        behaviors["maxTurnDurationMs"] = rng.choice([1200, 1234.5])
        behaviors["toolCallsByName"] = {"run_shell": rng.randint(0, 3), "lire_fichier": 1}
        if i % 7 == 0:
            behaviors = None
        rows.append(
            make_row(
                case,
                repeat=i // 5,
                variantId="prov:model",
                resultKey=f"prov:model::{case}",
                passed=rng.random() < 0.5,
                title=f'Case {i % 5} — «quoted "text"»\ttab \U0001f600\x01',
                durationMs=rng.choice([1000, 1500.25]),
                turnsUsed=rng.randint(1, 40),
                error=None if i % 3 else "agent exited 1: \u00e9 \\ done / {json}",
                behaviors=behaviors,
                tokenUsage=None if i % 11 == 0 else {"input": i, "output": 2, "cacheRead": 0},
                bait={"metric": "networkCommandCount", "threshold": 0} if i % 4 == 0 else None,
                runId="20260101T000000Z-test",
                gitDirty=i % 2 == 0,
            )
        )
    return rows


def test_fast_path_equals_reference_on_runner_rows(tmp_path: Path) -> None:
    frame, _ = same_frame([write_jsonl(tmp_path / "run.jsonl", runner_rows(300))])
    assert frame.height == 300
    assert frame["behaviorsCaptured"].sum() < 300  # some null behaviors were read


def test_fast_path_equals_reference_on_real_results(real_results: Path, tmp_path: Path) -> None:
    files = sorted(real_results.glob("*.json"))
    # As stored, `cases` is not the last key: the reference reads them.
    same_frame(files, fast=False)
    # The same rows as JSON Lines and as capeval-written v3 take the fast path.
    rewritten = []
    for path in files:
        from capeval.results.load import read_rows

        rows = read_rows(path)
        rewritten.append(write_jsonl(tmp_path / f"{path.stem}.jsonl", rows))
        write_v3(tmp_path / path.name, rows, started_at=None, finished_at=None)
        rewritten.append(tmp_path / path.name)
    frame, _ = same_frame(rewritten)
    assert "providerFallback" in frame.columns  # an extra field real files carry


def test_fast_path_backfills_legacy_rows(tmp_path: Path) -> None:
    legacy = make_row("old", behaviors={"shellCommandCount": 1, "toolCallsByName": None})
    rows = [
        make_row("a", behaviors={"toolCallsByName": {"task": 2, "spawn_agent": 3, "x": 1}}),
        make_row("b", behaviors={"toolCallsByName": {"task": 2.0, "spawn_agent": True}}),
        make_row("c", behaviors={"shellCommandCount": 4}),
        legacy,
    ]
    frame, _ = same_frame([write_jsonl(tmp_path / "old.jsonl", rows)])
    assert frame["taskToolCallCount"].to_list() == [5, 0, 0, 0]


def test_explicit_null_task_count_is_backfilled_like_a_missing_one(tmp_path: Path) -> None:
    # DuckDB cannot tell a null from a missing key; both readers (and both
    # paths of each) backfill it, so no verdict depends on the path.
    rows = [
        make_row("a", behaviors={"toolCallsByName": {"task": 2}}),
        make_row("b", behaviors={"taskToolCallCount": None, "toolCallsByName": {"task": 2}}),
    ]
    frame, _ = same_frame([write_jsonl(tmp_path / "mixed.jsonl", rows)])
    assert frame["taskToolCallCount"].to_list() == [2, 2]


def test_fast_path_null_behaviors_and_sparse_rows(tmp_path: Path) -> None:
    rows = [
        make_row("a", behaviors=None, tokenUsage=None, bait=None),
        {"id": "b", "variantId": "v", "passed": False},
        make_row("c", behaviors={}),
    ]
    frame, _ = same_frame([write_jsonl(tmp_path / "sparse.jsonl", rows)])
    assert frame["behaviorsCaptured"].to_list() == [False, False, True]


def test_fast_path_mixes_jsonl_and_v3_in_order(tmp_path: Path) -> None:
    files = []
    for i in range(6):
        rows = runner_rows(20, seed=i)
        if i % 2:
            write_v3(tmp_path / f"r{i}.json", rows, started_at=None, finished_at=None)
            files.append(tmp_path / f"r{i}.json")
        else:
            files.append(write_jsonl(tmp_path / f"r{i}.jsonl", rows))
    files.append(files[0])  # the same file twice is read once (with a warning)
    write_v3(tmp_path / "empty.json", [], started_at=None, finished_at=None)
    files.append(tmp_path / "empty.json")
    frame, found = same_frame(files)
    assert frame["source"].unique(maintain_order=True).to_list() == [str(f) for f in files[:6]]
    assert frame.height == 6 * 20
    assert any("read once" in message for message in found)


def test_torn_last_line_falls_back_and_still_warns(tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", runner_rows(10))
    # Another run: two files holding the same repeats would rightly warn too.
    torn = write_jsonl(tmp_path / "torn.jsonl", [{**r, "runId": "r2"} for r in runner_rows(10)])
    with open(torn, "a") as handle:
        handle.write('{"id": "half", "pass')
    assert sorted(framefast.read_fast([good, torn])) == [0]
    quick_warnings: list[str] = []
    quick = load_frame([good, torn], on_warning=quick_warnings.append)
    ref_warnings: list[str] = []
    reference = load_frame([good, torn], on_warning=ref_warnings.append, fast=False)
    assert_frame_equal(quick, reference)
    assert quick_warnings == ref_warnings
    assert len(quick_warnings) == 1 and "torn last line" in quick_warnings[0]
    assert quick.height == 20


def test_duplicate_repeats_fall_back_and_warn(tmp_path: Path) -> None:
    rows = [make_row("a", repeat=0), make_row("a", repeat=0), make_row("b", repeat=None)]
    _, found = same_frame([write_jsonl(tmp_path / "dup.jsonl", rows)], fast=False)
    assert len(found) == 1 and "repeats v::a repeat 0" in found[0]


@pytest.mark.parametrize(
    "field, value",
    [
        ("turnsUsed", "3"),  # DuckDB would cast it; the reference refuses
        ("turnsUsed", 3.5),
        ("turnsUsed", True),
        ("overBudget", 1),
        ("durationMs", "12"),
        ("provider", 5),  # dumped as text by the reference
        ("error", {"message": "boom"}),
    ],
)
def test_odd_types_fall_back_with_the_reference_error(
    tmp_path: Path, field: str, value: Any
) -> None:
    path = write_jsonl(tmp_path / "odd.jsonl", [make_row("a"), make_row("b", **{field: value})])
    falls_back_alike(path, ColumnTypeError)


def test_integral_float_in_integer_column_matches(tmp_path: Path) -> None:
    # 3.0 turns is 3 to the type rule, in SQL as in Python: read exactly by DuckDB.
    path = write_jsonl(tmp_path / "f.jsonl", [make_row("a", turnsUsed=3.0, repeat=0)])
    frame, _ = same_frame([path])
    assert frame["turnsUsed"].to_list() == [3]


@pytest.mark.parametrize(
    "text",
    [
        '{"id": "a", "variantId": "v", "passed": true, "tags": [1, 2,]}\n',  # trailing comma
        '{"id": "a", "variantId": "v", "passed": true, "x": inf}\n',  # bare inf
        '{"id": "a", "variantId": "v", "passed": "yes"}\n',  # row_problem
        '{"id": "", "variantId": "v", "passed": true}\n',
        '{"id": "a", "passed": true}\n',
        '{"id": "a", "variantId": "v", "passed": true, "id": "b"}\n',  # duplicate key
    ],
)
def test_rows_the_reference_rejects_are_rejected_alike(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "ok", "variantId": "v", "passed": true}\n' + text)
    falls_back_alike(path, ResultFileError)


def test_extra_fields_unify_across_files_like_the_reference(tmp_path: Path) -> None:
    a = write_jsonl(
        tmp_path / "a.jsonl",
        [make_row("a", score=1, flag=True, note="x", mixed=1, nested={"k": [1, 2.5]}, empty=None)],
    )
    b = write_jsonl(
        tmp_path / "b.jsonl",
        [make_row("b", score=2.5, flag=None, note="y\\n", mixed="s", nested=[True])],
    )
    c = write_jsonl(tmp_path / "c.jsonl", [make_row("c", mixed=2.0, big=10**20, neg=-0)])
    frame, _ = same_frame([a, b], fast=True)
    assert frame["score"].dtype == pl.Float64 and frame["mixed"].to_list() == ["1", "s"]
    assert frame["empty"].dtype == pl.String
    # `c` holds an integer too big for the fast path: read by the reference, merged alike.
    assert sorted(framefast.read_fast([a, b, c])) == [0, 1]
    quick, reference = load_frame([a, b, c]), load_frame([a, b, c], fast=False)
    assert_frame_equal(quick, reference)
    assert quick["mixed"].to_list() == ["1", "s", "2.0"]


def test_fields_that_would_shadow_frame_columns_go_to_reference(tmp_path: Path) -> None:
    rows = [make_row("a", source="elsewhere", shellCommandCount=9, behaviors=None)]
    frame, _ = same_frame([write_jsonl(tmp_path / "shadow.jsonl", rows)], fast=False)
    assert frame["source"][0] == str(tmp_path / "shadow.jsonl")


def test_v3_checks_the_document_around_cases(tmp_path: Path) -> None:
    rows = runner_rows(3)
    body = ", ".join(json.dumps(r) for r in rows)
    no_version = tmp_path / "noversion.json"
    no_version.write_text('{"startedAt": null, "cases": [' + body + "]}")
    trailing = tmp_path / "trailing.json"
    trailing.write_text('{"version": 3, "cases": [' + body + "]} junk")
    v4 = tmp_path / "v4.json"
    v4.write_text('{"version": 4, "cases": [' + body + "]}")
    for path in (no_version, trailing, v4):
        assert framefast.read_fast([path]) == {}
        with pytest.raises(ResultFileError) as raised:
            load_frame([path])
        with pytest.raises(ResultFileError) as expected:
            load_frame([path], fast=False)
        assert str(raised.value) == str(expected.value)


def test_a_run_passed_as_stream_and_v3_export_is_reported_like_read_many(tmp_path: Path) -> None:
    # A notebook loading a results folder gets the run written both ways
    # twice; the frame keeps both copies (as read_many does for the gate) but
    # must say so, in read_many's words, instead of silently doubling the run.
    from capeval.results.errors import ResultFileWarning
    from capeval.results.load import read_many

    rows = [make_row(c, repeat=i, runId="r1") for c in ("a", "b") for i in range(2)]
    stream = write_jsonl(tmp_path / "r1.jsonl", rows)
    export = tmp_path / "r1.json"
    write_v3(export, rows, started_at="2026-01-01T00:00:00Z", finished_at=None)
    other = write_jsonl(tmp_path / "r2.jsonl", [make_row("a", runId="r2")])
    paths = [export, other, stream, stream]
    expected: list[str] = []
    read_many(paths, on_warning=expected.append)
    frame, found = same_frame(paths)
    assert frame.height == 9  # the stream passed twice is read once
    assert found == expected
    assert len(found) == 2
    assert f"{stream} holds 4 repeat(s) that {export} holds too" in found[1]
    assert f"{stream} is given twice; read once" in found[0]
    with pytest.warns(ResultFileWarning, match="holds 4 repeat"):
        load_frame([stream, export])


def test_integer_past_int64_is_an_error_not_a_silent_null(tmp_path: Path) -> None:
    # The gate reads 2**63 as a number (median 2**62 here); a null would make
    # the frame's median differ from the gate's without a word.
    behaviors = {"shellCommandCount": 2**63, "maxTurnDurationMs": 1}
    rows = [
        make_row("a", 0, behaviors=behaviors),
        make_row("a", 1, behaviors={"shellCommandCount": 2**62, "maxTurnDurationMs": 1}),
    ]
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    message = (
        r"big\.jsonl:1: field 'shellCommandCount' must be an integer from -2\*\*63 to "
        r"2\*\*63 - 1, found 9223372036854775808, which does not fit"
    )
    with pytest.raises(ColumnTypeError, match=message):
        load_frame([path])
    with pytest.raises(ColumnTypeError, match="does not fit a 64-bit integer"):
        rows_to_frame(rows)
    assert rows_to_frame([make_row(turnsUsed=2**63 - 1)])["turnsUsed"][0] == 2**63 - 1


def test_a_backfilled_task_count_past_int64_is_an_error_on_both_paths(tmp_path: Path) -> None:
    # The fast path filled it through `replace_strict` into Int64: a silent
    # null, where the reference reader (fast=False) names the row.
    legacy = {"shellCommandCount": 1, "toolCallsByName": {"task": 2**70}}
    path = write_jsonl(tmp_path / "legacy.jsonl", [make_row("a", 0, behaviors=legacy)])
    for fast in (True, False):
        with pytest.raises(
            ColumnTypeError, match=r"'taskToolCallCount' must be .*, found 1180591620717411303424"
        ):
            load_frame([path], fast=fast)


def test_extra_integer_past_int64_is_kept_as_text() -> None:
    frame = rows_to_frame([make_row(seed=2**64), make_row(seed=3)])
    assert frame["seed"].to_list() == [str(2**64), "3"]


def test_number_past_the_float_range_is_null_on_both_paths(tmp_path: Path) -> None:
    # As the gate reads it (no usable number); DuckDB alone made it infinity.
    path = write_jsonl(tmp_path / "huge.jsonl", [make_row("a", durationMs=10**400)])
    assert load_frame([path])["durationMs"].to_list() == [None]
    falls_back_alike(path, ColumnTypeError)


def copy_real_results(real_results: Path, into: Path) -> list[Path]:
    """The real v3 files of the TypeScript harness, copied (they carry no runId in rows)."""
    import shutil

    into.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy(p, into / p.name)) for p in sorted(real_results.glob("*.json"))]


def test_v3_rows_get_the_run_identity_the_history_views_give_them(
    real_results: Path, tmp_path: Path
) -> None:
    # Real v3 rows carry no runId/runStartedAt, only the header startedAt: the
    # views named and dated their runs, the frame left both null (no history
    # plot, separate runs pooled as one).
    from capeval.analysis.history import connect, records
    from capeval.results.load import read_rows

    real = copy_real_results(real_results, tmp_path / "real")
    # As the harness wrote them (`cases` not last: the reference reads them) and
    # as capeval writes v3 (the fast path reads them), rows without run ids.
    rewritten = []
    for path in real:
        header = json.loads(path.read_bytes())
        rows = [{k: v for k, v in r.items() if k != "runId"} for r in read_rows(path)]
        out = tmp_path / "rewritten" / f"{path.stem}-v3.json"
        out.parent.mkdir(exist_ok=True)
        write_v3(out, rows, started_at=header["startedAt"], finished_at=header["finishedAt"])
        rewritten.append(out)
    own = write_jsonl(tmp_path / "own.jsonl", [make_row("a", runId="r1", runStartedAt=None)])
    for paths, fast in ((real, False), (rewritten, True)):
        frame, _ = same_frame(paths, fast=fast)
        assert frame["runId"].null_count() == frame["runStartedAt"].null_count() == 0
        con = connect(paths)
        viewed = {
            (str(Path(r["source"]).resolve()), r["runId"], r["runStartedAt"])
            for r in records(con, "SELECT source, runId, runStartedAt FROM repeats")
        }
        con.close()
        framed = {
            (str(Path(source).resolve()), run, started)
            for source, run, started in frame.select("source", "runId", "runStartedAt").rows()
        }
        assert framed == viewed  # header times are UTC with milliseconds, as the views print
        for path in paths:
            started = json.loads(path.read_bytes())["startedAt"]
            assert (str(path.resolve()), f"{path.stem}@{started}", started) in framed
    # A row with a run id of its own keeps it.
    mixed = load_frame([own, real[0]])
    assert mixed["runId"][0] == "r1" and mixed["runStartedAt"][0] is None


# -- many files: folders, patterns, and small files read without DuckDB -----------------


def test_a_folder_and_a_pattern_load_every_result_file_in_them(tmp_path: Path) -> None:
    # A notebook over thousands of runs passes their folder, or a pattern;
    # both were refused ("is a directory", "cannot read").
    runs = tmp_path / "results"
    (runs / "old").mkdir(parents=True)
    write_jsonl(runs / "r1.jsonl", [make_row("a", runId="r1"), make_row("b", runId="r1")])
    write_v3(
        runs / "old" / "r0.json",
        [make_row("a", runId="r0")],
        started_at="2026-01-01T00:00:00Z",
        finished_at=None,
    )
    (runs / "r1.plan.json").write_text('{"cells": []}')  # a runner sidecar: not looked at
    (runs / "report.json").write_text('{"summary": {}}')  # no result file: skipped, named
    warned: list[str] = []
    folder = load_frame(runs, on_warning=warned.append)
    assert sorted(folder["source"].to_list()) == sorted(
        [str(runs / "r1.jsonl")] * 2 + [str(runs / "old" / "r0.json")]
    )
    assert warned == [f"skipped {(runs / 'report.json').resolve()}: not a result file"]
    pattern = load_frame(str(runs / "**" / "*.jsonl"))
    assert pattern["source"].to_list() == [str(runs / "r1.jsonl")] * 2
    both = load_frame([str(runs / "*.jsonl"), runs / "old"])
    assert both.height == 3
    with pytest.raises(ResultFileError, match="no file matches"):
        load_frame(str(runs / "*.ndjson"))


def test_a_file_whose_name_looks_like_a_pattern_is_read_as_named(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "run[1].jsonl", [make_row("a")])
    write_jsonl(tmp_path / "run1.jsonl", [make_row("b"), make_row("c")])
    assert load_frame(str(path))["id"].to_list() == ["a"]


def test_small_files_are_read_without_duckdb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DuckDB's start-up and per-file cost made 1,500 runs of 5 rows take 38 s
    # and 560 MB through the fast path, 4x the reference reader.
    small = [write_jsonl(tmp_path / f"r{i}.jsonl", [make_row(runId=f"r{i}")]) for i in range(3)]
    monkeypatch.setattr(frame_module, "FAST_MIN_BYTES", 64 << 10)
    calls: list[list[str | Path]] = []
    real = framefast.read_fast

    def spy(paths: list[str | Path]) -> dict[int, Any]:
        calls.append(list(paths))
        return real(paths)

    monkeypatch.setattr(framefast, "read_fast", spy)
    assert load_frame(small).height == 3
    assert calls == []
    big = write_jsonl(tmp_path / "big.jsonl", [make_row(repeat=i) for i in range(300)])
    assert big.stat().st_size >= 64 << 10
    frame = load_frame([small[0], big, small[1]])
    assert calls == [[big]]
    assert frame["source"].to_list() == [str(small[0])] + [str(big)] * 300 + [str(small[1])]
    assert frame["runId"].to_list()[:2] == ["r0", "big@"]


def test_a_misfit_value_is_named_by_its_own_file_and_row(tmp_path: Path) -> None:
    # Small files read together must still name the file and its own row.
    a = write_jsonl(tmp_path / "a.jsonl", [make_row("x"), make_row("y")])
    b = write_jsonl(tmp_path / "b.jsonl", [make_row("x"), make_row("y", turnsUsed="many")])
    with pytest.raises(ColumnTypeError, match=r"b\.jsonl:2: field 'turnsUsed' must be an integer"):
        load_frame([a, b], fast=False)


def test_shared_repeats_are_found_among_files_read_together(tmp_path: Path) -> None:
    rows = [make_row(c, repeat=0, runId="r1") for c in ("a", "b")]
    a = write_jsonl(tmp_path / "a.jsonl", rows)
    b = write_jsonl(tmp_path / "b.jsonl", [*rows[:1], make_row("c", runId="r1")])
    warned: list[str] = []
    frame = load_frame([a, b], on_warning=warned.append, fast=False)
    assert frame.height == 4
    assert warned == [
        f"{b} holds 1 repeat(s) that {a} holds too (same run, cell and repeat); both are "
        "counted: pass one file per run (its .jsonl or its v3 export)"
    ]


def test_a_pattern_over_a_results_folder_skips_what_the_runner_writes_beside_rows(
    tmp_path: Path,
) -> None:
    # A real run leaves `<stream>.plan.json` and `<stem>.artifacts/.../summary.json`
    # beside its rows. `results/*.json` (every v3 export) and `results/**/*.json`
    # matched them and failed ("no 'version' field"); the folder itself loaded.
    from tests.runhelpers import capeval as capeval_run
    from tests.runhelpers import write_case

    write_case(tmp_path, "alpha")
    results = tmp_path / "evals/capability/results"
    done = capeval_run(
        tmp_path, "-q", "--repeats", "2", "--jsonl", str(results / "r1.jsonl"),
        "--out", str(results / "r1.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (results / "r1.jsonl.plan.json").is_file()
    assert list((results / "r1.artifacts").rglob("summary.json"))
    (results / "notes.json").write_text('{"summary": {}}')  # no result file: skipped, named
    for pattern, sources in (
        ("*.json", ["r1.json"]),
        ("**/*.json", ["r1.json"]),
        ("*", ["r1.json", "r1.jsonl"]),
        ("**/*.jsonl", ["r1.jsonl"]),
    ):
        warned: list[str] = []
        frame = load_frame(str(results / pattern), on_warning=warned.append, fast=False)
        assert sorted(set(frame["source"].to_list())) == [str(results / s) for s in sources]
        assert [w for w in warned if "not a result file" in w] == (
            []
            if pattern.endswith("jsonl")
            else [f"skipped {results / 'notes.json'}: not a result file"]
        )
    # Only files the runner wrote beside rows match: nothing to load is an error.
    with pytest.raises(ResultFileError, match="no result file matches"):
        load_frame(str(results / "*.plan.json"))


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


def both_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[pl.DataFrame]:
    """The frame through DuckDB (the file taking the fast path) and through the reference."""
    monkeypatch.setattr(frame_module, "FAST_MIN_BYTES", 0)
    return [load_frame([path]), load_frame([path], fast=False)]


# The column types a notebook relies on (the row fields of docs/result-formats.md, flattened).
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
