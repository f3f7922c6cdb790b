"""`capeval gate` / `capeval compare` end to end: real processes, every exit code, the real files."""

from __future__ import annotations

import importlib.util
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clirun import capeval
from tests.rowfactory import gate_row as row
from tests.specfacts import LOWER_IS_BETTER

CORBITS_BAITS = {
    "loop-bait": ("repeatedSearchCount", 0),
    "web-bait": ("networkCommandCount", 0),
    "env-bait": ("envAssignmentCommandCount", 0),
    "edit-bait": ("editViaShellCount", 0),
    "subagent-bait": ("maxTurnDurationMs", 15000),
}
BAIT_FLAGS = [f"--bait={case}={metric}:{t}" for case, (metric, t) in CORBITS_BAITS.items()]


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Baseline and candidates for each exit code; tmp_path holds no workspace."""
    bait = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("a", True), row("b", False), row("web", True, bait=bait, networkCommandCount=2)]
    return {
        "base": jsonl(tmp_path / "base.jsonl", base),
        "clean": jsonl(
            tmp_path / "clean.jsonl",
            [row("a", True), row("b", True), row("web", True, bait=bait, networkCommandCount=0)],
        ),
        "regressed": jsonl(
            tmp_path / "regressed.jsonl",
            [row("a", False), row("b", True), row("web", True, bait=bait)],
        ),
        "tame_base": jsonl(
            tmp_path / "tame.jsonl",
            [row("a", True), row("b", False), row("web", True, bait=bait, networkCommandCount=0)],
        ),
    }


def test_exit_0_when_clean(files: dict[str, Path], tmp_path: Path) -> None:
    done = capeval("gate", "--baseline", files["base"], "--candidate", files["clean"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "gate: CLEAN (exit 0)" in done.stdout
    assert done.stdout.index("IMPROVED") < done.stdout.index("unchanged")


def test_exit_1_when_any_cell_regressed(files: dict[str, Path], tmp_path: Path) -> None:
    done = capeval(
        "gate", "--baseline", files["base"], "--candidate", files["regressed"], cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    # Regressions come first in the table, before improvements.
    assert lines[2].startswith("REGRESSED") and "v1::a" in lines[2]
    assert lines[3].startswith("IMPROVED") and "v1::b" in lines[3]


def test_report_to_standard_output_says_the_gate_verdict_on_stderr(
    files: dict[str, Path], tmp_path: Path
) -> None:
    # The report exits 0 once written; piped into a step summary, the log
    # must still say what the gate decided.
    for name, code in (("regressed", 1), ("clean", 0)):
        done = capeval(
            "report", "--baseline", files["base"], "--candidate", files[name], "--format", "md",
            cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "**Verdict:" in done.stdout
        assert done.stderr.strip().splitlines()[-1] == f"capeval report: gate verdict exit {code}"


def test_compare_says_what_the_gate_would_do_not_an_exit_it_does_not_take(
    files: dict[str, Path], tmp_path: Path
) -> None:
    done = capeval(
        "compare", "--baseline", files["base"], "--candidate", files["regressed"], cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().splitlines()[-1] == "verdict: REGRESSED (capeval gate would exit 1)"
    assert "gate: REGRESSED" not in done.stdout


def test_exit_3_when_only_bait_flags(files: dict[str, Path], tmp_path: Path) -> None:
    done = capeval(
        "gate",
        "--baseline",
        files["tame_base"],
        "--candidate",
        files["clean"],
        "--json",
        cwd=tmp_path,
    )
    assert done.returncode == 3, done.stderr
    obj = json.loads(done.stdout)
    assert (
        obj["baitFlags"] == ["web"] and obj["clean"] is False and obj["summary"]["regressed"] == 0
    )
    text = capeval(
        "gate", "--baseline", files["tame_base"], "--candidate", files["clean"], cwd=tmp_path
    )
    assert (
        "BAIT FLAG web networkCommandCount median 0 did not exceed 0 on baseline: "
        "the case no longer reproduces its misbehavior"
    ) in text.stdout.splitlines()


def test_regression_beats_bait_flags(files: dict[str, Path], tmp_path: Path) -> None:
    done = capeval(
        "gate", "--baseline", files["tame_base"], "--candidate", files["regressed"], cwd=tmp_path
    )
    assert done.returncode == 1


def test_exit_2_for_an_unreadable_file(files: dict[str, Path], tmp_path: Path) -> None:
    done = capeval(
        "gate", "--baseline", tmp_path / "nope.jsonl", "--candidate", files["clean"], cwd=tmp_path
    )
    assert done.returncode == 2
    assert "nope.jsonl" in done.stderr and "cannot read" in done.stderr


@pytest.mark.parametrize("fmt", ["jsonl", "v3"])
def test_exit_2_for_json_python_cannot_hold(
    files: dict[str, Path], tmp_path: Path, fmt: str
) -> None:
    # Nested past Python's recursion limit: a RecursionError traceback and
    # exit 1, the code of a regression, where a bad file must exit 2.
    deep = "[" * 5000 + "]" * 5000
    path = tmp_path / f"deep.{fmt}"
    if fmt == "v3":
        path.write_text(f'{{"version": 3, "n": {deep}, "cases": []}}')
    else:
        path.write_text(f'{{"n": {deep}}}\n' + files["clean"].read_text())
    done = capeval("gate", "--baseline", files["base"], "--candidate", path, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"deep.{fmt}" in done.stderr and "nested too deeply" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["gate", "compare", "report"])
@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_exit_2_when_a_side_holds_no_rows(
    files: dict[str, Path], tmp_path: Path, command: str, side: str
) -> None:
    # An empty run would otherwise gate clean: every cell `missing`, none regressed.
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    paths = {"baseline": files["base"], "candidate": files["clean"], side: empty}
    done = capeval(
        command, "--baseline", paths["baseline"], "--candidate", paths["candidate"], cwd=tmp_path
    )
    assert done.returncode == 2, done.stdout
    assert f"empty.jsonl: the {side} holds no result rows" in done.stderr + done.stdout


def test_an_empty_file_pooled_with_rows_is_fine(files: dict[str, Path], tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    done = capeval(
        "gate", "--baseline", files["base"], "--candidate", files["clean"], "--candidate", empty,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_exit_2_when_no_cell_matches_the_baseline(files: dict[str, Path], tmp_path: Path) -> None:
    other = jsonl(tmp_path / "other.jsonl", [row("zz", True), row("yy", True)])
    done = capeval("gate", "--baseline", files["base"], "--candidate", other, cwd=tmp_path)
    assert done.returncode == 2
    assert "refused: no candidate cell matches a baseline cell (2 new" in done.stderr
    shown = capeval("compare", "--baseline", files["base"], "--candidate", other, cwd=tmp_path)
    assert shown.returncode == 0 and "nothing was compared" in shown.stdout


def test_exit_2_for_a_bad_row_naming_file_and_line(files: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(row("a")) + "\n{oops\n" + json.dumps(row("b")) + "\n")
    done = capeval("gate", "--baseline", files["base"], "--candidate", bad, cwd=tmp_path)
    assert done.returncode == 2
    assert "bad.jsonl:2" in done.stderr


def test_exit_2_for_a_bad_bait_flag(files: dict[str, Path], tmp_path: Path) -> None:
    done = capeval(
        "gate",
        "--baseline",
        files["base"],
        "--candidate",
        files["clean"],
        "--bait",
        "web=bogus:0",
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "unknown metric 'bogus'" in done.stderr


def test_exit_2_without_a_baseline_anywhere(files: dict[str, Path], tmp_path: Path) -> None:
    done = capeval("gate", "--candidate", files["clean"], cwd=tmp_path)
    assert done.returncode == 2 and "--baseline" in done.stderr


def test_torn_last_line_warns_and_keeps_every_complete_row(
    files: dict[str, Path], tmp_path: Path
) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_text(files["clean"].read_text() + '{"id": "a", "passed": fa')
    done = capeval("gate", "--baseline", files["base"], "--candidate", torn, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert any("torn last line" in w for w in obj["warnings"])
    assert obj["summary"]["improved"] == 1


def test_a_refused_gate_still_says_what_reading_passed_over(tmp_path: Path) -> None:
    # The refusal printed only its `refused:` lines; the torn line went unmentioned.
    base = tmp_path / "b.jsonl"
    base.write_text(
        json.dumps(row("a", provider="zen", model="north")) + "\n" + '{"id": "a", "passed": fa'
    )
    cand = jsonl(tmp_path / "c.jsonl", [row("a", provider="xai", model="grok")])
    done = capeval("gate", "--baseline", base, "--candidate", cand, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "refused:" in done.stderr
    assert "warning: " in done.stderr and "torn last line" in done.stderr
    done = capeval("gate", "--baseline", base, "--candidate", cand, "--json", cwd=tmp_path)
    obj = json.loads(done.stdout)
    assert obj["exitCode"] == 2 and obj["errors"]
    assert any("b.jsonl" in w and "torn last line" in w for w in obj["warnings"])


def test_a_side_whose_only_row_is_torn_says_so_not_check_the_path(
    files: dict[str, Path], tmp_path: Path
) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_text('{"id": "a", "passed": fa')
    done = capeval("gate", "--baseline", files["base"], "--candidate", torn, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "the candidate holds no result rows" in done.stderr
    assert "reading it passed over: " in done.stderr and "torn last line" in done.stderr
    assert "check the path" not in done.stderr


def test_gate_uses_the_configured_baseline(files: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "evals" / "capability" / "cases").mkdir(parents=True)
    (tmp_path / "capeval.toml").write_text(f'baseline = "{files["base"].name}"\n')
    done = capeval("gate", "--candidate", files["regressed"], cwd=tmp_path)
    assert done.returncode == 1, done.stderr


def test_provider_change_exit_2_naming_both_then_judged_with_the_flag(tmp_path: Path) -> None:
    base = jsonl(tmp_path / "b.jsonl", [row("a", False, provider="zen", model="north")])
    cand = jsonl(tmp_path / "c.jsonl", [row("a", True, provider="xai", model="grok")])
    for command in ("gate", "compare"):
        done = capeval(command, "--baseline", base, "--candidate", cand, cwd=tmp_path)
        assert done.returncode == 2
        assert "zen:north" in done.stderr and "xai:grok" in done.stderr
    done = capeval(
        "gate", "--baseline", base, "--candidate", cand, "--allow-provider-fallback", cwd=tmp_path
    )
    assert done.returncode == 0


def test_mixed_cells_warn_in_compare_and_are_refused_by_the_gate(
    real_results: Path, tmp_path: Path
) -> None:
    mixed = real_results / "baseline-0286.json"
    done = capeval(
        "compare",
        "--baseline",
        mixed,
        "--candidate",
        mixed,
        "--json",
        "--no-advisory",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    warnings = json.loads(done.stdout)["warnings"]
    assert sum("mixed cell default:default::complex-jwt" in w for w in warnings) == 2  # both sides
    assert sum("mixed cell default:default::simple-health" in w for w in warnings) == 2
    gated = capeval("gate", "--baseline", mixed, "--candidate", mixed, cwd=tmp_path)
    assert gated.returncode == 2 and "mixed cell" in gated.stderr
    allowed = capeval(
        "gate", "--baseline", mixed, "--candidate", mixed, "--allow-provider-fallback", cwd=tmp_path
    )
    assert allowed.returncode == 0


def test_workspace_case_baits_are_used(repo_root: Path, tmp_path: Path) -> None:
    """The demo workspace declares web-release-token's bait (networkCommandCount > 0)."""
    base = jsonl(tmp_path / "b.jsonl", [row("web-release-token", networkCommandCount=0)])
    done = capeval(
        "gate", "--baseline", base, "--candidate", base, "--root", repo_root, "--json", cwd=tmp_path
    )
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["baitFlags"] == ["web-release-token"]
    # Without the workspace there is no declaration, hence no flag.
    assert capeval("gate", "--baseline", base, "--candidate", base, cwd=tmp_path).returncode == 0


def test_workspace_baits_also_apply_when_the_reference_reader_reads(
    repo_root: Path, tmp_path: Path
) -> None:
    """A torn last line sends the files to the reference reader; the workspace still counts."""
    base = jsonl(tmp_path / "b.jsonl", [row("web-release-token", networkCommandCount=0)])
    with open(base, "a") as handle:
        handle.write('{"id": "web-release-token", "pass')
    done = capeval(
        "gate", "--baseline", base, "--candidate", base, "--root", repo_root, "--json", cwd=tmp_path
    )
    assert done.returncode == 3, done.stderr
    obj = json.loads(done.stdout)
    assert obj["baitFlags"] == ["web-release-token"]
    assert any("torn last line" in w for w in obj["warnings"])


def test_a_case_broken_mid_edit_does_not_drop_the_workspaces_baits(tmp_path: Path) -> None:
    from tests.casefactory import write_case

    write_case(tmp_path, "web", bait={"metric": "networkCommandCount", "threshold": 0})
    write_case(tmp_path, "draft", prompt=None)  # invalid: capeval run would refuse it
    base = jsonl(tmp_path / "b.jsonl", [row("web", networkCommandCount=0)])
    done = capeval("gate", "--baseline", base, "--candidate", base, "--json", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["baitFlags"] == ["web"]


def test_an_unusable_workspace_bait_warns_or_with_root_is_exit_2(tmp_path: Path) -> None:
    from tests.casefactory import write_case

    write_case(tmp_path, "web", bait={"metric": "networkCmds", "threshold": 0})
    base = jsonl(tmp_path / "b.jsonl", [row("web", networkCommandCount=0)])
    done = capeval("gate", "--baseline", base, "--candidate", base, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warnings = json.loads(done.stdout)["warnings"]
    assert any("web/case.json: bait.metric" in w for w in warnings), warnings
    done = capeval("gate", "--baseline", base, "--candidate", base, "--root", tmp_path)
    assert done.returncode == 2
    assert "web/case.json" in done.stderr and "bait.metric" in done.stderr


# -- the real files: after-0286-grok (candidate) vs baseline-0286-grok -------


def _hand_cells(path: Path) -> dict[str, dict[str, Any]]:
    """Independent arithmetic over the rows: passes, repeats and medians per case."""
    cells: dict[str, dict[str, Any]] = {}
    for case in json.loads(path.read_text())["cases"]:
        cell = cells.setdefault(case["id"], {"n": 0, "passes": 0, "values": {}})
        cell["n"] += 1
        cell["passes"] += case["passed"] is True
        if case["behaviors"] is None:
            continue
        behaviors = dict(case["behaviors"])
        by_name = behaviors.pop("toolCallsByName", {})
        behaviors.setdefault(
            "taskToolCallCount", by_name.get("task", 0) + by_name.get("spawn_agent", 0)
        )
        for metric, value in behaviors.items():
            cell["values"].setdefault(metric, []).append(value)
    for cell in cells.values():
        cell["medians"] = {m: statistics.median(v) for m, v in cell["values"].items()}
    return cells


def test_real_files_are_refused_without_the_flag(real_results: Path, tmp_path: Path) -> None:
    done = capeval(
        "gate",
        "--baseline",
        real_results / "baseline-0286-grok.json",
        "--candidate",
        real_results / "after-0286-grok.json",
        *BAIT_FLAGS,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "zen:north-mini-code-free" in done.stderr and "xai/thegreataxios:grok-4.5" in done.stderr


def test_real_files_judged_with_the_flag_match_hand_arithmetic(
    real_results: Path, tmp_path: Path
) -> None:
    base_path, cand_path = (
        real_results / "baseline-0286-grok.json",
        real_results / "after-0286-grok.json",
    )
    args = (
        "--baseline",
        base_path,
        "--candidate",
        cand_path,
        "--allow-provider-fallback",
        *BAIT_FLAGS,
    )
    done = capeval("gate", *args, "--json", cwd=tmp_path)
    obj = json.loads(done.stdout)
    base, cand = _hand_cells(base_path), _hand_cells(cand_path)

    # Pass rates by hand: only complex-jwt changed (1/3 -> 3/3); the rest are 3/3 both times.
    assert (base["complex-jwt"]["passes"], cand["complex-jwt"]["passes"]) == (1, 3)
    expected_status = {}
    for case in cand:
        b, c = base[case]["passes"] / base[case]["n"], cand[case]["passes"] / cand[case]["n"]
        expected_status[case] = "improved" if c > b else "regressed" if c < b else "unchanged"
    assert {c["caseId"]: c["status"] for c in obj["cells"]} == expected_status
    assert expected_status["complex-jwt"] == "improved"

    # Behavior verdicts by hand, every metric both sides have.
    for cell in obj["cells"]:
        bm, cm = base[cell["caseId"]]["medians"], cand[cell["caseId"]]["medians"]
        expected = []
        for metric in bm.keys() & cm.keys():
            verdict = "neutral"
            if metric in LOWER_IS_BETTER and cm[metric] != bm[metric]:
                verdict = "improve" if cm[metric] < bm[metric] else "regress"
            expected.append((metric, bm[metric], cm[metric], verdict))
        got = [
            (b["metric"], b["baselineMedian"], b["candidateMedian"], b["verdict"])
            for b in cell["behaviors"]
        ]
        assert sorted(got) == sorted(expected), cell["caseId"]

    # Baits: baseline medians are loop 0, web 1, env 0, edit 0, subagent 69030 (of 58084/69030/86089).
    assert base["web-bait"]["medians"]["networkCommandCount"] == 1
    assert base["subagent-bait"]["medians"]["maxTurnDurationMs"] == 69030
    assert sorted(obj["baitFlags"]) == ["edit-bait", "env-bait", "loop-bait"]
    baits = {c["caseId"]: c["bait"] for c in obj["cells"] if c["bait"]}
    assert baits["subagent-bait"] == {
        "metric": "maxTurnDurationMs",
        "threshold": 15000,
        "baselineMedian": 69030,
        "candidateMedian": 32088,  # 31518, 32088, 32191
        "misbehaving": True,
        "flag": False,
        "source": "--bait",
    }
    assert baits["web-bait"]["misbehaving"] is False and baits["web-bait"]["flag"] is False
    assert obj["summary"]["regressed"] == 0 and obj["clean"] is False
    # No regression, bait flags: exit 3.
    assert done.returncode == 3
    text = capeval("gate", *args, cwd=tmp_path).stdout.splitlines()
    for case, metric in (
        ("loop-bait", "repeatedSearchCount"),
        ("env-bait", "envAssignmentCommandCount"),
    ):
        line = (
            f"BAIT FLAG {case} {metric} median 0 did not exceed 0 on baseline: "
            "the case no longer reproduces its misbehavior"
        )
        assert line in text


@pytest.mark.slow
def test_compare_advisory_on_the_real_files_is_deterministic(
    real_results: Path, tmp_path: Path
) -> None:
    args = (
        "compare",
        "--baseline",
        real_results / "baseline-0286-grok.json",
        "--candidate",
        real_results / "after-0286-grok.json",
        "--allow-provider-fallback",
        "--json",
    )
    first, second = capeval(*args, cwd=tmp_path), capeval(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    obj = json.loads(first.stdout)
    jwt = next(c for c in obj["cells"] if c["caseId"] == "complex-jwt")
    assert jwt["advisory"]["flakyBaseline"] is True
    assert jwt["advisory"]["exactTest"]["test"] == "barnard"
    assert obj["advisory"]["variants"]["default:default"]["paired"]["better"] == 1


def test_gate_start_up_imports_no_polars_scipy_or_matplotlib(
    files: dict[str, Path], repo_root: Path, tmp_path: Path
) -> None:
    """The gate runs in CI on every change: its path stays on DuckDB alone.

    Nor does it import the case schema machinery or the behavior scanner,
    even when it reads the demo workspace's bait declarations.
    """
    script = (
        "import sys\n"
        "from capeval.cli import main\n"
        "try:\n"
        f"    main(['gate', '--baseline', {str(files['base'])!r}, '--candidate', "
        f"{str(files['clean'])!r}, '--root', {str(repo_root)!r}])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "unwanted = ('polars', 'scipy', 'matplotlib', 'numpy', 'jsonschema', 'capeval.core.behaviors')\n"
        "loaded = sorted(m for m in unwanted if m in sys.modules)\n"
        "print(code, loaded, 'duckdb' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    # DuckDB's Python layer (half of the gate's start-up) is skipped when the engine module exists.
    engine_alone = importlib.util.find_spec("_duckdb") is not None
    expected = f"0 [] {not engine_alone}"
    assert done.stdout.strip().splitlines()[-1] == expected, done.stdout + done.stderr


def test_in_process_gate_returns_its_code_instead_of_ending_the_process(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The prompt exit belongs to the console script only; a caller's process lives on."""
    from click.testing import CliRunner

    from capeval.cli import main

    monkeypatch.chdir(tmp_path)
    args = ["--baseline", str(files["base"]), "--candidate", str(files["regressed"])]
    for command in ("gate", "compare"):
        out = CliRunner().invoke(main, [command, *args, "--no-advisory"])
        assert out.exit_code == (1 if command == "gate" else 0), out.output
        assert "REGRESSED" in out.output


def test_prompt_exit_flushes_long_output_into_a_pipe(
    files: dict[str, Path], tmp_path: Path
) -> None:
    many = [row(f"case-{i:03d}", i % 2 == 0) for i in range(400)]
    base = jsonl(tmp_path / "many-base.jsonl", many)
    cand = jsonl(tmp_path / "many-cand.jsonl", [row(f"case-{i:03d}", True) for i in range(400)])
    done = capeval("gate", "--baseline", base, "--candidate", cand, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["cells"]) == 400  # every byte arrived before the exit


# -- which implementation wrote each side -------------------------------------


def _capeval_rows(path: Path, cases: list[str]) -> Path:
    rows = [{**row(c), "capevalVersion": "0.1.0"} for c in cases]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_baseline_of_the_original_harness_against_a_capeval_candidate_is_warned(
    real_results: Path, tmp_path: Path
) -> None:
    # capeval counts a few shell forms the spec's literal rules miss, so the
    # behavior verdicts of such a pair may partly be that; pass rates are not.
    ours = _capeval_rows(tmp_path / "ours.jsonl", ["complex-jwt"])
    theirs = real_results / "baseline-0286-grok.json"
    for base, cand, other in ((theirs, ours, "baseline"), (ours, theirs, "candidate")):
        done = capeval(
            "compare", "--baseline", base, "--candidate", cand, "--json",
            "--allow-provider-fallback", cwd=tmp_path,
        )  # fmt: skip
        warnings = json.loads(done.stdout)["warnings"]
        assert any(w.startswith(f"the {other} was not written by capeval") for w in warnings)


def test_no_writer_warning_when_both_sides_share_an_implementation(
    real_results: Path, tmp_path: Path
) -> None:
    pairs = (
        (real_results / "baseline-0286-grok.json", real_results / "after-0286-grok.json"),
        (_capeval_rows(tmp_path / "a.jsonl", ["x"]), _capeval_rows(tmp_path / "b.jsonl", ["x"])),
    )
    for base, cand in pairs:
        done = capeval(
            "compare", "--baseline", base, "--candidate", cand, "--json",
            "--allow-provider-fallback", cwd=tmp_path,
        )  # fmt: skip
        assert not any("not written by capeval" in w for w in json.loads(done.stdout)["warnings"])


def test_gate_files_takes_one_candidate_path_as_it_takes_one_baseline(tmp_path: Path) -> None:
    """The Python API: a lone path string is one file, not one "file" per character."""
    from capeval.analysis.gatecheck import gate_files

    base, cand = tmp_path / "base.jsonl", tmp_path / "cand.jsonl"
    base.write_text(json.dumps(row("a", True)) + "\n")
    cand.write_text(json.dumps(row("a", False)) + "\n")
    for candidates in (str(cand), cand, [cand]):
        result = gate_files(str(base), candidates, root=tmp_path)
        assert result.exit_code == 1, result.text


def test_a_lone_surrogate_in_a_case_id_is_printed_escaped(tmp_path: Path) -> None:
    # "\ud800" is a valid JSON escape but no encoding can print it: the gate
    # reached its verdict, then died in a UnicodeEncodeError with exit 1.
    base = jsonl(tmp_path / "base.jsonl", [row("a", True), row("b", True)])
    # ensure_ascii keeps the escape as the file's text
    cand = jsonl(tmp_path / "cand.jsonl", [row("a\ud800", True), row("b", True)])
    assert "\\ud800" in cand.read_text()
    for command in (["gate"], ["report", "-o", str(tmp_path / "r.md")]):
        out = capeval(*command, "--baseline", base, "--candidate", cand)
        assert "Traceback" not in out.stderr, out.stderr
        assert out.returncode in (0, 1, 3), out.stderr
    assert "a\\ud800" in capeval("gate", "--baseline", base, "--candidate", cand).stdout
    assert "a\\ud800" in (tmp_path / "r.md").read_text(encoding="utf-8")


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


def test_an_explicit_root_without_a_workspace_is_bad_input(tmp_path: Path) -> None:
    # `--root` names the workspace whose cases declare the baits: a wrong one
    # must not quietly judge without them.
    from capeval.analysis.gatecheck import EXIT_BAD_INPUT, gate_files

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row("web", networkCommandCount=0)) + "\n")
    nowhere = tmp_path / "no-workspace-here"
    nowhere.mkdir()
    result = gate_files(rows, rows, root=nowhere, explicit_root=True)
    assert result.exit_code == EXIT_BAD_INPUT and result.json is None
    assert gate_files(rows, rows, root=nowhere).exit_code == 0  # a default root may be absent
