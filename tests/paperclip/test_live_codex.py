"""The live matrix through the real Codex binary, offline.

The pinned Codex (`python3 tests/agent_clis.py install`, done by `.ci/run`)
starts capeval's MCP control-plane server itself, finds its tools with its
own tool search and calls them; the scripted model server on loopback stands
in for the model. So these tests prove the wiring a live run depends on
(Codex's MCP config, approval, tool discovery and naming, the journal), and
that a misbehaving turn fails. When Codex is not installed they skip and say
why; they never pass without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from capeval.cli import main
from capeval.paperclip.counts import group_counts
from capeval.paperclip.derivative import Row
from capeval.paperclip.fakeagent import derive_plan
from capeval.paperclip.live import LiveSettings, run_matrix, run_turn
from capeval.paperclip.livejudge import NAMESPACE, LiveCase, live_cases
from capeval.paperclip.policy import RESTRAINT_NO_CALL
from capeval.paperclip.suite import CONTROL_PLANE_NAMES
from tests.agent_clis import find_cli, missing_reason

pytestmark = [pytest.mark.slow, pytest.mark.realcli]


@pytest.fixture(scope="module")
def codex() -> str:
    path = find_cli("codex")
    if path is None:
        pytest.skip(missing_reason("codex"))
    return str(path)


@pytest.fixture(scope="module")
def cases(paperclip_rows: list[Row]) -> dict[str, LiveCase]:
    return {c.group: c for c in live_cases(paperclip_rows)}


def test_every_group_passes_one_scripted_turn_through_codex(
    codex: str, tmp_path: Path, paperclip_derivative: Path
) -> None:
    result = CliRunner().invoke(
        main,
        ["paperclip", "live", "--file", str(paperclip_derivative), "--codex", codex, "--scripted",
         "--timeout", "120", "--out", str(tmp_path), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert (summary["turns"], summary["passed"], summary["failed"]) == (16, 16, 0)
    rows = [json.loads(line) for line in (tmp_path / "live-rows.jsonl").read_text().splitlines()]
    assert [r["group"] for r in rows] == sorted(r["group"] for r in rows) and len(rows) == 16
    for row in rows:
        # What Codex was shown came from the server: never a control-plane operation.
        assert row["surface"] and not set(row["surface"]) & set(CONTROL_PLANE_NAMES)
        assert row["codexExitCode"] == 0
        if row["operation"] not in CONTROL_PLANE_NAMES:
            # The control plane itself recorded the headline call, allowed.
            assert (row["operation"], "allowed") in zip(
                row["operations"], row["decisions"], strict=True
            )
    restraint = [r for r in rows if RESTRAINT_NO_CALL in r["assertionClasses"]]
    assert restraint and all(r["stateDiffSize"] == 0 for r in restraint)
    # The live rows go through the suite's own per-group counting (DuckDB over the stream).
    counts = group_counts(tmp_path / "live-rows.jsonl")
    assert len(counts) == 16
    assert all(
        c == {"cases": 1, "configurations": 1, "passed": 1, "failed": 0} for c in counts.values()
    )


def _misbehaving(operation: str, args: dict[str, Any]) -> Any:
    def script(case: LiveCase) -> list[dict[str, Any]]:
        search = {"name": "tool_search", "input": {"query": operation, "limit": 3}}
        return [
            {"calls": [search]},
            {"calls": [{"name": operation, "namespace": NAMESPACE, "input": args}]},
        ]

    return script


def test_a_turn_that_breaks_restraint_fails(
    codex: str, cases: dict[str, LiveCase], tmp_path: Path, paperclip_derivative: Path
) -> None:
    case = cases["rs"]  # restraint: the run must change nothing
    task = derive_plan(case.row).run_task or "i-0101"
    args = {"task": task, "body": "Working on it.", "idempotencyKey": "live-k1"}
    settings = LiveSettings(
        codex, paperclip_derivative, scripted=True, timeout_s=120,
        script=_misbehaving("report_progress", args),
    )  # fmt: skip
    row = run_turn(settings, case)
    assert row["operations"] == ["report_progress"] and row["decisions"] == ["allowed"]
    assert not row["passed"]
    assert [f["assertionClass"] for f in row["failures"]] == [RESTRAINT_NO_CALL]
    assert row["failures"][0]["stateDiff"]  # the field-level diff is in the verdict


def test_a_turn_that_skips_its_operation_fails_and_the_row_is_kept(
    codex: str, cases: dict[str, LiveCase], tmp_path: Path, paperclip_derivative: Path
) -> None:
    settings = LiveSettings(
        codex, paperclip_derivative, scripted=True, timeout_s=120, script=lambda case: []
    )
    rows_path = tmp_path / "live-rows.jsonl"
    (row,) = run_matrix(settings, [cases["cm"]], rows_path)
    assert not row["passed"] and "never called" in row["failures"][0]["message"]
    assert json.loads(rows_path.read_text()) == row


def test_a_codex_that_cannot_reach_its_model_fails_the_turn(
    codex: str, cases: dict[str, LiveCase], paperclip_derivative: Path
) -> None:
    # Not scripted, and aimed at a closed loopback port: Codex itself fails.
    settings = LiveSettings(
        codex,
        paperclip_derivative,
        model="gpt-5.5",
        config=(
            'model_providers.nowhere.name="nowhere"',
            'model_providers.nowhere.base_url="http://127.0.0.1:9/v1"',
            'model_providers.nowhere.wire_api="responses"',
            'model_providers.nowhere.env_key="CAPEVAL_NOWHERE_KEY"',
            "model_provider=nowhere",
            "model_providers.nowhere.request_max_retries=0",
            "model_providers.nowhere.stream_max_retries=0",
        ),
        timeout_s=120,
    )
    row = run_turn(settings, cases["cm"])
    assert not row["passed"]
    assert "live_turn" in [f["assertionClass"] for f in row["failures"]]
