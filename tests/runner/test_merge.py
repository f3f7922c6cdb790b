"""Shard streams joined into one run (capeval.runner.merge)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from capeval.core.row import triple
from capeval.runner.merge import MergeError, merge, write_merged
from capeval.runner.options import RunOptions
from capeval.runner.plan import plan_run
from capeval.runner.run import execute
from tests.runhelpers import read_rows, write_case


def _options(root: Path, **changes: object) -> RunOptions:
    fields: dict[str, object] = {
        "root": root,
        "matrix": ("a=scripted:oracle",),
        "repeats": 2,
        "concurrency": 2,
        "handle_signals": False,
        **changes,
    }
    return RunOptions(**fields)  # type: ignore[arg-type]


def _shards(
    root: Path, count: int = 3, folder: Path | None = None, **changes: object
) -> list[Path]:
    """Shard streams of one plan, each run for real (in `folder` when given)."""
    for case in ("alpha", "beta", "gamma"):
        if not (root / "evals/capability/cases" / case).is_dir():
            write_case(root, case)
    if folder is not None:
        folder.mkdir(exist_ok=True)
    return [
        execute(
            _options(
                root,
                shard=f"{i}/{count}",
                jsonl=None if folder is None else folder / f"shard-{i}.jsonl",
                **changes,
            )
        ).jsonl_path
        for i in range(1, count + 1)
    ]


def test_merged_shards_are_the_run_each_triple_once_in_plan_order(tmp_path: Path) -> None:
    shards = _shards(tmp_path)
    everything = plan_run(_options(tmp_path, dry_run=True))
    merged = merge(list(reversed(shards)))
    assert merged.missing == [] and merged.missing_shards == []
    assert [triple(r) for r in merged.rows] == [j.triple for j in everything.jobs]
    out = tmp_path / "merged" / "run.jsonl"
    out.parent.mkdir()
    write_merged(merged, out, root=tmp_path)
    rows = read_rows(out)
    by_triple = {triple(r): r for s in shards for r in read_rows(s)}
    for row in rows:
        source = by_triple[triple(row)]
        # Every field as the shard holds it: provenance (shard, host) included...
        assert {k: v for k, v in row.items() if k != "artifacts"} == {
            k: v for k, v in source.items() if k != "artifacts"
        }
        # ... and the evidence path still leads to the shard's evidence.
        assert (out.parent / row["artifacts"]).resolve() == (
            tmp_path / "evals/capability/results" / source["artifacts"]
        ).resolve()
        assert (out.parent / row["artifacts"] / "verify.log").is_file()
    plan = json.loads(out.with_name("run.jsonl.plan.json").read_text())
    assert plan["shard"] is None and "sharding" not in plan
    assert plan["merged"]["shards"] == 3 and len(plan["merged"]["from"]) == 3
    assert (out.parent / plan["root"]).resolve() == tmp_path.resolve()


def test_a_missing_shard_is_named_and_a_resume_of_the_merge_runs_it(tmp_path: Path) -> None:
    shards = _shards(tmp_path)
    lines = shards[0].read_text().splitlines(keepends=True)
    shards[0].write_text("".join(lines[:-1]))  # shard 1 lost its last repeat
    merged = merge([shards[0], shards[2]])
    assert merged.missing_shards == [2]
    owed = set(merged.owed_by(2)) | {triple(json.loads(lines[-1]))}
    assert set(merged.missing) == owed
    out = tmp_path / "run.jsonl"
    write_merged(merged, out)
    resumed = execute(_options(tmp_path, resume=out, matrix=(), repeats=None))
    assert resumed.new_rows == len(owed)
    rows = read_rows(out)
    assert sorted(triple(r) for r in rows) == sorted(merged.planned)
    assert {r["runId"] for r in rows} == {merged.run_id}
    # What the resume ran says it was run outside any shard.
    assert {r["provenance"]["shard"] for r in rows[-len(owed) :]} == {None}


def test_shards_of_another_plan_are_refused(tmp_path: Path) -> None:
    mine = _shards(tmp_path, run_id="r1")
    theirs = _shards(tmp_path, folder=tmp_path / "other", run_id="r1", repeats=3)
    with pytest.raises(MergeError, match="shards of different plans"):
        merge([mine[0], theirs[1]])


def test_shards_of_another_run_are_refused(tmp_path: Path) -> None:
    first = _shards(tmp_path, count=2, run_id="r1")
    second = _shards(tmp_path, count=2, folder=tmp_path / "other", run_id="r2")
    with pytest.raises(
        MergeError, match=r"shards of different runs: .* \(run r2\) and .* \(run r1\)"
    ):
        merge([first[0], second[1]])


def test_a_shard_given_twice_is_refused(tmp_path: Path) -> None:
    shards = _shards(tmp_path, count=2)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(shards[0], copy)
    shutil.copy(
        shards[0].with_name(shards[0].name + ".plan.json"), tmp_path / "copy.jsonl.plan.json"
    )
    with pytest.raises(MergeError, match="shard 1/2 is given twice"):
        merge([shards[0], copy, shards[1]])


def test_a_row_that_is_not_its_shards_is_refused(tmp_path: Path) -> None:
    shards = _shards(tmp_path, count=2)
    moved = shards[1].read_text().splitlines(keepends=True)[0]
    with shards[0].open("a") as handle:
        handle.write(moved)
    with pytest.raises(MergeError, match=r"is shard 2/2's, not shard 1/2's"):
        merge(shards)


def test_a_row_of_another_run_is_refused(tmp_path: Path) -> None:
    shards = _shards(tmp_path, count=2)
    row = read_rows(shards[0])[0]
    with shards[0].open("a") as handle:
        handle.write(json.dumps({**row, "runId": "someone-else"}) + "\n")
    with pytest.raises(MergeError, match="is of run 'someone-else'"):
        merge(shards)


def test_what_is_not_a_shard_is_refused(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    plain = execute(_options(tmp_path)).jsonl_path
    with pytest.raises(MergeError, match="not a shard"):
        merge([plain])
    bare = tmp_path / "bare.jsonl"
    shutil.copy(plain, bare)
    with pytest.raises(MergeError, match="no plan beside it"):
        merge([bare])
    with pytest.raises(MergeError, match="no such file"):
        merge([tmp_path / "nothing.jsonl"])


def test_a_repeat_a_shard_holds_twice_is_kept_with_a_warning(tmp_path: Path) -> None:
    shards = _shards(tmp_path, count=2)
    first = shards[0].read_text().splitlines(keepends=True)[0]
    with shards[0].open("a") as handle:
        handle.write(first)
    merged = merge(shards)
    assert len(merged.rows) == len(merged.planned) + 1
    assert any("both are kept" in w for w in merged.warnings)


def test_an_error_row_a_shard_ran_again_is_superseded_not_a_duplicate(tmp_path: Path) -> None:
    shards = _shards(tmp_path, count=2)
    lines = shards[0].read_text().splitlines(keepends=True)
    errored = {**json.loads(lines[0]), "outcome": "error", "passed": False}
    # As a `--retry-errors` resume leaves it: the error row, later the row that stands.
    shards[0].write_text(json.dumps(errored) + "\n" + "".join(lines[1:]) + lines[0])
    merged = merge(shards)
    assert not any("both are kept" in w for w in merged.warnings), merged.warnings
    out = tmp_path / "merged" / "run.jsonl"
    write_merged(merged, out)
    from capeval.results.load import read_rows as standing

    assert sorted(map(triple, standing(out))) == sorted(merged.planned)


def test_a_plan_that_names_no_shard_of_its_run_is_refused(tmp_path: Path) -> None:
    (shard,) = _shards(tmp_path, count=1)
    meta = shard.with_name(shard.name + ".plan.json")
    plan = json.loads(meta.read_text())
    plan["sharding"]["index"] = 2
    meta.write_text(json.dumps(plan))
    with pytest.raises(MergeError, match="says shard 2/1, which no run has"):
        merge([shard])
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)  # never opened: a pipe has no plan beside it
    with pytest.raises(MergeError, match="not a regular file"):
        merge([fifo])
