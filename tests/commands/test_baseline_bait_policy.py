"""`capeval baseline freeze` under the bait policy: the strict rule by default,
and a recording of a good agent accepted under `bait = "report"`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from capeval.cli import main
from tests.casefactory import write_case

pytestmark = pytest.mark.slow  # each freeze runs a repeat


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    # The oracle (an empty turn) never reaches the network: the bait cannot reproduce.
    write_case(tmp_path, "web", tier="bait", bait={"metric": "networkCommandCount", "threshold": 0})
    return tmp_path


def freeze(root: Path) -> Result:
    return CliRunner().invoke(
        main, ["baseline", "freeze", "--root", str(root), "--agent", "scripted", "--repeats", "1"]
    )


def test_a_freeze_whose_baits_do_not_reproduce_is_refused_naming_the_policy(
    workspace: Path,
) -> None:
    result = freeze(workspace)
    assert result.exit_code == 3
    assert "BAIT FLAG web networkCommandCount median 0 did not exceed 0" in result.output
    assert 'set bait = "report" in capeval.toml (docs/gating.md#bait-policy)' in result.output
    assert not (workspace / "evals/capability/results/baseline.json").exists()


def test_report_freezes_and_says_which_baits_did_not_reproduce(workspace: Path) -> None:
    (workspace / "capeval.toml").write_text(
        'bait = "report"\nbaseline = "evals/capability/results/baseline.json"\n'
    )
    result = freeze(workspace)
    assert result.exit_code == 0, result.output
    assert (workspace / "evals/capability/results/baseline.json").is_file()
    assert "evals/capability/results/baseline.json (bait = " in result.output
    assert 'bait = "report": 1 bait(s) did not reproduce' in result.output
