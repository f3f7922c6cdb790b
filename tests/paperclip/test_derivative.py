"""The traceability derivative and its loader: every section-1 rule rejects a drifted copy."""

from __future__ import annotations

import copy
import csv
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from capeval.core.paperclip.policy import CORPUS_CASE_IDS, GROUP_COUNTS, GROUPS
from capeval.core.problems import ProblemsError
from capeval.paperclip.corpus import CORPUS_FACTS
from capeval.paperclip.derivative import (
    Row,
    check_derivative,
    find_derivative,
    load_derivative,
    parse_rows,
)
from capeval.paperclip.fakeagent import check_plans, derive_plan
from tests.clirun import capeval

REPO = Path(__file__).resolve().parents[2]
DERIVATIVE = REPO / "evals" / "paperclip" / "eval-traceability.yaml"


def problem_list(obj: Any) -> list[str]:
    return [str(p) for p in check_derivative(obj, file="drift.yaml")]


def messages(obj: Any) -> str:
    return "\n".join(problem_list(obj))


def test_checked_in_derivative_loads() -> None:
    rows = load_derivative(DERIVATIVE)
    assert len(rows) == 106
    assert {r.group for r in rows} == set(GROUPS)
    assert load_derivative(str(DERIVATIVE)) == rows  # a notebook's plain string


def test_derivative_carries_the_corpus_facts(doc: dict[str, Any], shared_dir: Path) -> None:
    with (shared_dir / "paperclip" / "corpus-rows.tsv").open(encoding="utf-8") as fh:
        corpus = {r["id"]: r for r in csv.DictReader(fh, delimiter="\t")}
    assert {r["id"] for r in doc["rows"]} == set(corpus)
    for row in doc["rows"]:
        facts = corpus[row["id"]]
        assert row["group"] == facts["group"]
        assert row["legacyGroup"] == int(facts["legacyGroup"])
        assert row["fixture"] == facts["fixture"]
        assert row["primaryDisposition"] == facts["primaryDisposition"]
        assert row["requiredGrants"] == facts["requiredGrants"].split(",")
        assert row["assertionClasses"] == facts["assertionClasses"].split(",")
        assert row["expectedSemantics"] == [
            s.strip() for s in facts["expectedSemantics"].split(" ; ")
        ]


def test_prose_is_specific_to_each_row(doc: dict[str, Any]) -> None:
    for field in ("title", "scenario", "expectedOutcome"):
        values = [r[field] for r in doc["rows"]]
        assert len(set(values)) == len(values), f"{field} repeats across rows"


def test_wrong_schema_version_fails(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["schemaVersion"] = 1
    assert "schemaVersion: must be 2, found 1" in messages(bad)


def test_105_rows_fail_naming_the_missing_case(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    dropped = bad["rows"].pop(7)
    out = messages(bad)
    assert "exactly 106 rows, found 105" in out
    assert f"group '{dropped['group']}' must have" in out
    assert f"rows: missing corpus case id(s): {dropped['id']};" in out


def test_duplicate_id_fails_naming_both_rows(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    lost = bad["rows"][1]["id"]
    bad["rows"][1]["id"] = bad["rows"][0]["id"]
    out = messages(bad)
    assert f"case id '{bad['rows'][0]['id']}' appears 2 times (rows[0], rows[1])" in out
    assert f"missing corpus case id(s): {lost};" in out


def test_corpus_case_ids_are_the_corpus(shared_dir: Path) -> None:
    with (shared_dir / "paperclip" / "corpus-rows.tsv").open(encoding="utf-8") as fh:
        corpus = sorted(r["id"] for r in csv.DictReader(fh, delimiter="\t"))
    assert list(CORPUS_CASE_IDS) == corpus


def test_moved_group_counts_fail(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    row = next(r for r in bad["rows"] if r["group"] == "cm")
    # A cm row relabelled as st, consistently (prefix and policy too): only the counts drift.
    row.update(
        id=row["id"].replace("cm-", "st-", 1),
        group="st",
        legacyGroup=3,
        requiredGrants=["task:disposition"],
    )
    out = messages(bad)
    assert f"group 'cm' must have {GROUP_COUNTS['cm']} rows, found {GROUP_COUNTS['cm'] - 1}" in out
    assert f"group 'st' must have {GROUP_COUNTS['st']} rows, found {GROUP_COUNTS['st'] + 1}" in out


def test_missing_group_fails(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["rows"] = [r for r in bad["rows"] if r["group"] != "rs"]
    assert "exactly 16 groups, found 15" in messages(bad)


def test_wrong_prefix_fails(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["rows"][0]["id"] = "zz-" + bad["rows"][0]["id"][3:]
    assert "must start with its group prefix 'ap-'" in messages(bad)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("primaryDisposition", "always_agent_tool"),
        ("requiredGrants", ["task:comment"]),
        ("assertionClasses", ["authorization_policy"]),
        ("legacyGroup", 3),
    ],
)
def test_row_disagreeing_with_group_policy_fails(
    doc: dict[str, Any], field: str, value: Any
) -> None:
    bad = copy.deepcopy(doc)
    row = next(r for r in bad["rows"] if r["group"] == "ap")
    row[field] = value
    out = messages(bad)
    assert f"({row['id']}).{field}: group 'ap' requires" in out


def test_unknown_field_and_bad_task_mode_fail(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["rows"][0]["extra"] = 1
    bad["rows"][1]["taskMode"] = "yolo"
    first, second = bad["rows"][0]["id"], bad["rows"][1]["id"]
    out = messages(bad)
    assert (
        f"rows[0] ({first}): Additional properties are not allowed ('extra' was unexpected)" in out
    )
    assert (
        f"drift.yaml: rows[1] ({second}).taskMode: unknown task mode 'yolo'; "
        "known: standard, ask, planning, skill_test." in out
    )


def test_unknown_actor_role_fails(doc: dict[str, Any]) -> None:
    # A capitalised role used to run as a role with no claims: a different case that passed.
    bad = copy.deepcopy(doc)
    index, row = next((i, r) for i, r in enumerate(bad["rows"]) if r["actor"] == "manager")
    row["actor"] = "Manager"
    out = messages(bad)
    assert (
        f"drift.yaml: rows[{index}] ({row['id']}).actor: unknown actor role 'Manager'; "
        "known: engineer, manager, reviewer." in out
    )
    # Below the loader, the fake agent refuses the role too instead of granting it nothing.
    with pytest.raises(ValueError, match="unknown actor role 'Manager'"):
        derive_plan(Row.from_dict(row))


def test_unknown_fixture_fails(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["rows"][2]["fixture"] = "no-such-fixture"
    out = messages(bad)
    assert (
        f"drift.yaml: rows[2] ({bad['rows'][2]['id']}).fixture: unknown fixture "
        "'no-such-fixture'; known: approval-approved, " in out
    )


def _unplannable(doc: dict[str, Any]) -> tuple[dict[str, Any], int, str]:
    """A search row whose evidence no longer has the call its grant unlocks."""
    bad = copy.deepcopy(doc)
    index, row = next((i, r) for i, r in enumerate(bad["rows"]) if r["id"] == "se-q-filters-01")
    row["expectedSemantics"] = ['GET "^/api/issues/(i-0101|MCK-101)$"']
    return bad, index, row["id"]


def test_authorization_row_the_fake_agent_cannot_test_is_a_problem(doc: dict[str, Any]) -> None:
    bad, index, case_id = _unplannable(doc)
    # The loader refuses it as evidence that drifted from the corpus; the plan
    # check says why such a row could not test its grant, whatever its evidence.
    assert f"({case_id}).expectedSemantics[0]: found" in messages(bad)
    rows = [Row.from_dict(r) for r in bad["rows"]]
    (problem,) = check_plans(rows, file="drift.yaml")
    assert problem.file == "drift.yaml"
    assert problem.field == f"rows[{index}] ({case_id}).expectedSemantics"
    assert "needs a call its requiredGrants ['company:search'] unlock" in problem.message
    assert "get_task_context" in problem.message and "correct requiredGrants" in problem.message


def test_every_problem_is_reported_at_once(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["schemaVersion"] = 3
    bad["rows"][0]["primaryDisposition"] = "control_plane_owned"
    with pytest.raises(ProblemsError) as info:
        parse_rows(bad)
    assert len(info.value.problems) >= 2


def _cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capeval", "paperclip", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def test_cli_validate_passes_on_the_derivative() -> None:
    out = _cli("validate")
    assert out.returncode == 0, out.stderr
    assert "106 rows in 16 groups" in out.stdout


def test_cli_validate_exits_2_with_every_reason(doc: dict[str, Any], tmp_path: Path) -> None:
    bad = copy.deepcopy(doc)
    bad["schemaVersion"] = 1
    bad["rows"].pop()
    path = tmp_path / "drift.yaml"
    path.write_text(yaml.safe_dump(bad), encoding="utf-8")
    out = _cli("validate", "--file", str(path))
    assert out.returncode == 2
    assert "schemaVersion: must be 2" in out.stderr
    assert "exactly 106 rows, found 105" in out.stderr
    assert str(path) in out.stderr


def test_cli_validate_names_an_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("rows: [\n", encoding="utf-8")
    out = _cli("validate", "--file", str(path))
    assert out.returncode == 2
    assert "not valid YAML" in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", ["validate", "run", "report"])
def test_cli_refuses_bad_input_before_running(
    doc: dict[str, Any], tmp_path: Path, command: str
) -> None:
    # Both used to pass validate and then crash run/report with a traceback and exit 1.
    path = tmp_path / "drift.yaml"
    out_dir = tmp_path / "out"
    extra = ["--out", str(out_dir)] if command == "report" else []

    def attempt(obj: dict[str, Any]) -> str:
        path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
        out = _cli(command, "--file", str(path), *extra, cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and not out_dir.exists()
        return out.stderr

    bad = copy.deepcopy(doc)
    bad["rows"][3]["fixture"] = "no-such-fixture"
    assert f"{path}: rows[3] ({bad['rows'][3]['id']}).fixture: unknown fixture" in attempt(bad)
    unplannable, index, case_id = _unplannable(doc)
    assert f"{path}: rows[{index}] ({case_id}).expectedSemantics[0]: found" in (
        attempt(unplannable)
    )


def test_no_derivative_here_is_an_error_saying_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(ProblemsError, match="pass --file PATH"):
        find_derivative(tmp_path)
    out = _cli("validate", cwd=tmp_path)
    assert out.returncode == 2
    assert str(tmp_path.resolve()) in out.stderr
    assert "no evals/paperclip/eval-traceability.yaml here or in any parent" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_derivative_that_is_not_utf8_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    # Used to escape as UnicodeDecodeError: a traceback and exit 1 instead of exit 2.
    path = tmp_path / "latin1.yaml"
    path.write_bytes("schemaVersion: 2\nrows: []\n# caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ProblemsError) as info:
        load_derivative(path)
    (problem,) = info.value.problems
    assert problem.file == str(path) and "UTF-8" in problem.message
    out = _cli("validate", "--file", str(path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"{path}: not UTF-8 text" in out.stderr and "save it as UTF-8" in out.stderr


@pytest.mark.parametrize(
    "entry",
    [
        "FOO bar baz",  # not a method
        "GETT /api/issues/i-0101",  # a misspelt method
        "get /api/issues/i-0101",  # methods are upper case, as in the corpus
        "POST api/issues/i-0101/comments",  # not a path
        'POST "^/api/issues/(i-0101/comments$"',  # a pattern that does not compile
        "POST /api/issues/i-0101 /comments",  # a space inside a literal path
    ],
)
def test_rest_evidence_that_is_not_a_rest_call_is_rejected(doc: dict[str, Any], entry: str) -> None:
    # Used to pass validate: the entry became an unknown operation the fake agent only
    # probes (always absent), so on a restraint row the whole suite still passed.
    bad = copy.deepcopy(doc)
    index = next(i for i, r in enumerate(bad["rows"]) if r["id"] == "co-before-work-01")
    bad["rows"][index]["expectedSemantics"] = [bad["rows"][index]["expectedSemantics"][0], entry]
    problems = check_derivative(bad, file="drift.yaml")
    assert [p.field for p in problems] == [
        f"rows[{index}] (co-before-work-01).expectedSemantics[1]"
    ]
    assert "METHOD /path" in problems[0].message and repr(entry) in problems[0].message


def test_every_corpus_evidence_entry_is_a_rest_call(doc: dict[str, Any]) -> None:
    assert check_derivative(doc) == []
    entries = [e for r in doc["rows"] for e in r["expectedSemantics"]]
    assert len(entries) == 263


def test_a_group_that_is_not_text_is_a_problem_not_a_traceback(doc: dict[str, Any]) -> None:
    # A YAML list or mapping where the group code belongs used to raise
    # "unhashable type" out of the policy lookup instead of being reported.
    bad = copy.deepcopy(doc)
    bad["rows"][0]["group"] = ["ap"]
    bad["rows"][1]["group"] = {"code": "ap"}
    text = messages(bad)
    assert f'rows[0] ({bad["rows"][0]["id"]}).group: ["ap"] is not one of' in text
    assert f'rows[1] ({bad["rows"][1]["id"]}).group: {{"code": "ap"}} is not one of' in text


@pytest.mark.slow
def test_assertion_classes_are_a_set_in_any_order(doc: dict[str, Any], tmp_path: Path) -> None:
    # The policy says which classes a group's rows carry, not in what order: the
    # reverse of the spec's order used to be refused as "requires [...], found [...]".
    bad = copy.deepcopy(doc)
    index, row = next((i, r) for i, r in enumerate(bad["rows"]) if len(r["assertionClasses"]) == 2)
    written = list(reversed(row["assertionClasses"]))
    row["assertionClasses"] = written
    assert check_derivative(bad, file="drift.yaml") == []
    # The suite sees the spec's order whatever the file says: it falls back to the first class.
    parsed = parse_rows(bad)[index]
    assert parsed.assertionClasses == GROUPS[row["group"]].assertion_classes
    path = tmp_path / "swapped.yaml"
    path.write_text(yaml.safe_dump(bad, sort_keys=False), encoding="utf-8")
    out = _cli("validate", "--file", str(path), cwd=tmp_path)
    assert out.returncode == 0, out.stderr


def test_repeated_missing_or_extra_assertion_classes_fail_with_the_fix(
    doc: dict[str, Any],
) -> None:
    bad = copy.deepcopy(doc)
    ap = [(i, r) for i, r in enumerate(bad["rows"]) if r["group"] == "ap"]
    (i0, r0), (i1, r1), (i2, r2) = ap[:3]
    r0["assertionClasses"] = ["combined_multi_hop", "authorization_policy", "combined_multi_hop"]
    r1["assertionClasses"] = ["combined_multi_hop"]
    r2["assertionClasses"] = ["combined_multi_hop", "restraint_no_call", "authorization_policy"]
    problems = {p.field: p.message for p in check_derivative(bad, file="drift.yaml")}
    assert problems == {
        f"rows[{i0}] ({r0['id']}).assertionClasses": (
            "lists 'combined_multi_hop' 2 times; list each class once"
        ),
        f"rows[{i1}] ({r1['id']}).assertionClasses": (
            "group 'ap' requires the classes authorization_policy, combined_multi_hop "
            "(in any order), found ['combined_multi_hop']; add authorization_policy"
        ),
        f"rows[{i2}] ({r2['id']}).assertionClasses": (
            "group 'ap' requires the classes authorization_policy, combined_multi_hop "
            "(in any order), found ['combined_multi_hop', 'restraint_no_call', "
            "'authorization_policy']; remove restraint_no_call"
        ),
    }


@pytest.mark.parametrize(("value", "shown"), [(10.0, "10.0"), (True, "true"), ("10", '"10"')])
def test_legacy_group_must_be_a_whole_number(
    doc: dict[str, Any], tmp_path: Path, value: Any, shown: str
) -> None:
    # 10.0 == 10 in Python and JSON Schema's "integer" takes it: it used to load.
    bad = copy.deepcopy(doc)
    index, row = next((i, r) for i, r in enumerate(bad["rows"]) if r["group"] == "ap")
    row["legacyGroup"] = value
    path = tmp_path / "drift.yaml"
    path.write_text(yaml.safe_dump(bad, sort_keys=False), encoding="utf-8")
    with pytest.raises(ProblemsError) as info:
        load_derivative(path)
    assert [str(p) for p in info.value.problems] == [
        f"{path}: rows[{index}] ({row['id']}).legacyGroup: must be a whole number (no decimal "
        f"point, not quoted, not true/false), found {shown}; write 10 (the legacy number of "
        "group 'ap')"
    ]


def test_an_actor_that_already_holds_the_grant_is_named_as_the_field_at_fault(
    drifted: Callable[..., Path],
) -> None:
    path = drifted("su-no-poll-01", actor="manager")
    out = capeval("paperclip", "validate", "--file", path)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "(su-no-poll-01).actor:" in text, text
    assert "delegation:tasks:create" in text and "write actor: engineer" in text, text
    assert "expectedSemantics" not in text.replace("the evidence is corpus case", ""), text
    assert "add the REST call" not in text, text


def test_a_task_mode_that_refuses_the_granted_call_is_named_as_the_field_at_fault(
    drifted: Callable[..., Path],
) -> None:
    path = drifted("su-no-poll-01", taskMode="ask")
    text = (lambda r: r.stdout + r.stderr)(capeval("paperclip", "validate", "--file", path))
    assert "(su-no-poll-01).taskMode:" in text and "write taskMode: standard" in text, text


@pytest.mark.parametrize(
    ("key", "where"),
    [("title", "row"), ("schemaVersion", "top")],
)
def test_a_duplicate_key_is_refused_naming_line_and_key(
    tmp_path: Path, paperclip_derivative: Path, key: str, where: str
) -> None:
    lines = paperclip_derivative.read_text(encoding="utf-8").splitlines(keepends=True)
    if where == "top":
        at = next(i for i, line in enumerate(lines) if line.startswith("schemaVersion:"))
        extra = "schemaVersion: 1\n"
    else:
        at = next(i for i, line in enumerate(lines) if line.startswith("  title:"))
        extra = "  title: A second title that used to win silently\n"
    lines.insert(at + 1, extra)
    path = tmp_path / "dup.yaml"
    path.write_text("".join(lines), encoding="utf-8")
    out = capeval("paperclip", "validate", "--file", path)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    assert f"line {at + 2}: duplicate key '{key}' (already at line {at + 1}" in text, text
    assert str(path) in text and "found 1" not in text, text


def _row(obj: dict[str, Any], case_id: str) -> tuple[int, dict[str, Any]]:
    return next((i, r) for i, r in enumerate(obj["rows"]) if r["id"] == case_id)


def _write(tmp_path: Path, obj: Any, name: str = "d.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    return path


def test_the_packaged_corpus_facts_are_the_corpus(shared_dir: Path) -> None:
    with (shared_dir / "paperclip" / "corpus-rows.tsv").open(encoding="utf-8") as fh:
        corpus = {r["id"]: r for r in csv.DictReader(fh, delimiter="\t")}
    assert sorted(CORPUS_FACTS) == sorted(corpus) == list(CORPUS_CASE_IDS)
    for case_id, facts in CORPUS_FACTS.items():
        assert facts.fixture == corpus[case_id]["fixture"]
        assert list(facts.expected_semantics) == [
            s.strip() for s in corpus[case_id]["expectedSemantics"].split(" ; ")
        ]


@pytest.mark.slow
def test_a_drifted_evidence_entry_is_refused_by_validate_naming_the_corpus_entry(
    doc: dict[str, Any], tmp_path: Path
) -> None:
    # The auditor's repro: validate said ok and `run` then failed with "no agent
    # tool call was allowed", which points at the control plane, not the file.
    bad = copy.deepcopy(doc)
    i, row = _row(bad, "cm-multiline-01")
    corpus = row["expectedSemantics"][0]
    row["expectedSemantics"][0] = "GET /api/health"
    path = _write(tmp_path, bad)
    proc = capeval("paperclip", "validate", "--file", path)
    assert proc.returncode == 2, proc.stdout
    assert (
        f"{path}: rows[{i}] (cm-multiline-01).expectedSemantics[0]: found `GET /api/health`, "
        f"but corpus case cm-multiline-01 has `{corpus}` here; restore the corpus entry"
    ) in proc.stderr
    assert "1 problem(s)" in proc.stderr
    run = capeval("paperclip", "run", "--file", path)
    assert run.returncode == 2 and "no agent tool call was allowed" not in run.stdout


def test_a_drifted_fixture_is_refused_naming_the_corpus_fixture(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    i, row = _row(bad, "ap-approval-deny-01")
    row["fixture"] = "baseline"
    assert problem_list(bad) == [
        f"drift.yaml: rows[{i}] (ap-approval-deny-01).fixture: corpus case ap-approval-deny-01 "
        'runs on fixture "approval-denied", found "baseline"; write fixture: approval-denied'
    ]


def test_a_dropped_or_added_evidence_entry_is_refused_listing_the_corpus_entries(
    doc: dict[str, Any],
) -> None:
    bad = copy.deepcopy(doc)
    i, row = _row(bad, "st-done-comment-01")
    want = list(row["expectedSemantics"])
    row["expectedSemantics"].pop()
    _, other = _row(bad, "hb-context-01")
    other["expectedSemantics"].append("GET /api/health")
    text = messages(bad)
    assert (
        f"rows[{i}] (st-done-comment-01).expectedSemantics: corpus case st-done-comment-01 "
        f"has {len(want)} evidence entries, found {len(want) - 1}; write the corpus's, in "
        "this order: " + " ; ".join(f"`{e}`" for e in want)
    ) in text
    assert "(hb-context-01).expectedSemantics: corpus case hb-context-01 has" in text


def test_an_unknown_fixture_or_bad_entry_is_reported_once_not_again_as_drift(
    doc: dict[str, Any],
) -> None:
    bad = copy.deepcopy(doc)
    _, row = _row(bad, "cm-multiline-01")
    row["fixture"] = "nofix"
    row["expectedSemantics"][0] = "FETCH /x"
    out = problem_list(bad)
    assert len(out) == 2, out
    assert "unknown fixture 'nofix'" in out[0] or "unknown fixture 'nofix'" in out[1]


@pytest.mark.parametrize(
    ("value", "shown"), [(2.0, "2.0"), (True, "true"), ("2", '"2"'), (None, "null")]
)
def test_schema_version_must_be_the_whole_number_2(
    doc: dict[str, Any], value: Any, shown: str
) -> None:
    bad = {**doc, "schemaVersion": value}
    assert problem_list(bad) == [
        f"drift.yaml: schemaVersion: must be 2, found {shown}; write schemaVersion: 2 "
        "(a whole number, not quoted), and regenerate the derivative if it was written "
        "for another schema version"
    ]


def test_a_missing_schema_version_is_reported_once(doc: dict[str, Any]) -> None:
    bad = {k: v for k, v in doc.items() if k != "schemaVersion"}
    assert problem_list(bad) == [
        "drift.yaml: schemaVersion: missing; write schemaVersion: 2 (a whole number, not quoted)"
    ]


def test_values_are_spelled_as_in_yaml_not_python(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["rows"][0] = None
    bad["rows"][1]["primaryDisposition"] = None
    bad["rows"][2]["title"] = True
    text = messages(bad)
    assert "rows[0]: null is not of type 'object'" in text
    assert "primaryDisposition: null is not one of" in text
    assert "found null" in text and "title: true is not of type 'string'" in text
    for python in ("None", "True", "False"):
        assert python not in text, text
    assert "rows: {\"a\": 1} is not of type 'array'" in messages({**doc, "rows": {"a": 1}})
