"""The traceability derivative and its loader: every section-1 rule rejects a drifted copy."""

from __future__ import annotations

import copy
import csv
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from capeval.paperclip.derivative import check_derivative, load_derivative
from capeval.paperclip.policy import GROUP_COUNTS, GROUPS
from capeval.problems import ProblemsError

REPO = Path(__file__).resolve().parents[1]
DERIVATIVE = REPO / "evals" / "paperclip" / "eval-traceability.yaml"


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return yaml.safe_load(DERIVATIVE.read_text(encoding="utf-8"))


def messages(obj: Any) -> str:
    return "\n".join(str(p) for p in check_derivative(obj, file="drift.yaml"))


def test_checked_in_derivative_loads() -> None:
    rows = load_derivative(DERIVATIVE)
    assert len(rows) == 106
    assert {r.group for r in rows} == set(GROUPS)


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


def test_105_rows_fail(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    dropped = bad["rows"].pop()
    out = messages(bad)
    assert "exactly 106 rows, found 105" in out
    assert f"group '{dropped['group']}' must have" in out


def test_duplicate_id_fails(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["rows"][1]["id"] = bad["rows"][0]["id"]
    assert f"case id '{bad['rows'][0]['id']}' appears 2 times" in messages(bad)


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
    out = messages(bad)
    assert "rows[0]: Additional properties are not allowed ('extra' was unexpected)" in out
    assert "rows[1].taskMode: 'yolo' is not one of" in out


def test_every_problem_is_reported_at_once(doc: dict[str, Any]) -> None:
    bad = copy.deepcopy(doc)
    bad["schemaVersion"] = 3
    bad["rows"][0]["primaryDisposition"] = "control_plane_owned"
    with pytest.raises(ProblemsError) as info:
        from capeval.paperclip.derivative import parse_rows

        parse_rows(bad)
    assert len(info.value.problems) >= 2


def _cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capeval.cli", "paperclip", *args],
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
