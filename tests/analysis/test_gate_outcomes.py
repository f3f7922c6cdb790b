"""The gate never says "regressed" about an outage, nor "clean" about what it did not check.

Cells with `error` repeats, runs missing planned repeats, files that change
while read, torn streams under `--strict-torn` and bait cases declared
nowhere all exit 2, naming what to do (docs/gating.md#outcomes).
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from capeval.analysis import fastload
from capeval.analysis.gatecheck import gate_files
from tests.analysis.test_gate import BAIT_FLAGS, CORBITS_BAITS
from tests.casefactory import write_case
from tests.clirun import capeval
from tests.rowfactory import gate_row

REAL = Path(__file__).resolve().parents[1] / "data" / "real-results"


def row(case: str, outcome: str, repeat: int = 0, **extra: Any) -> dict[str, Any]:
    out = gate_row(case, outcome == "passed", repeat=repeat)
    out.update(outcome=outcome, runId="run-1", **extra)
    return out


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    base = jsonl(tmp_path / "base.jsonl", [row("a", "passed", r) for r in range(4)])
    # An outage: two of four repeats measured nothing; the judged ones all passed.
    cand = jsonl(
        tmp_path / "cand.jsonl",
        [row("a", "passed", 0), row("a", "error", 1, errorKind="rate_limit", providerStatus=429),
         row("a", "passed", 2), row("a", "error", 3, errorKind="rate_limit")],
    )  # fmt: skip
    return base, cand


def test_error_repeats_are_not_judged_and_the_gate_says_how_to_fill_them(
    sides: tuple[Path, Path], tmp_path: Path
) -> None:
    base, cand = sides
    done = capeval("gate", "--baseline", base, "--candidate", cand, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "1 cell(s) not judged: v1::a (candidate 2 error(s) of 4 repeats)" in done.stderr
    assert f"capeval run --resume {cand} --retry-errors" in done.stderr
    assert "regressed" not in done.stderr.lower().replace("0 regressed", "")


def test_error_turns_of_a_paperclip_live_matrix_are_not_sent_to_capeval_run_resume(
    sides: tuple[Path, Path], tmp_path: Path
) -> None:
    # Live rows (`capeval paperclip live`) have no plan: `capeval run --resume` refuses
    # them ("its plan ... is missing"). Their error turns are run again by the matrix.
    base, _ = sides
    live = jsonl(
        tmp_path / "live-rows.jsonl",
        [row("a", "passed", 0, gatedOperation=None), row("a", "error", 1, gatedOperation=None)],
    )
    done = capeval("gate", "--baseline", base, "--candidate", live, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "capeval run --resume" not in done.stderr
    assert (
        f"capeval paperclip live --out {tmp_path} --force: a live matrix is run again, "
        "not resumed, its error turns retried (--retries)"
    ) in done.stderr


def test_max_error_rate_judges_on_the_judged_repeats_and_says_so(
    sides: tuple[Path, Path], tmp_path: Path
) -> None:
    base, cand = sides
    args = ("gate", "--baseline", base, "--candidate", cand, "--json")
    assert capeval(*args, "--max-error-rate", "0.25", cwd=tmp_path).returncode == 2
    done = capeval(*args, "--max-error-rate", "0.5", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    (cell,) = obj["cells"]
    # 2/2 judged passes: unchanged, not a regression from 4/4.
    assert cell["status"] == "unchanged"
    assert cell["candidate"] == {"repeats": 2, "passCount": 2, "passRate": 1,
                                 "failCount": 0, "errorCount": 2}  # fmt: skip
    assert any("judged on its judged repeats alone" in w for w in obj["warnings"])


def test_compare_shows_the_cell_and_warns(sides: tuple[Path, Path], tmp_path: Path) -> None:
    base, cand = sides
    done = capeval(
        "compare", "--baseline", base, "--candidate", cand, "--no-advisory", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "2/2 (100%) +2 error" in done.stdout
    assert "not judged" in done.stdout and "capeval gate would exit 2" in done.stdout


def test_junit_error_element_in_process(sides: tuple[Path, Path]) -> None:
    from capeval.analysis.report import render_junit

    base, cand = sides
    result = gate_files(base, cand, max_error_rate=0.5)
    assert result.comparison is not None
    suite = ET.fromstring(render_junit(result.comparison)).find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("failures") == "0"
    error = suite.find("testcase/error")
    assert error is not None and "candidate 2 error repeat(s) of 4" in (error.get("message") or "")


def _plan(stream: Path, repeats: int, cases: list[str]) -> None:
    plan = {"runId": "run-1", "repeats": repeats,
            "resolved": {"variants": [{"id": "v1"}], "cases": cases}}  # fmt: skip
    stream.with_name(stream.name + ".plan.json").write_text(json.dumps(plan))


def test_a_run_missing_planned_repeats_is_refused_unless_allowed(tmp_path: Path) -> None:
    base = jsonl(tmp_path / "base.jsonl", [row("a", "passed", r) for r in range(3)])
    cand = jsonl(tmp_path / "cand.jsonl", [row("a", "passed", 0)])
    _plan(cand, 3, ["a", "b"])
    args = ("gate", "--baseline", base, "--candidate", cand)
    done = capeval(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert "the candidate holds fewer repeats than its plan: v1::a 1 of 3, v1::b 0 of 3" in (
        done.stderr
    )
    assert f"capeval run --resume {cand}" in done.stderr
    allowed = capeval(*args, "--allow-partial", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert "judged what is there (--allow-partial)" in allowed.stdout


def test_report_is_told_what_the_gate_is_told(sides: tuple[Path, Path], tmp_path: Path) -> None:
    # A report of a partial or errored run is a refusal, as the gate's verdict
    # would be; the same flags make both judge it, so the two never disagree.
    base, cand = sides
    partial = jsonl(tmp_path / "partial.jsonl", [row("a", "passed", 0)])
    _plan(partial, 3, ["a"])
    out = tmp_path / "r.md"
    for given, flags in ((cand, ("--max-error-rate", "0.5")), (partial, ("--allow-partial",))):
        args = ("report", "--baseline", base, "--candidate", given, "-o", out, "--no-advisory")
        refused = capeval(*args, cwd=tmp_path)
        assert refused.returncode == 2 and "refused, exit 2" in refused.stderr
        written = capeval(*args, *flags, cwd=tmp_path)
        assert written.returncode == 0, written.stderr
        assert "gate verdict exit 0" in written.stderr
        gate = capeval("gate", "--baseline", base, "--candidate", given, *flags, cwd=tmp_path)
        assert gate.returncode == 0, gate.stderr


def test_a_complete_run_with_its_plan_gates_as_before(tmp_path: Path) -> None:
    base = jsonl(tmp_path / "base.jsonl", [row("a", "passed", r) for r in range(2)])
    cand = jsonl(tmp_path / "cand.jsonl", [row("a", "passed", r) for r in range(2)])
    _plan(cand, 2, ["a"])
    _plan(base, 2, ["a"])
    assert capeval("gate", "--baseline", base, "--candidate", cand, cwd=tmp_path).returncode == 0


def test_a_file_that_grows_while_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = jsonl(tmp_path / "base.jsonl", [row("a", "passed", 0)])
    cand = jsonl(tmp_path / "cand.jsonl", [row("a", "passed", 0)])
    real = fastload._load_sides

    def growing(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        with open(cand, "a") as handle:  # a run still writing its stream
            handle.write(json.dumps(row("a", "failed", 1)) + "\n")
        return out

    monkeypatch.setattr(fastload, "_load_sides", growing)
    result = gate_files(base, cand)
    assert result.exit_code == 2
    assert "changed while it was read" in result.text


def test_strict_torn_refuses_a_torn_last_line(tmp_path: Path) -> None:
    base = jsonl(tmp_path / "base.jsonl", [row("a", "passed", 0)])
    cand = jsonl(tmp_path / "cand.jsonl", [row("a", "passed", 0)])
    with open(cand, "a") as handle:
        handle.write('{"id": "a", "pass')
    args = ("gate", "--baseline", base, "--candidate", cand)
    assert capeval(*args, cwd=tmp_path).returncode == 0
    strict = capeval(*args, "--strict-torn", cwd=tmp_path)
    assert strict.returncode == 2 and "--strict-torn" in strict.stderr


def _real(tmp_path: Path) -> tuple[Path, Path]:
    """The original harness's files, copied where no workspace is above them."""
    out = tmp_path / "results"
    out.mkdir()
    base = Path(shutil.copy(REAL / "baseline-0286-grok.json", out))
    cand = Path(shutil.copy(REAL / "after-0286-grok.json", out))
    return base, cand


def test_real_files_bait_cases_declared_nowhere_exit_2_naming_them(tmp_path: Path) -> None:
    base, cand = _real(tmp_path)
    args = ("gate", "--baseline", base, "--candidate", cand, "--allow-provider-fallback")
    done = capeval(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert (
        "bait case(s) without a bait declaration: edit-bait, env-bait, loop-bait, subagent-bait, "
        "web-bait" in done.stderr
    )
    for way in ("--bait CASE=METRIC:THRESHOLD", "--root WORKSPACE", "`bait` in the rows"):
        assert way in done.stderr


def test_real_files_with_bait_flags_exit_3(tmp_path: Path) -> None:
    base, cand = _real(tmp_path)
    args = ("gate", "--baseline", base, "--candidate", cand, "--allow-provider-fallback")
    done = capeval(*args, *BAIT_FLAGS, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "3 bait flag(s)" in done.stdout
    assert "env-bait: envAssignmentCommandCount > 0, declared by --bait" in done.stdout


def _bait_workspace(root: Path) -> Path:
    for case, (metric, threshold) in CORBITS_BAITS.items():
        write_case(root, case, tier="bait", bait={"metric": metric, "threshold": threshold})
    return root


def test_real_files_with_root_exit_3_and_say_where_baits_came_from(tmp_path: Path) -> None:
    base, cand = _real(tmp_path)
    ws = _bait_workspace(tmp_path / "ws")
    args = ("gate", "--baseline", base, "--candidate", cand, "--allow-provider-fallback")
    done = capeval(*args, "--root", ws, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"declared by workspace {ws.resolve()}" in done.stdout
    # From inside the workspace, with no flag: the same.
    assert capeval(*args, cwd=ws).returncode == 3


def test_the_workspace_above_the_result_file_declares_baits(tmp_path: Path) -> None:
    ws = _bait_workspace(tmp_path / "ws")
    (ws / "results").mkdir()
    base = Path(shutil.copy(REAL / "baseline-0286-grok.json", ws / "results"))
    cand = Path(shutil.copy(REAL / "after-0286-grok.json", ws / "results"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = ("gate", "--baseline", base, "--candidate", cand, "--allow-provider-fallback")
    assert capeval(*args, cwd=elsewhere).returncode == 3


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_every_report_shows_the_error_repeats(sides: tuple[Path, Path], fmt: str) -> None:
    from capeval.analysis.report import render

    base, cand = sides
    result = gate_files(base, cand, max_error_rate=0.5)
    assert result.comparison is not None
    text = render(result.comparison, fmt)
    if fmt == "json":
        (cell,) = json.loads(text)["cells"]
        assert cell["candidate"]["errorCount"] == 2
    else:
        assert "2/2 (100%) +2 error" in text


def test_one_shard_of_a_run_alone_is_refused_naming_the_shards_not_given(
    tmp_path: Path,
) -> None:
    from capeval.core.shards import RULE, Shard, slice_of

    base = jsonl(tmp_path / "base.jsonl", [row("a", "passed", r) for r in range(4)])
    triples = [("v1", "a", r) for r in range(4)]
    streams = []
    for index in (1, 2):
        held = sorted(slice_of(triples, Shard(index, 2), None))
        stream = jsonl(tmp_path / f"s{index}.jsonl", [row("a", "passed", r) for _, _, r in held])
        sharding = {"index": index, "count": 2, "rule": RULE, "weights": {}, "planDigest": "d"}
        plan = {"runId": "run-1", "repeats": 4, "shard": f"{index}/2", "sharding": sharding,
                "resolved": {"variants": [{"id": "v1"}], "cases": ["a"]}}  # fmt: skip
        stream.with_name(stream.name + ".plan.json").write_text(json.dumps(plan))
        streams.append(stream)
    alone = capeval("gate", "--baseline", base, "--candidate", streams[0], cwd=tmp_path)
    assert alone.returncode == 2, alone.stdout + alone.stderr
    assert "v1::a 2 of 4" in alone.stderr
    assert "shard 2/2 of run run-1" in alone.stderr
    every = ("--candidate", streams[0], "--candidate", streams[1])
    done = capeval("gate", "--baseline", base, *every, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_stream_given_twice_is_not_called_incomplete(tmp_path: Path) -> None:
    base = jsonl(tmp_path / "base.jsonl", [row("a", "passed", r) for r in range(2)])
    cand = jsonl(tmp_path / "cand.jsonl", [row("a", "passed", r) for r in range(2)])
    _plan(cand, 2, ["a"])
    twice = ("--candidate", cand, "--candidate", cand)
    done = capeval("gate", "--baseline", base, *twice, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "given twice" in done.stdout + done.stderr


def test_a_cell_with_no_judged_repeat_says_so_under_max_error_rate(tmp_path: Path) -> None:
    # --max-error-rate 1 cannot judge a side that measured nothing; the
    # refusal says why rather than only asking for the flag already given.
    base = jsonl(tmp_path / "base.jsonl", [row("a", "passed", r) for r in range(2)])
    cand = jsonl(tmp_path / "cand.jsonl", [row("a", "error", r) for r in range(2)])
    result = gate_files(base, cand, max_error_rate=1.0)
    assert result.exit_code == 2
    assert "v1::a (candidate 2 error(s) of 2 repeats, none judged)" in result.text
    assert "(a side with none judged never is)" in result.text


@pytest.mark.parametrize("torn", [False, True])
def test_a_repeat_held_twice_does_not_stand_in_for_a_planned_one(
    tmp_path: Path, torn: bool
) -> None:
    # Planned: repeats 0 and 1. Held: repeat 0 twice. Two rows, one repeat missing.
    base = jsonl(tmp_path / "base.jsonl", [row("a", "passed", r) for r in range(2)])
    cand = jsonl(tmp_path / "cand.jsonl", [row("a", "passed", 0), row("a", "passed", 0)])
    if torn:  # DuckDB cannot read it; the reference reader counts instead
        with cand.open("a") as f:
            f.write('{"resultKey": "v1::a", "rep')
    _plan(cand, 2, ["a"])
    result = gate_files(base, cand)
    assert result.exit_code == 2, result.text
    assert "the candidate holds fewer repeats than its plan: v1::a 1 of 2" in result.text


def test_the_gate_names_a_repeat_a_file_holds_twice(tmp_path: Path) -> None:
    # Counted twice, as every reader counts it, and named (docs/result-formats.md#supersession):
    # the gate's DuckDB path used to count it without a word.
    base = jsonl(tmp_path / "base.jsonl", [row("a", "passed", r) for r in range(2)])
    cand = jsonl(tmp_path / "cand.jsonl", [row("a", "passed", r) for r in (0, 1, 0)])
    retried = jsonl(tmp_path / "retried.jsonl",
                    [row("a", "error", 0), row("a", "passed", 0), row("a", "passed", 1)])  # fmt: skip
    result = gate_files(base, cand)
    assert result.exit_code == 0, result.text
    assert "row 3 repeats v1::a repeat 0 (first at row 1); both are counted" in result.text
    assert "both are counted" not in gate_files(base, retried).text  # a supersession
