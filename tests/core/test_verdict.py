"""Verdict rules (docs/gating.md#the-rules) on crafted rows: one test per rule, no files."""

from __future__ import annotations

from typing import Any

import pytest

from capeval.core.cell import BaitDecl, cells_from_rows, format_number
from capeval.core.metrics import METRIC_NAMES
from capeval.core.verdict import judge_cells, normalize_baits, parse_bait_override
from tests.rowfactory import gate_row as row


def compare(base_rows: list[dict[str, Any]], cand_rows: list[dict[str, Any]], **kw: Any) -> Any:
    return judge_cells(cells_from_rows(base_rows), cells_from_rows(cand_rows), **kw)


def verdicts(cell: Any) -> dict[str, tuple[float, float, str]]:
    return {b.metric: (b.baselineMedian, b.candidateMedian, b.verdict) for b in cell.behaviors}


def test_pass_rate_statuses_have_no_tolerance() -> None:
    base = [row("a", r < 2, repeat=r) for r in range(3)] + [row("b", True), row("c", True)]
    base += [row("d", r == 0, repeat=r) for r in range(1000)]
    cand = [row("a", True, repeat=r) for r in range(3)] + [row("b", False), row("c", True)]
    # 1/1000 -> 2/1999: a tiny rise is still "improved".
    cand += [row("d", r < 2, repeat=r) for r in range(1999)]
    result = compare(base, cand)
    status = {c.caseId: c.status for c in result.cells}
    assert status == {"a": "improved", "b": "regressed", "c": "unchanged", "d": "improved"}
    assert result.summary["regressed"] == 1 and result.exit_code == 1 and not result.clean


def test_exact_ties_are_unchanged_and_neutral() -> None:
    # 2/4 and 1/2 are the same rate; medians 3 and 3 tie.
    base = [row("a", r < 2, repeat=r, repeatedSearchCount=3) for r in range(4)]
    cand = [row("a", r < 1, repeat=r, repeatedSearchCount=3) for r in range(2)]
    result = compare(base, cand)
    (cell,) = result.cells
    assert cell.status == "unchanged"
    assert verdicts(cell)["repeatedSearchCount"] == (3, 3, "neutral")
    assert result.exit_code == 0 and result.clean


def test_even_count_medians_are_the_mean_of_the_middle_two() -> None:
    base = [row("a", repeat=0, repeatedSearchCount=1), row("a", repeat=1, repeatedSearchCount=4)]
    cand = [row("a", repeat=0, repeatedSearchCount=2), row("a", repeat=1, repeatedSearchCount=4)]
    (cell,) = compare(base, cand).cells
    # 2.5 -> 3: a lower-is-better metric got worse.
    assert verdicts(cell)["repeatedSearchCount"] == (2.5, 3, "regress")
    assert cell.to_json()["behaviors"][8] == {
        "metric": "repeatedSearchCount",
        "baselineMedian": 2.5,
        "candidateMedian": 3,
        "verdict": "regress",
    }


def test_lower_metrics_improve_or_regress_and_neutral_metrics_never_do() -> None:
    base = [row("a", networkCommandCount=2, shellCommandCount=1, maxTurnDurationMs=500)]
    cand = [row("a", networkCommandCount=1, shellCommandCount=9, maxTurnDurationMs=501)]
    (cell,) = compare(base, cand).cells
    v = verdicts(cell)
    assert v["networkCommandCount"][2] == "improve"
    assert v["maxTurnDurationMs"][2] == "regress"
    assert v["shellCommandCount"][2] == "neutral"
    assert [b.metric for b in cell.behaviors] == list(METRIC_NAMES)


def test_null_behaviors_are_left_out_of_medians_and_all_null_skips() -> None:
    base = [
        row("a", repeat=0, repeatedSearchCount=5),
        row("a", repeat=1, behaviors=None),
        row("a", repeat=2, behaviors=None),
    ]
    cand = [row("a", repeat=0, behaviors=None), row("a", repeat=1, behaviors=None)]
    (cell,) = compare(base, cand).cells
    assert cell.baseline is not None and cell.baseline.medians["repeatedSearchCount"] == 5
    # The candidate has no stats at all: no verdict (never zeros).
    assert cell.behaviors == []


def test_metric_present_on_one_side_only_is_skipped() -> None:
    base = [row("a", maxTurnDurationMs=None, networkCommandCount=1)]
    cand = [row("a", maxTurnDurationMs=10, networkCommandCount=0)]
    (cell,) = compare(base, cand).cells
    v = verdicts(cell)
    assert "maxTurnDurationMs" not in v
    assert v["networkCommandCount"] == (1, 0, "improve")


def test_new_and_missing_cells() -> None:
    base = [row("a"), row("gone", False)]
    cand = [row("a"), row("fresh", False)]
    result = compare(base, cand)
    by_case = {c.caseId: c for c in result.cells}
    assert by_case["fresh"].status == "new" and by_case["fresh"].to_json()["baseline"] is None
    assert by_case["gone"].status == "missing" and by_case["gone"].to_json()["candidate"] is None
    assert by_case["gone"].behaviors == [] and by_case["fresh"].behaviors == []
    assert result.summary["new"] == 1 and result.summary["missing"] == 1
    assert (result.summary["unchanged"], result.summary["improved"]) == (1, 0)
    # Neither makes the comparison unclean.
    assert result.exit_code == 0
    assert any("missing from the candidate" in w for w in result.warnings)


def test_single_variant_baseline_matches_on_case_id() -> None:
    base = [row("a", False, variant="default:default"), row("b", variant="default:default")]
    cand = [row("a", variant="scripted:oracle"), row("b", False, variant="scripted:oracle")]
    result = compare(base, cand)
    assert result.matched_on_case_id
    assert {c.resultKey: c.status for c in result.cells} == {
        "scripted:oracle::a": "improved",
        "scripted:oracle::b": "regressed",
    }
    assert any("matched on case id" in w for w in result.warnings)


def test_no_case_id_fallback_when_the_baseline_has_two_variants() -> None:
    base = [row("a", variant="x"), row("a", variant="y")]
    cand = [row("a", variant="z")]
    result = compare(base, cand)
    assert not result.matched_on_case_id
    assert sorted(c.status for c in result.cells) == ["missing", "missing", "new"]


def test_no_cell_compared_warns_and_the_gate_refuses() -> None:
    # Nothing can regress when no cell is on both sides: a wrong baseline
    # must not gate clean. compare only warns; the gate refuses.
    result = compare([row("a", variant="x"), row("a", variant="y")], [row("b", variant="z")])
    assert not result.matched_on_case_id
    message = result.nothing_compared
    assert message is not None and message.startswith(
        "no candidate cell matches a baseline cell (1 new, e.g. z::b; 2 missing, e.g. x::a)"
    )
    assert message in result.warnings and result.refusals(gate=False) == []
    assert result.refusals(gate=True) == [message]
    assert result.to_json()["clean"] is False  # a machine reading compare --json sees it too
    assert result.refusals(gate=True) == compare(
        [row("a", variant="x"), row("a", variant="y")],
        [row("b", variant="z")],
        allow_provider_fallback=True,
    ).refusals(gate=True)  # not a provider question: the flag does not lift it


def test_a_case_id_fallback_that_matches_nothing_says_so() -> None:
    result = compare([row("a", variant="default:default")], [row("b", variant="scripted:oracle")])
    assert not result.matched_on_case_id
    assert not any("matched on case id" in w for w in result.warnings)
    assert result.nothing_compared is not None


def test_one_matching_cell_is_enough_to_judge() -> None:
    result = compare([row("a"), row("b")], [row("a"), row("c")])
    assert result.nothing_compared is None and result.refusals(gate=True) == []


def test_a_bait_override_for_an_absent_case_warns() -> None:
    decl = BaitDecl("networkCommandCount", 0.0)
    result = compare([row("a")], [row("a")], bait_overrides={"a": decl, "a-typo": decl})
    assert [w for w in result.warnings if w.startswith("--bait")] == [
        "--bait a-typo=...: no cell of that case on either side, so the declaration "
        "judged nothing (a typo in the case id?)"
    ]


def test_bait_flag_wording_and_number_format() -> None:
    bait = {"metric": "maxTurnDurationMs", "threshold": 15000.0}
    base = [row("slow", repeat=r, bait=bait, maxTurnDurationMs=v) for r, v in enumerate([100, 200])]
    cand = [row("slow", repeat=0, bait=bait, maxTurnDurationMs=20000)]
    result = compare(base, cand)
    assert result.bait_flag_lines == [
        "BAIT FLAG slow maxTurnDurationMs median 150 did not exceed 15000 on baseline: "
        "the case no longer reproduces its misbehavior"
    ]
    (cell,) = result.cells
    assert cell.to_json()["bait"] == {
        "metric": "maxTurnDurationMs",
        "threshold": 15000,
        "baselineMedian": 150,
        "candidateMedian": 20000,
        "misbehaving": True,
        "flag": True,
        "source": "rows",
    }
    assert result.bait_flags == ["slow"] and result.exit_code == 3 and not result.clean


def test_a_bait_that_still_bites_is_not_flagged() -> None:
    bait = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("web", bait=bait, networkCommandCount=1)]
    cand = [row("web", bait=bait, networkCommandCount=0)]
    result = compare(base, cand)
    (cell,) = result.cells
    assert cell.bait is not None and not cell.bait.flag and cell.bait.misbehaving is False
    assert result.exit_code == 0


def test_no_flag_when_the_baseline_has_no_stats_for_the_bait_metric() -> None:
    bait = {"metric": "networkCommandCount", "threshold": 0}
    result = compare([row("web", bait=bait, behaviors=None)], [row("web", bait=bait)])
    (cell,) = result.cells
    assert cell.bait is not None and cell.bait.baselineMedian is None and not cell.bait.flag


def test_bait_sources_overrides_beat_rows_beat_workspace() -> None:
    rows_bait = {"metric": "networkCommandCount", "threshold": 5}
    base = [row("a", bait=rows_bait, networkCommandCount=3), row("b", networkCommandCount=3)]
    cand = [row("a", bait=rows_bait), row("b")]
    ws = {"a": BaitDecl("networkCommandCount", 0), "b": BaitDecl("networkCommandCount", 1)}
    result = compare(base, cand, workspace_baits=ws)
    by = {c.caseId: c.bait for c in result.cells}
    assert by["a"] is not None and by["a"].threshold == 5  # rows beat the workspace
    assert by["b"] is not None and by["b"].threshold == 1  # workspace fills in
    result = compare(
        base, cand, workspace_baits=ws, bait_overrides={"a": BaitDecl("networkCommandCount", 2)}
    )
    by = {c.caseId: c.bait for c in result.cells}
    assert by["a"] is not None and by["a"].threshold == 2 and not by["a"].flag


def test_provider_change_is_refused_naming_both_unless_allowed() -> None:
    base = [row("a", provider="zen", model="north")]
    cand = [row("a", provider="xai/thegreataxios", model="grok-4.5")]
    result = compare(base, cand)
    (message,) = result.refusals(gate=False)
    assert "zen:north" in message and "xai/thegreataxios:grok-4.5" in message
    allowed = compare(base, cand, allow_provider_fallback=True)
    assert allowed.refusals(gate=True) == []
    assert any("zen:north" in w for w in allowed.warnings)


def test_a_refused_provider_change_is_a_warning_in_the_json() -> None:
    """`clean: false` must come with its cause: the refusal `compare` prints, once."""
    base = [row("a", provider="zen", model="north")]
    cand = [row("a", provider="xai/thegreataxios", model="grok-4.5")]
    result = compare(base, cand)
    obj = result.to_json()
    (refusal,) = result.refusals(gate=False)
    assert refusal.endswith("; pass --allow-provider-fallback to judge anyway")
    assert obj["clean"] is False and obj["warnings"].count(refusal) == 1
    # The comparison itself is untouched (text output, a second to_json).
    assert refusal not in result.warnings and result.to_json() == obj
    allowed = compare(base, cand, allow_provider_fallback=True).to_json()
    assert not any("pass --allow-provider-fallback" in w for w in allowed["warnings"])


def test_mixed_cell_is_a_warning_for_compare_and_refused_by_the_gate() -> None:
    base = [row("a", repeat=0), row("a", repeat=1, provider="other", model="fallback")]
    cand = [row("a", repeat=0), row("a", repeat=1, provider="other", model="fallback")]
    result = compare(base, cand)
    assert result.refusals(gate=False) == []
    assert len(result.refusals(gate=True)) == 2  # the cell is mixed on both sides
    assert any("mixed cell v1::a in the baseline" in w for w in result.warnings)


def test_summary_counts_behavior_verdicts() -> None:
    base = [row("a", networkCommandCount=1, editViaShellCount=0), row("b", repeatedSearchCount=2)]
    cand = [row("a", networkCommandCount=0, editViaShellCount=1), row("b", repeatedSearchCount=1)]
    s = compare(base, cand).summary
    assert (s["behaviorImproved"], s["behaviorRegressed"]) == (2, 1)


def test_json_contract_keys() -> None:
    obj = compare([row("a")], [row("a")]).to_json()
    assert list(obj) == ["cells", "summary", "baitFlags", "baitPolicy", "clean", "warnings"]
    assert list(obj["summary"]) == [
        "improved",
        "regressed",
        "unchanged",
        "new",
        "missing",
        "behaviorImproved",
        "behaviorRegressed",
        "baitFlags",
    ]
    assert list(obj["cells"][0]) == [
        "resultKey",
        "caseId",
        "variantId",
        "status",
        "baseline",
        "candidate",
        "behaviors",
        "bait",
        "advisory",
    ]
    assert obj["cells"][0]["baseline"] == {
        "repeats": 1,
        "passCount": 1,
        "passRate": 1,
        "failCount": 0,
        "errorCount": 0,
    }


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("web-bait", "CASE=METRIC:THRESHOLD"),
        ("web-bait=nope:0", "unknown metric"),
        ("web-bait=networkCommandCount:x", "not a number"),
        ("web-bait=networkCommandCount:-1", ">= 0"),
        # Never exceeded: the bait would flag on every baseline, forever.
        ("web-bait=networkCommandCount:inf", "finite number >= 0"),
        ("web-bait=networkCommandCount:nan", "finite number >= 0"),
    ],
)
def test_bad_bait_overrides_say_what_to_fix(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_bait_override(text)


def test_bait_override_parses() -> None:
    assert parse_bait_override("sub=maxTurnDurationMs:15000") == (
        "sub",
        BaitDecl("maxTurnDurationMs", 15000),
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (2.0, "2"),
        (2.5, "2.5"),
        (15000.0, "15000"),
        (1 / 3, "0.3333333333333333"),
        (1.5e-5, "0.000015"),
        (1e-6, "0.000001"),  # the smallest positional one, as in JavaScript
        (1e-7, "1e-7"),
        (1.5e20, "150000000000000000000"),
        (1e21, "1e+21"),
        (-0.5, "-0.5"),
    ],
)
def test_numbers_print_as_javascript_would(value: float, text: str) -> None:
    assert format_number(value) == text


def test_a_row_bait_that_cannot_work_is_warned_about() -> None:
    # Rows are not validated like case files: a misspelt metric never flagged, silently.
    typo = {"metric": "networkCommandCnt", "threshold": 0}
    negative = {"metric": "networkCommandCount", "threshold": -1}
    result = compare(
        [row("a", bait=typo), row("b", bait=negative)], [row("a", bait=typo), row("b")]
    )
    # Each names whose rows to fix, and how to judge the case meanwhile.
    assert (
        "v1::a: its bait names 'networkCommandCnt', which is no numeric behavior metric "
        "(declared in the baseline and candidate rows; fix them or pass "
        "--bait a=METRIC:THRESHOLD), so it can never flag or prove anything" in result.warnings
    )
    assert any(
        w.startswith(
            "v1::b: its bait has a negative threshold (-1) (declared in the baseline rows;"
        )
        for w in result.warnings
    )


def test_a_usable_row_bait_beside_a_broken_one_is_used_silently() -> None:
    broken = {"metric": "networkCommandCount", "threshold": "0"}
    good = {"metric": "networkCommandCount", "threshold": 0}
    rows = [row("a", repeat=0, bait=broken), row("a", repeat=1, bait=good)]
    result = compare(rows, rows)
    assert result.warnings == [] and result.bait_flags


def test_a_mixed_cell_is_not_clean_unless_the_fallback_is_allowed() -> None:
    """`compare` only warns about a mixed cell, but the gate refuses it: a machine
    reading `compare --json` must not see `clean: true` where the gate says exit 2."""
    rows = [row("a", repeat=0), row("a", repeat=1, model="fallback")]
    result = compare(rows, rows)
    assert result.mixed_cells and result.refusals(gate=False) == []
    assert result.to_json()["clean"] is False
    assert compare(rows, rows, allow_provider_fallback=True).to_json()["clean"] is True


def test_bait_overrides_from_python_take_every_documented_form() -> None:
    base = [row("a", repeat=r, networkCommandCount=0) for r in range(3)]
    want = BaitDecl("networkCommandCount", 0.0)
    for overrides in (
        ["a=networkCommandCount:0"],  # as the CLI's --bait (a list used to judge nothing)
        "a=networkCommandCount:0",  # one text, not one override per character
        {"a": "networkCommandCount:0"},
        {"a": {"metric": "networkCommandCount", "threshold": 0}},
        {"a": ("networkCommandCount", 0)},
        {"a": want},
    ):
        result = compare(base, base, bait_overrides=overrides)
        assert result.cells[0].bait is not None and result.cells[0].bait.flag, overrides
        assert result.bait_flags == ["a"] and not result.warnings, overrides


def test_two_empty_sides_are_not_clean() -> None:
    # compare_frames over two frames a filter emptied read CLEAN (exit 0).
    from capeval.analysis.report import gate_verdict

    result = judge_cells({}, {})
    assert result.nothing_compared == "neither side holds a cell: nothing was compared"
    assert result.nothing_compared in result.warnings
    assert not result.clean and result.to_json()["clean"] is False
    assert gate_verdict(result) == ("REFUSED", 2)


def test_a_case_given_two_different_bait_flags_is_refused() -> None:
    # The last flag silently won: the order of flags in a CI script chose the threshold.
    with pytest.raises(
        ValueError,
        match=r"--bait a=\.\.\. given twice, as "
        r"networkCommandCount:0 and networkCommandCount:3",
    ):
        normalize_baits(["a=networkCommandCount:0", "a=networkCommandCount:3"])
    same = normalize_baits(["a=networkCommandCount:0", "a=networkCommandCount:0.0"])
    assert same == {"a": BaitDecl("networkCommandCount", 0)}


def test_a_candidate_that_adds_a_provider_is_a_provider_change() -> None:
    # The baseline resolved one model, the candidate that model and a fallback:
    # their resolved models differ, so compare refuses without the flag.
    base = cells_from_rows([row("a", provider="p", model="m")])
    cand = cells_from_rows(
        [row("a", provider="p", model="m"), row("a", repeat=1, provider="p", model="fallback")]
    )
    result = judge_cells(base, cand)
    assert len(result.provider_changes) == 1
    assert "p:m" in result.provider_changes[0] and "p:fallback" in result.provider_changes[0]
    assert result.refusals(gate=False) and not result.clean


def test_a_regression_beats_a_bait_flag_for_the_exit_code() -> None:
    # Exit 3 means "nothing regressed but bait flags"; with a regression too it is 1.
    bait = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("web", bait=bait, networkCommandCount=0), row("b", True)]
    cand = [row("web", bait=bait, networkCommandCount=0), row("b", False)]
    result = judge_cells(cells_from_rows(base), cells_from_rows(cand))
    assert result.bait_flags == ["web"] and result.summary["regressed"] == 1
    assert result.exit_code == 1 and not result.clean


def test_when_the_sides_declare_different_baits_the_candidates_is_judged() -> None:
    # The case's bait was edited between the runs: the candidate carries the
    # current declaration, and the baseline is judged against it.
    old = {"metric": "networkCommandCount", "threshold": 5}
    new = {"metric": "networkCommandCount", "threshold": 0}
    base = [row("web", bait=old, networkCommandCount=2)]
    cand = [row("web", bait=new, networkCommandCount=2)]
    result = judge_cells(cells_from_rows(base), cells_from_rows(cand))
    (cell,) = result.cells
    assert cell.bait is not None and cell.bait.threshold == 0
    assert not cell.bait.flag and result.exit_code == 0
