"""Tests that pin rules of the case model and configuration a mutation audit
found unguarded: each fails if its one rule is broken."""

from __future__ import annotations

from pathlib import Path

import pytest

from capeval.config import MAX_TIMEOUT_S, is_timeout, load_config
from capeval.core.case import Requirement
from capeval.core.problems import ProblemsError
from capeval.runner.validate import validate_workspace
from capeval.workspace import check_cases, read_baits
from tests.casefactory import CASES, write_case


def test_a_boolean_metric_value_is_no_number_and_fails_the_requirement() -> None:
    # JSON true is a Python int: counted as 1 it would pass a "min": 1 bound
    # from a stream that never measured the metric.
    assert not Requirement("networkCommandCount", min=1).holds({"networkCommandCount": True})
    assert not Requirement("networkCommandCount", max=1).holds({"networkCommandCount": False})


def test_a_requirement_with_both_bounds_describes_both() -> None:
    # The failed repeat's error quotes it; dropping a bound misstates the rule.
    assert Requirement("toolCallCount", min=1, max=3).describe() == "1 <= toolCallCount <= 3"
    assert Requirement("toolCallCount", min=2).describe() == "toolCallCount >= 2"


@pytest.mark.parametrize(
    ("value", "usable"),
    [
        (0, False),
        (0.0, False),
        (-1, False),
        (0.001, True),
        (MAX_TIMEOUT_S, True),
        (MAX_TIMEOUT_S + 1, False),
        (float("inf"), False),
        (float("nan"), False),
        (True, False),
    ],
)
def test_a_usable_timeout_is_positive_finite_and_at_most_30_days(
    value: float, usable: bool
) -> None:
    # `--agent-timeout 0` would time every agent out before it starts.
    assert is_timeout(value) is usable


def test_a_tier_listed_twice_is_named_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "capeval.toml").write_text('tiers = ["simple", "bait", "simple"]\n')
    with pytest.raises(ProblemsError) as info:
        load_config(tmp_path)
    assert [str(p) for p in info.value.problems] == [
        'capeval.toml: tiers: lists "simple" more than once; keep each once'
    ]


def test_underscore_directories_are_not_cases(tmp_path: Path) -> None:
    # A shared helper folder (`_lib`) is no case and needs no case.json.
    (tmp_path / CASES).mkdir(parents=True)
    write_case(tmp_path, "alpha", verify="exit 0\n")
    (tmp_path / CASES / "_lib").mkdir()
    result = check_cases(tmp_path)
    assert result.problems == []
    assert [c.id for c in result.cases] == ["alpha"]


def _config_problems(root: Path, text: str) -> list[str]:
    (root / "capeval.toml").write_text(text)
    try:
        load_config(root)
    except ProblemsError as exc:
        return [str(p) for p in exc.problems]
    return []


def test_an_upper_case_placeholder_is_named(tmp_path: Path) -> None:
    # `{WORKDIR}` reached the agent as is, like any other misspelling.
    texts = _config_problems(
        tmp_path, '[agents.mine]\ntype = "command"\ncommand = "agent --cwd {WORKDIR} {prompt}"\n'
    )
    assert len(texts) == 1
    assert texts[0].startswith(
        'capeval.toml: agents.mine.command: unknown placeholder {WORKDIR} (did you mean "{workdir}"?)'
    )


def test_a_shell_variable_is_no_placeholder(tmp_path: Path) -> None:
    # `${WORKDIR}` is for the shell the template starts, not a misspelt `{workdir}`.
    assert (
        _config_problems(
            tmp_path,
            '[agents.mine]\ntype = "command"\n'
            "command = \"sh -c 'cd ${WORKDIR} && agent {prompt}'\"\n",
        )
        == []
    )


def test_the_gate_takes_no_bait_from_a_case_with_a_duplicate_key(tmp_path: Path) -> None:
    # Which of two bait declarations is meant is not for the gate to guess.
    write_case(tmp_path, "web", bait={"metric": "networkCommandCount", "threshold": 0})
    case_json = tmp_path / CASES / "web" / "case.json"
    text = case_json.read_text()
    case_json.write_text(
        text.replace('"bait":', '"bait": {"metric": "toolCallCount", "threshold": 9}, "bait":')
    )
    baits, problems = read_baits(tmp_path)
    assert baits == {}
    assert [(p.file, p.field) for p in problems] == [
        ("evals/capability/cases/web/case.json", "bait")
    ]


def _case_problems(root: Path, case_id: str, old: str, new: str, **fields: object) -> list[str]:
    (root / CASES).mkdir(parents=True, exist_ok=True)
    write_case(root, case_id, **fields)
    case_json = root / CASES / case_id / "case.json"
    text = case_json.read_text()
    assert old in text
    case_json.write_text(text.replace(old, new))
    return [str(p) for p in check_cases(root).problems]


def test_a_negative_number_too_large_is_named_once(tmp_path: Path) -> None:
    # -1e400 reads as -inf: refused as too large, and not also "must be >= 0, got -inf".
    texts = _case_problems(
        tmp_path,
        "deep",
        '"threshold": 0',
        '"threshold": -1e400',
        bait={"metric": "networkCommandCount", "threshold": 0},
    )
    assert texts == [
        "evals/capability/cases/deep/case.json: bait.threshold: contains -1e400, too large "
        "for a number; write a smaller one"
    ]


def test_a_refused_number_in_a_later_list_entry_is_named(tmp_path: Path) -> None:
    # A NaN bound passes every comparison: unreported, the requirement checked nothing.
    reqs = [
        {"metric": "editViaShellCount", "min": 1},
        {"metric": "networkCommandCount", "max": 0},
    ]
    texts = _case_problems(tmp_path, "req", '"max": 0', '"max": NaN', requireBehaviors=reqs)
    assert texts == [
        "evals/capability/cases/req/case.json: requireBehaviors[1].max: contains NaN, which "
        "is not JSON; write a number"
    ]


def test_a_grader_that_is_a_directory_is_named_on_disk(tmp_path: Path) -> None:
    # `bash verify.sh` on a directory fails every repeat as if the agent had.
    (tmp_path / CASES).mkdir(parents=True)
    case_dir = write_case(tmp_path, "g", verify=None)
    (case_dir / "verify.sh").mkdir()
    texts = [str(p) for p in check_cases(tmp_path).problems]
    assert texts == [
        "evals/capability/cases/g/case.json: verify: evals/capability/cases/g/verify.sh is "
        "not a regular file; the grader must be a file run with bash"
    ]


def test_a_timeouts_table_with_one_key_keeps_the_other_default(tmp_path: Path) -> None:
    # Spec section 3: agent 20 minutes, verify 2 minutes, unless configured.
    (tmp_path / "capeval.toml").write_text("[timeouts]\nagent = 60\n")
    config = load_config(tmp_path)
    assert (config.agent_timeout_s, config.verify_timeout_s) == (60.0, 120.0)
    (tmp_path / "capeval.toml").write_text("[timeouts]\nverify = 5\n")
    config = load_config(tmp_path)
    assert (config.agent_timeout_s, config.verify_timeout_s) == (1200.0, 5.0)


def test_a_home_relative_binary_is_not_anchored_to_the_root(tmp_path: Path) -> None:
    (tmp_path / "capeval.toml").write_text(
        '[agents.mine]\ntype = "command"\ncommand = "~/bin/agent {prompt}"\n'
    )
    assert load_config(tmp_path).agents["mine"].command == "~/bin/agent {prompt}"


def test_matrix_cells_of_a_configured_command_agent_need_no_trajectory(tmp_path: Path) -> None:
    # The cells run the configured default agent, not the scripted one: a
    # "missing trajectory sloppy.json" would fail validate for a runnable config.
    (tmp_path / CASES).mkdir(parents=True)
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text(
        'agent = "mine"\nmatrix = ["p:sloppy"]\n'
        '[agents.mine]\ntype = "command"\ncommand = "agent {prompt}"\n'
    )
    assert [str(p) for p in validate_workspace(tmp_path).problems] == []
    (tmp_path / "capeval.toml").write_text('matrix = ["p:sloppy"]\n')
    assert [p.file for p in validate_workspace(tmp_path).problems] == [
        "evals/capability/cases/alpha/trajectories/sloppy.json"
    ]
