"""Report renderings: Markdown, JSON, JUnit XML and self-contained HTML."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from capeval.analysis import stats
from capeval.analysis.compare import add_advisory, compare_cells
from capeval.analysis.report import render, render_refusal, render_text
from capeval.core.cell import Cell, cells_from_rows
from capeval.core.verdict import Comparison
from tests.analysis.test_gate import BAIT_FLAGS
from tests.rowfactory import gate_row as row


def make_comparison() -> Comparison:
    bait = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("a", True), row("b", False, repeatedSearchCount=1), row("web", bait=bait)]
    cand = [row("a", False), row("b", True, repeatedSearchCount=3), row("web", bait=bait), row("n")]
    return compare_cells(cells_from_rows(base), cells_from_rows(cand))


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    return make_comparison()


def test_text_puts_regressions_first_and_prints_flags(comparison) -> None:  # type: ignore[no-untyped-def]
    text = render_text(comparison)
    assert text.index("REGRESSED") < text.index("IMPROVED") < text.index("unchanged")
    assert "BAIT FLAG web networkCommandCount median 0 did not exceed 0 on baseline" in text
    assert text.rstrip().endswith("gate: REGRESSED (exit 1)")


def test_markdown_has_headline_verdict_cells_behaviors_and_baits(comparison) -> None:  # type: ignore[no-untyped-def]
    md = render(comparison, "md")
    assert "**Verdict: REGRESSED** (exit 1)" in md
    assert "| pass rate | 2/3 (66.7%) | 3/4 (75.0%) |" in md
    assert "| input tokens per repeat (mean) | 10 | 10 |" in md
    assert "| regress | `v1::b` | repeatedSearchCount | 1 | 3 |" in md
    assert md.index("**regressed**") < md.index("| improved |")
    assert "BAIT FLAG web" in md


def test_headline_compares_means_per_repeat_not_sums_over_different_repeat_counts() -> None:
    # The gate procedure: a 5-repeat candidate against a 3-repeat baseline of
    # the same agent. Sums would show it 67% slower and costlier.
    base = [row("a", True, repeat=r) for r in range(3)]
    cand = [row("a", True, repeat=r) for r in range(5)]
    cand[4] = {**cand[4], "turnsUsed": None, "tokenUsage": None}  # not reported: left out
    md = render(compare_cells(cells_from_rows(base), cells_from_rows(cand)), "md")
    assert "| wall time per repeat (mean) | 1.0 s | 1.0 s |" in md
    assert "| turns per repeat (mean) | 3.0 | 3.0 |" in md
    assert "| input tokens per repeat (mean) | 10 | 10 |" in md
    # Totals name the repeats they sum, so unequal counts read as such.
    assert "| wall time (total) | 3.0 s (3 repeats) | 5.0 s (5 repeats) |" in md
    assert "| turns (total) | 9 (3 repeats) | 12 (4 repeats) |" in md
    assert "| input tokens (total) | 30 (3 repeats) | 40 (4 repeats) |" in md


def test_headline_counts_a_baseline_cell_once_when_matched_on_case_id() -> None:
    # A one-variant baseline against a two-variant matrix run: its cell stands
    # beside both candidate variants, and its repeats were summed twice (7/7).
    base = [row("a", r > 0, variant="default", repeat=r) for r in range(3)] + [
        row("b", variant="default")
    ]
    cand = [row("a", True, variant=v, repeat=r) for v in ("old", "new") for r in range(3)]
    comparison = compare_cells(cells_from_rows(base), cells_from_rows(cand))
    assert comparison.matched_on_case_id
    assert "| pass rate | 3/4 (75.0%) | 6/6 (100.0%) |" in render(comparison, "md")


def test_headline_shows_a_dash_when_no_repeat_reported_a_value() -> None:
    rows = [{**row("a", True), "tokenUsage": None}]
    md = render(compare_cells(cells_from_rows(rows), cells_from_rows(rows)), "md")
    assert "| input tokens per repeat (mean) | - | - |" in md
    assert "| input tokens (total) | - | - |" in md


def test_behavior_changes_list_regressions_first_whatever_the_cell_order() -> None:
    # "a" sorts first among the unchanged cells, but only "z" regressed a behavior.
    base = [row("a", True, repeatedSearchCount=3), row("z", True, repeatedSearchCount=1)]
    cand = [row("a", True, repeatedSearchCount=1), row("z", True, repeatedSearchCount=3)]
    comparison = compare_cells(cells_from_rows(base), cells_from_rows(cand))
    for fmt, regress, improve in (
        ("md", "| regress | `v1::z`", "| improve | `v1::a`"),
        ("html", "<td>regress</td><td>v1::z</td>", "<td>improve</td><td>v1::a</td>"),
    ):
        out = render(comparison, fmt)
        assert out.index(regress) < out.index(improve), fmt


def test_json_report_is_the_section_8_object_plus_exit_code(comparison) -> None:  # type: ignore[no-untyped-def]
    obj = json.loads(render(comparison, "json"))
    assert obj["exitCode"] == 1
    assert obj["summary"] == comparison.to_json()["summary"]


def test_junit_has_one_testcase_per_cell_and_fails_regressions_and_flags(comparison) -> None:  # type: ignore[no-untyped-def]
    root = ET.fromstring(render(comparison, "junit"))
    suite = root.find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"a", "b", "web", "n"}
    assert cases["a"].find("failure") is not None
    assert cases["web"].find("failure") is not None  # bait flag
    assert cases["b"].find("failure") is None and cases["n"].find("failure") is None
    assert suite.get("failures") == "2" and suite.get("tests") == "4"
    failure_types = {name: case.find("failure") for name, case in cases.items()}
    assert failure_types["a"].get("type") == "regressed"  # type: ignore[union-attr]
    assert failure_types["web"].get("type") == "bait-flag"  # type: ignore[union-attr]


def test_junit_carries_the_comparisons_warnings_and_only_then() -> None:
    # A cell the candidate did not run is a warning the Markdown shows; a CI
    # system showing only the XML must see it too.
    base = [row("a", True), row("gone", True)]
    comparison = compare_cells(cells_from_rows(base), cells_from_rows([row("a", True)]))
    assert comparison.warnings
    suite = ET.fromstring(render(comparison, "junit")).find("testsuite")
    assert suite is not None
    err = suite.find("system-err")
    assert err is not None and err.text is not None
    assert err.text.splitlines() == [f"warning: {w}" for w in comparison.warnings]
    quiet = compare_cells(cells_from_rows([row("a", True)]), cells_from_rows([row("a", True)]))
    assert not quiet.warnings
    assert ET.fromstring(render(quiet, "junit")).find("testsuite/system-err") is None


def test_junit_stays_well_formed_with_a_control_character_in_a_case_id() -> None:
    comparison = compare_cells(
        cells_from_rows([row("a\x01b", True)]), cells_from_rows([row("a\x01b", False)])
    )
    root = ET.fromstring(render(comparison, "junit"))  # raised "not well-formed" before
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == ["a\\x01b"]


def test_markdown_tables_survive_a_line_break_or_backtick_in_a_case_id() -> None:
    # A newline in a cell ended the table (every later row, regressions first,
    # became loose text); a backtick ended the code span early.
    ids = ["a`b", "n\nl", "z"]
    comparison = compare_cells(
        cells_from_rows([row(i, True, repeatedSearchCount=1) for i in ids]),
        cells_from_rows([row(i, False, repeatedSearchCount=2) for i in ids]),
    )
    md = render(comparison, "md")
    cells = md.split("## Cells")[1].split("## Behavior changes")[0].strip().splitlines()
    assert len(cells) == 2 + len(ids) and all(line.startswith("|") for line in cells)
    assert "| ``v1::a`b`` |" in cells[2] and "| `v1::n\\x0al` |" in cells[3]
    behaviors = md.split("## Behavior changes")[1].split("## Baits")[0].strip().splitlines()
    assert len(behaviors) == 2 + len(ids) and all(line.startswith("|") for line in behaviors)


def test_a_bait_without_baseline_stats_is_not_called_reproducing() -> None:
    bait = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("web", bait=bait, behaviors=None)]
    cand = [row("web", bait=bait, networkCommandCount=3)]
    md = render(compare_cells(cells_from_rows(base), cells_from_rows(cand)), "md")
    line = next(x for x in md.splitlines() if x.startswith("| `v1::web`"))
    assert "unproven (no baseline stats)" in line and "reproduces" not in line


@pytest.mark.slow
def test_html_is_self_contained_with_an_embedded_plot(comparison) -> None:  # type: ignore[no-untyped-def]
    page = render(comparison, "html")
    assert page.startswith("<!doctype html>")
    assert re.search(r'src="data:image/png;base64,[A-Za-z0-9+/=]{100,}"', page)
    # No remote resources of any kind.
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "<script" not in page
    # The Markdown report's sections are all there: baits with their honesty, flags.
    assert "<h2>Baits</h2>" in page and "<td>FLAG</td>" in page
    assert "BAIT FLAG web networkCommandCount" in page


@pytest.mark.slow
def test_html_carries_the_advisory_statistics() -> None:
    comparison = make_comparison()
    add_advisory(comparison)
    page = render(comparison, "html")
    assert "<h2>Advisory statistics</h2>" in page
    assert "baseline pass rate (case bootstrap)" in page and "never change the gate" in page


@pytest.mark.slow
def test_html_leaves_the_callers_matplotlib_backend_alone() -> None:
    """A notebook that renders an HTML report keeps its own backend (no pyplot, no use())."""
    code = (
        "import sys, matplotlib\n"
        "matplotlib.use('svg')\n"
        "from tests.analysis.test_report import make_comparison\n"
        "from capeval.analysis.report import render\n"
        "assert render(make_comparison(), 'html').startswith('<!doctype html>')\n"
        "print(matplotlib.get_backend(), 'matplotlib.pyplot' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["svg", "False"]


@pytest.mark.slow
def test_report_command_writes_the_file(real_results: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "report.md"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "capeval",
            "report",
            "--baseline",
            str(real_results / "baseline-0286-grok.json"),
            "--candidate",
            str(real_results / "after-0286-grok.json"),
            "--allow-provider-fallback",
            *BAIT_FLAGS,
            "--no-advisory",
            "-o",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    md = out.read_text()
    assert "**Verdict: UNCLEAN (bait flags)** (exit 3)" in md
    assert "| pass rate | 19/21 (90.5%) | 21/21 (100.0%) |" in md
    assert "BAIT FLAG env-bait envAssignmentCommandCount median 0 did not exceed 0" in md


def test_report_without_baseline_uses_the_configured_one(repo_root: Path, tmp_path: Path) -> None:
    """Like `capeval gate`: the workspace's capeval.toml names the frozen baseline."""
    from tests import clirun

    baseline = repo_root / "evals" / "capability" / "results" / "baseline.json"
    out = tmp_path / "report.json"
    done = clirun.capeval(
        "report", "--candidate", baseline, "--format", "json", "--no-advisory", "-o", out,
        cwd=repo_root,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    obj = json.loads(out.read_text())
    assert obj["exitCode"] == 0 and len([c for c in obj["cells"] if c["bait"]]) == 5


@pytest.mark.parametrize("command", ["gate", "report"])
def test_no_baseline_anywhere_is_exit_2_naming_the_fix(command: str, tmp_path: Path) -> None:
    from tests import clirun
    from tests.casefactory import write_case

    write_case(tmp_path, "a")
    (tmp_path / "capeval.toml").write_text('[agents.x]\ntype = "scripted"\n')
    cand = tmp_path / "c.jsonl"
    cand.write_text("")
    done = clirun.capeval(command, "--candidate", cand, cwd=tmp_path)
    assert done.returncode == 2
    assert f"capeval {command}: no --baseline given" in done.stderr
    assert 'baseline = "evals/capability/results/baseline.json"' in done.stderr


@pytest.mark.parametrize("fmt", ["md", "json", "junit", "html"])
def test_a_refused_comparison_still_writes_a_report_saying_why(
    fmt: str, real_results: Path, tmp_path: Path
) -> None:
    """The real grok files change provider/model: without the flag the gate refuses them."""
    from tests import clirun

    out = tmp_path / f"report.{fmt}"
    out.write_text("stale report from the last run\n")
    done = clirun.capeval(
        "report", "--format", fmt, "-o", out, "--no-advisory",
        "--baseline", real_results / "baseline-0286-grok.json",
        "--candidate", real_results / "after-0286-grok.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert "refused:" in done.stderr and "refused, exit 2" in done.stderr
    text = out.read_text()
    assert "stale" not in text
    if fmt == "json":
        obj = json.loads(text)
        assert obj["exitCode"] == 2 and obj["errors"]
        assert any("--allow-provider-fallback" in e for e in obj["errors"])
        # The real rows say tier "bait" and declare none: never silently unchecked.
        assert any("bait case(s) without a bait declaration: edit-bait" in e for e in obj["errors"])
    elif fmt == "junit":
        error = ET.fromstring(text).find("./testsuite/testcase/error")
        assert error is not None and "--allow-provider-fallback" in (error.text or "")
    else:
        assert "REFUSED" in text and "exit 2" in text
        assert "--allow-provider-fallback" in text


def test_tables_show_medians_without_floating_point_noise() -> None:
    # (27.9 + 28.3) / 2 is 28.099999999999998 in binary floating point.
    base = [row("a", maxTurnDurationMs=27.9, repeat=0), row("a", maxTurnDurationMs=28.3, repeat=1)]
    cand = [row("a", maxTurnDurationMs=1, repeat=0)]
    comparison = compare_cells(cells_from_rows(base), cells_from_rows(cand))
    for text in (render_text(comparison), render(comparison, "md")):
        assert "28.1" in text and "28.099999999999998" not in text


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_a_comparison_the_gate_refuses_never_reads_clean(fmt: str) -> None:
    """`compare` shows what the gate refuses (nothing matched, a mixed cell): its
    verdict line must say the gate refuses it, not `CLEAN (exit 0)` beside `clean: false`."""
    unmatched = compare_cells(
        cells_from_rows([row("a", variant="v1"), row("a", variant="v2")]),
        cells_from_rows([row("a", variant="v3")]),
    )
    mixed_rows = [row("a", repeat=0), row("a", repeat=1, model="fallback")]
    mixed = compare_cells(cells_from_rows(mixed_rows), cells_from_rows(mixed_rows))
    for comparison in (unmatched, mixed):
        assert comparison.exit_code == 0 and comparison.refusals(gate=True)
        if fmt == "text":
            assert (
                render_text(comparison)
                .rstrip()
                .endswith("gate: REFUSED (exit 2); see the warnings")
            )
        elif fmt == "md":
            assert "**Verdict: REFUSED** (exit 2)" in render(comparison, "md")
        else:
            assert json.loads(render(comparison, "json"))["exitCode"] == 2


def test_a_refused_junit_report_stays_valid_xml_whatever_the_files_hold() -> None:
    """A refusal names cells and providers read from foreign files; a control
    character there must not make the CI system's XML parser reject the report."""
    from capeval.analysis.report import render_refusal

    text = render_refusal(
        ["provider/model changed: baseline resolved p\x03:m in v\x01::a"], "junit"
    )
    error = ET.fromstring(text).find("./testsuite/testcase/error")
    assert error is not None and "p\\x03:m in v\\x01::a" in (error.text or "")


def test_an_unwritable_output_path_is_exit_2_naming_it(tmp_path: Path) -> None:
    """A file where the output's folder should be: a one-line error, no traceback."""
    from tests import clirun

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row("a")) + "\n")
    done = clirun.capeval(
        "report", "--baseline", rows, "--candidate", rows, "--no-advisory",
        "-o", tmp_path / "rows.jsonl" / "report.md", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "capeval report: cannot write" in done.stderr and "rows.jsonl" in done.stderr


def test_junit_counts_add_up_when_a_missing_cell_carries_a_bait_flag() -> None:
    """Each testcase is a failure or a skip, never both: CI computes passes from the counts."""
    bait = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("a"), row("web", bait=bait)]  # web's baseline median 0: flagged
    comparison = compare_cells(cells_from_rows(base), cells_from_rows([row("a")]))
    suite = ET.fromstring(render(comparison, "junit")).find("testsuite")
    assert suite is not None
    cases = list(suite.iter("testcase"))
    failures = sum(1 for c in cases if c.find("failure") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    assert (failures, skipped) == (1, 0)
    assert suite.get("failures") == str(failures) and suite.get("skipped") == str(skipped)


def test_junit_failure_of_a_regressed_bait_cell_keeps_its_flag_line() -> None:
    """A bait cell that regressed and no longer reproduces on the baseline says both."""
    bait = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("web", True, bait=bait)]  # baseline median 0: flagged
    cand = [row("web", False, bait=bait)]
    comparison = compare_cells(cells_from_rows(base), cells_from_rows(cand))
    suite = ET.fromstring(render(comparison, "junit")).find("testsuite")
    assert suite is not None
    (failure,) = [c.find("failure") for c in suite.iter("testcase")]
    assert failure is not None
    message = failure.get("message") or ""
    assert "pass rate regressed: 1/1 (100%) -> 0/1 (0%)" in message
    assert "BAIT FLAG web networkCommandCount median 0 did not exceed 0 on baseline" in message
    assert failure.get("type") == "regressed"


def test_html_plots_at_most_sixty_cells_changed_ones_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of cells drew a plot 70,000 pixels tall (20 s); the table keeps them all."""
    from capeval.analysis import report

    base = [row(f"case-{i:03d}", True) for i in range(150)]
    cand = [row(f"case-{i:03d}", i % 50 != 7) for i in range(150)]  # 3 regressions
    comparison = compare_cells(cells_from_rows(base), cells_from_rows(cand))
    plotted: list[list[str]] = []
    draw = report._pass_rate_plot
    monkeypatch.setattr(
        report,
        "_pass_rate_plot",
        lambda cells: plotted.append([c.caseId for c in cells]) or draw(cells),
    )
    html_text = render(comparison, "html")
    (shown,) = plotted
    assert len(shown) == report.PLOT_CELLS == 60
    assert shown[:3] == ["case-007", "case-057", "case-107"]
    assert "The 60 cells shown of 150" in html_text
    assert html_text.count("case-149") >= 1  # in the table, though not plotted
    small = compare_cells(cells_from_rows(base[:5]), cells_from_rows(cand[:5]))
    assert "cells shown of" not in render(small, "html")


def _cell(case: str, passes: int, repeats: int, **metrics: Any) -> Cell:
    rows = [row(case, r < passes, repeat=r, **metrics) for r in range(repeats)]
    return cells_from_rows(rows)[f"v1::{case}"]


def test_paired_cases_sign_and_mean_interval() -> None:
    import numpy as np
    from scipy.stats import bootstrap

    pairs = [
        (_cell("a", 0, 4), _cell("a", 4, 4)),
        (_cell("b", 1, 4), _cell("b", 4, 4)),
        (_cell("c", 3, 4), _cell("c", 2, 4)),
        (_cell("d", 0, 4), _cell("d", 1, 4)),
    ]
    out = stats.paired_cases(pairs, seed=3)
    assert (out["better"], out["worse"]) == (3, 1)
    assert out["meanDifference"] == pytest.approx((1 + 0.75 - 0.25 + 0.25) / 4)
    d = np.sort(np.asarray([1.0, 0.75, -0.25, 0.25]))
    want = bootstrap(
        (d,),
        np.mean,
        n_resamples=stats.BOOTSTRAP_RESAMPLES,
        confidence_level=stats.CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(3),
    ).confidence_interval
    assert out["differenceCI"] == [pytest.approx(want.low), pytest.approx(want.high)]


def _annotated() -> Comparison:
    base = cells_from_rows(
        [row("a", r < 1, repeat=r) for r in range(3)] + [row("b", True, repeat=r) for r in range(3)]
    )
    cand = cells_from_rows(
        [row("a", True, repeat=r) for r in range(3)] + [row("b", True, repeat=r) for r in range(3)]
    )
    return compare_cells(base, cand, advisory=True, seed=1)


def _md_line(md: str, start: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(start))


def test_markdown_cells_show_each_sides_wilson_interval_and_advisory_notes() -> None:
    comparison = _annotated()
    md = render(comparison, "md")
    lo_b, hi_b = stats.wilson(1, 3)  # type: ignore[misc]
    line = _md_line(md, "| improved | `v1::a`")
    assert f"1/3 (33%) [{lo_b:.2f}, {hi_b:.2f}]" in line
    assert "3/3 (100%) [0.44, 1.00]" in line
    assert "flaky baseline" in line and "barnard p=" in line
    # Newcombe's interval for the difference, which the notes said they showed.
    test = comparison.cells[0].advisory["exactTest"]
    lo_d, hi_d = test["differenceCI"]
    diff = f"diff {test['difference']:+.2f} [{lo_d:+.2f}, {hi_d:+.2f}]"
    assert diff in line
    for text in (render_text(comparison), render(comparison, "html")):
        assert "flaky baseline" in text and f"[{lo_b:.2f}, {hi_b:.2f}]" in text
        assert diff in text


def test_markdown_advisory_section_lists_variant_rates_and_paired_tests() -> None:
    comparison = _annotated()
    md = render(comparison, "md")
    assert "## Advisory statistics" in md and "never change the gate's exit code" in md
    v = comparison.advisory["variants"]["v1"]
    v["paired"]["wilcoxonP"] = 0.5  # unlike the sign test's p, so the columns cannot swap
    md = render(comparison, "md")
    line = _md_line(md, "| `v1` |")
    base, cand, paired = v["baseline"], v["candidate"], v["paired"]
    assert f"| {base['passRate']:.1%} [{base['ci'][0]:.1%}, {base['ci'][1]:.1%}] |" in line
    assert f"| {cand['passRate']:.1%}" in line
    assert line.endswith(f"| 2 | {paired['signTestP']:.3g} | 0.5 |")


def test_headline_rate_with_no_pass_and_times_in_minutes() -> None:
    base = [{**row("a", False), "durationMs": 90_000}]
    cand = [{**row("a", False), "durationMs": 7_200_000}]
    md = render(compare_cells(cells_from_rows(base), cells_from_rows(cand)), "md")
    assert "| pass rate | 0/1 (0.0%) | 0/1 (0.0%) |" in md
    assert "| wall time (total) | 1.5 min (1 repeat) | 2.0 h (1 repeat) |" in md


def test_headline_input_tokens_are_input_not_output() -> None:
    r = row("a")
    r = {**r, "tokenUsage": {**r["tokenUsage"], "input": 1234, "output": 7}}
    md = render(compare_cells(cells_from_rows([r]), cells_from_rows([r])), "md")
    assert "| input tokens (total) | 1,234 (1 repeat) | 1,234 (1 repeat) |" in md


def test_behavior_change_rows_show_the_difference_interval() -> None:
    base = cells_from_rows(
        [row("a", repeat=r, repeatedSearchCount=v) for r, v in enumerate([1, 2, 3, 4])]
    )
    cand = cells_from_rows(
        [row("a", repeat=r, repeatedSearchCount=v) for r, v in enumerate([5, 7, 9, 11])]
    )
    comparison = compare_cells(base, cand, advisory=True)
    ci = comparison.cells[0].advisory["behaviors"]["repeatedSearchCount"]["differenceCI"]
    assert ci[0] != ci[1]
    line = _md_line(render(comparison, "md"), "| regress | `v1::a` | repeatedSearchCount")
    assert line.endswith(f"| [{ci[0]:g}, {ci[1]:g}] |")


def test_bait_table_says_whether_the_candidate_misbehaves() -> None:
    bait = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("web", bait=bait, networkCommandCount=2)]
    cand = [row("web", bait=bait, networkCommandCount=1), row("ok", bait=bait)]
    md = render(compare_cells(cells_from_rows(base), cells_from_rows(cand)), "md")
    assert _md_line(md, "| `v1::web`").endswith("| 0 | 2 | 1 | yes | reproduces | rows |")
    assert _md_line(md, "| `v1::ok`").endswith(
        "| 0 | no stats | 0 | no | unproven (no baseline stats) | rows |"
    )
    # Where each declaration came from, as the text output says it.
    html = render(compare_cells(cells_from_rows(base), cells_from_rows(cand)), "html")
    assert "<th>declared by</th>" in html and "<td>rows</td>" in html


def test_markdown_escapes_a_pipe_and_lists_warnings() -> None:
    rows = [row("a|b", True, repeat=0), row("a|b", True, repeat=1, model="fallback")]
    comparison = compare_cells(cells_from_rows(rows), cells_from_rows(rows))
    md = render(comparison, "md")
    assert "`v1::a\\|b`" in md
    assert comparison.warnings
    warnings = md.split("## Warnings")[1].strip().splitlines()
    assert warnings[0] == f"- {comparison.warnings[0]}"


def test_junit_testcase_class_is_the_variant_and_name_the_case() -> None:
    comparison = compare_cells(
        cells_from_rows([row("a", variant="fast")]), cells_from_rows([row("a", variant="fast")])
    )
    (case,) = ET.fromstring(render(comparison, "junit")).iter("testcase")
    assert (case.get("classname"), case.get("name")) == ("fast", "a")


def test_a_refused_junit_report_counts_one_error() -> None:
    suite = ET.fromstring(render_refusal(["nothing matched"], "junit")).find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("tests") == "1"


@pytest.mark.slow
def test_html_has_the_headline_and_escapes_case_ids() -> None:
    rows = [row("<b>x</b>", True)]
    page = render(compare_cells(cells_from_rows(rows), cells_from_rows(rows)), "html")
    assert "<td>pass rate</td><td>1/1 (100.0%)</td><td>1/1 (100.0%)</td>" in page
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_json_report_carries_the_advisory_numbers() -> None:
    comparison = _annotated()
    obj = json.loads(render(comparison, "json"))
    assert obj["advisory"]["flakyBaselineCells"] == ["v1::a"]
    a = next(c for c in obj["cells"] if c["caseId"] == "a")
    assert a["advisory"]["baseline"]["wilson"] == list(stats.wilson(1, 3))  # type: ignore[arg-type]
