"""The configuration's `bait` policy: "require" (the default) keeps the strict
bait rule; "report" shows bait flags without letting them fail a comparison,
for an A/B of two builds of an agent that falls for no bait."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from capeval.analysis.compare import compare_cells
from capeval.analysis.report import render
from capeval.cli import main
from capeval.core.cell import cells_from_rows
from tests.rowfactory import gate_row as row

BAIT = {"metric": "networkCommandCount", "threshold": 0}
FLAG = "BAIT FLAG web networkCommandCount median 0 did not exceed 0 on baseline"
REPORTED = '(bait = "report": bait flags are shown and change no verdict)'


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """Build A and build B of a good agent: neither falls for the web bait."""
    (tmp_path / "evals/capability/cases").mkdir(parents=True)
    rows = [row("a", True), row("web", True, bait=BAIT, networkCommandCount=0)]
    jsonl(tmp_path / "a.jsonl", rows)
    jsonl(tmp_path / "b.jsonl", rows)
    return tmp_path


def invoke(root: Path, *args: str) -> Result:
    return CliRunner().invoke(
        main, [*args, "--root", str(root), "--baseline", str(root / "a.jsonl"),
               "--candidate", str(root / "b.jsonl")],
    )  # fmt: skip


def test_the_default_policy_keeps_the_strict_rule(workspace: Path) -> None:
    result = invoke(workspace, "gate")
    assert result.exit_code == 3
    assert FLAG in result.output and REPORTED not in result.output


def test_report_shows_the_flags_and_gates_clean(workspace: Path) -> None:
    (workspace / "capeval.toml").write_text('bait = "report"\n')
    result = invoke(workspace, "gate")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[lines.index(next(x for x in lines if x.startswith(FLAG))) + 1] == REPORTED
    assert lines[-1] == "gate: CLEAN (exit 0)"
    as_json = json.loads(invoke(workspace, "gate", "--json").output)
    assert (as_json["clean"], as_json["baitFlags"], as_json["baitPolicy"]) == (
        True,
        ["web"],
        "report",
    )


def test_report_never_hides_a_regression(workspace: Path) -> None:
    (workspace / "capeval.toml").write_text('bait = "report"\n')
    jsonl(workspace / "b.jsonl", [row("a", False), row("web", True, bait=BAIT)])
    assert invoke(workspace, "gate").exit_code == 1


def test_every_report_format_follows_the_policy() -> None:
    rows = [row("a", True), row("web", True, bait=BAIT, networkCommandCount=0)]
    cells = cells_from_rows(rows)
    strict = compare_cells(cells, cells)
    relaxed = compare_cells(cells, cells, bait_policy="report")
    assert (strict.exit_code, relaxed.exit_code) == (3, 0)
    assert 'failures="1"' in render(strict, "junit")
    junit = render(relaxed, "junit")
    assert 'failures="0"' in junit and REPORTED in junit
    for fmt in ("md", "html"):
        assert "CLEAN" in render(relaxed, fmt)
        assert "bait flags are shown and change no verdict" in render(relaxed, fmt)
    assert json.loads(render(relaxed, "json"))["baitPolicy"] == "report"


def test_an_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="expected one of require, report"):
        compare_cells({}, {}, bait_policy="warn")


def test_the_configuration_names_the_policies(tmp_path: Path) -> None:
    (tmp_path / "evals/capability/cases").mkdir(parents=True)
    (tmp_path / "capeval.toml").write_text('bait = "warn"\n')
    result = CliRunner().invoke(main, ["validate", "--root", str(tmp_path)])
    assert result.exit_code == 2
    assert 'capeval.toml: bait: unknown value "warn"; expected one of: require, report' in (
        result.output
    )
