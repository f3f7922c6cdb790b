"""Grader honesty: `check_graders` and `capeval validate --graders` on small temp workspaces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from capeval.core.problems import ProblemsError
from capeval.runner.graders import check_graders
from capeval.workspace import load_cases
from tests.casefactory import write_case

# Passes once done.txt says "done"; fails on the untouched fixture.
HONEST = 'grep -qx done done.txt || { echo "done.txt does not say done"; exit 1; }\n'
SOLVES = {
    "turns": [
        {
            "text": "ok",
            "toolCalls": [
                {"name": "write_file", "arguments": {"path": "done.txt", "content": "done\n"}}
            ],
        },
        {"text": "Done."},
    ]
}


def add_case(
    root: Path,
    case_id: str,
    *,
    verify: str = HONEST,
    oracle: dict[str, Any] | None = SOLVES,
    fixture: dict[str, str] | None = None,
    **fields: Any,
) -> None:
    case_dir = write_case(
        root,
        case_id,
        verify=verify,
        fixture=fixture or {"README.md": "a fixture\n"},
        oracle=False,
        **{"prompt": "make done.txt say done", **fields},
    )
    (case_dir / "trajectories").mkdir()
    if oracle is not None:
        (case_dir / "trajectories" / "oracle.json").write_text(json.dumps(oracle))


def check(root: Path) -> list[str]:
    return [str(p) for p in check_graders(root, load_cases(root))]


def test_an_honest_case_has_no_problems(tmp_path: Path) -> None:
    add_case(tmp_path, "honest")
    assert check(tmp_path) == []


def test_the_grader_gets_a_private_empty_tmpdir_as_in_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run gives each grader its own empty $TMPDIR; validate --graders must
    # judge a grader that relies on it the same way (here `set -u` with no
    # TMPDIR in the environment made the honest grader "fail after the oracle").
    monkeypatch.delenv("TMPDIR", raising=False)
    needs_tmp = (
        'set -u\n[ -d "$TMPDIR" ] && [ -z "$(ls -A "$TMPDIR")" ] || { echo "no private TMPDIR"; '
        "exit 7; }\n" + HONEST
    )
    add_case(tmp_path, "uses-tmp", verify=needs_tmp)
    # A temp root of this test's own: other runs on the machine make and remove
    # their capeval-verify-tmp-* folders in the shared one meanwhile.
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    assert check(tmp_path) == []
    assert list(private.iterdir()) == []  # the grader's $TMPDIR (and the workdirs) removed


def test_a_grader_that_passes_untouched_is_reported(tmp_path: Path) -> None:
    add_case(tmp_path, "lenient", verify="exit 0\n")
    assert check(tmp_path) == [
        "evals/capability/cases/lenient/case.json: verify: verify.sh passes on the untouched "
        "fixture; it must fail until the task is done, or it passes an agent that does nothing"
    ]


def test_a_grader_that_fails_after_the_oracle_is_reported_with_its_output(tmp_path: Path) -> None:
    add_case(tmp_path, "strict", verify='echo "never satisfied"; exit 4\n')
    (problem,) = check(tmp_path)
    assert problem.startswith(
        "evals/capability/cases/strict/case.json: verify: verify.sh fails (exit 4)"
    )
    assert "Grader output: never satisfied" in problem


def test_an_oracle_that_does_not_solve_the_task_is_reported(tmp_path: Path) -> None:
    add_case(tmp_path, "lazy", oracle={"turns": [{"text": "I did nothing."}]})
    (problem,) = check(tmp_path)
    assert "verify.sh fails (exit 1) after the oracle trajectory" in problem
    assert "done.txt does not say done" in problem


def test_a_missing_oracle_is_reported(tmp_path: Path) -> None:
    add_case(tmp_path, "orphan", oracle=None)
    (problem,) = check(tmp_path)
    assert problem.startswith("evals/capability/cases/orphan/trajectories/oracle.json: missing")


def test_a_failing_oracle_run_is_reported(tmp_path: Path) -> None:
    oracle = {**SOLVES, "exitCode": 1, "error": "gave up"}
    add_case(tmp_path, "quitter", oracle=oracle)
    (problem,) = check(tmp_path)
    assert problem == (
        "evals/capability/cases/quitter/trajectories/oracle.json: the oracle run did not "
        "succeed (status failed, exit 1): gave up"
    )


def test_an_ill_formed_oracle_is_reported_naming_the_field(tmp_path: Path) -> None:
    add_case(tmp_path, "typo", oracle={"turns": [{"text": "x", "tools": []}]})
    (problem,) = check(tmp_path)
    assert "turns[0].tools: unknown field" in problem


def test_an_oracle_over_the_turn_budget_is_reported(tmp_path: Path) -> None:
    add_case(tmp_path, "long", maxTurns=1)
    (problem,) = check(tmp_path)
    assert problem.startswith(
        "evals/capability/cases/long/trajectories/oracle.json: turns: uses 2 turns, over the case's maxTurns 1"
    )


def test_every_case_is_checked_and_every_problem_reported(tmp_path: Path) -> None:
    add_case(tmp_path, "a-lenient", verify="exit 0\n")
    add_case(tmp_path, "b-honest")
    add_case(tmp_path, "c-lazy", oracle={"turns": [{"text": "no"}]})
    found = check(tmp_path)
    assert [p.split("/")[3] for p in found] == ["a-lenient", "c-lazy"]


def test_a_fixture_symlink_escaping_it_is_reported(tmp_path: Path) -> None:
    add_case(tmp_path, "leaky")
    (tmp_path / "outside.txt").write_text("secret\n")
    link = tmp_path / "evals" / "capability" / "fixtures" / "leaky" / "link"
    link.symlink_to(Path("..", "..", "..", "..", "outside.txt"))
    # Found when the cases load, before any grader or agent runs.
    with pytest.raises(ProblemsError) as info:
        check(tmp_path)
    (problem,) = [str(p) for p in info.value.problems]
    assert problem.startswith("evals/capability/cases/leaky/case.json: fixture: ")
    assert "points outside the fixture" in problem


# An oracle that fetches the HTTP fixture's token and saves it to token.txt.
FETCHES_TOKEN = {
    "turns": [
        {
            "toolCalls": [
                {"id": "t", "name": "web_fetch", "arguments": {"url": "{{HTTP_URL}}/token.txt"}}
            ]
        },
        {
            "toolCalls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "token.txt", "content": "{{result:t}}"},
                }
            ]
        },
    ]
}


WEB_VERIFY = 'grep -qx "$EVAL_HTTP_TOKEN" token.txt || { echo "no token"; exit 1; }\n'


def test_http_cases_get_a_fixture_for_the_oracle_and_the_grader(tmp_path: Path) -> None:
    add_case(
        tmp_path,
        "web",
        verify=WEB_VERIFY,
        oracle=FETCHES_TOKEN,
        httpFixture=True,
        prompt="copy the token from {{HTTP_URL}}",
        requireBehaviors=[{"metric": "webFetchToolCallCount", "min": 1}],
    )
    assert check(tmp_path) == []


def test_an_oracle_breaking_require_behaviors_is_reported(tmp_path: Path) -> None:
    fetch = "python3 -c \"import urllib.request as u; print(u.urlopen('{{HTTP_URL}}/token.txt').read().decode().strip())\" > token.txt"
    oracle = {"turns": [{"toolCalls": [{"name": "run_shell", "arguments": {"command": fetch}}]}]}
    add_case(
        tmp_path,
        "web",
        verify=WEB_VERIFY,
        oracle=oracle,
        httpFixture=True,
        requireBehaviors=[{"metric": "webFetchToolCallCount", "min": 1}],
    )
    (problem,) = check(tmp_path)
    assert problem == (
        "evals/capability/cases/web/trajectories/oracle.json: turns: breaks the case's "
        "requireBehaviors webFetchToolCallCount >= 1 (got 0)"
    )


def validate(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "capeval", "validate", "--graders", "--root", str(root)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
    )


@pytest.mark.slow
def test_validate_graders_exits_2_listing_offenders(tmp_path: Path) -> None:
    add_case(tmp_path, "honest")
    add_case(tmp_path, "lenient", verify="exit 0\n")
    proc = validate(tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert (
        "cases/lenient/case.json: verify: verify.sh passes on the untouched fixture" in proc.stdout
    )
    assert "honest" not in proc.stdout


@pytest.mark.slow
def test_validate_graders_exits_0_when_every_grader_is_honest(tmp_path: Path) -> None:
    add_case(tmp_path, "honest")
    proc = validate(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_validate_graders_grades_under_the_configured_verify_timeout(tmp_path: Path) -> None:
    # It always allowed the default 120 s: a grader too slow for the workspace's
    # own timeout passed here and then failed every repeat of a run (and one
    # configured for longer than 120 s was reported as failing).
    from capeval.runner.validate import validate_workspace

    add_case(tmp_path, "slow", verify=HONEST + "sleep 5\n")
    (tmp_path / "capeval.toml").write_text("[timeouts]\nverify = 0.5\n")
    result = validate_workspace(tmp_path, graders=True)
    (problem,) = result.problems
    assert problem.field == "verify" and "fails (exit 124)" in problem.message


def test_validate_graders_holds_the_oracle_to_the_configured_max_turns(tmp_path: Path) -> None:
    # `max_turns` overrides every case's budget in a run; the check used only
    # the case's own, so an oracle over the configured budget passed it.
    from capeval.runner.validate import validate_workspace

    add_case(tmp_path, "long")
    (tmp_path / "capeval.toml").write_text("max_turns = 1\n")
    (problem,) = validate_workspace(tmp_path, graders=True).problems
    assert problem.field == "turns"
    assert problem.message.startswith("uses 2 turns, over the configured max_turns 1")


def test_the_grader_gets_the_http_url_as_in_a_run(tmp_path: Path) -> None:
    # A run passes EVAL_HTTP_URL and EVAL_HTTP_TOKEN to the grader; one that
    # fetches from the fixture itself failed here while passing in a run.
    verify = (
        'python3 -c "import sys, urllib.request as u; '
        "sys.exit(u.urlopen(sys.argv[1] + '/token.txt').read().decode().strip() != "
        'open(\'token.txt\').read().strip())" "$EVAL_HTTP_URL" || exit 1\n'
    )
    add_case(tmp_path, "web", verify=verify, oracle=FETCHES_TOKEN, httpFixture=True)
    assert check(tmp_path) == []


def test_the_oracle_gets_the_http_url_in_its_environment(tmp_path: Path) -> None:
    # As a run's agent does: a trajectory whose shell step reads
    # $EVAL_HTTP_URL must find it, or an honest case is reported as broken.
    fetch = (
        "python3 -c \"import os, urllib.request as u; print(u.urlopen(os.environ['EVAL_HTTP_URL']"
        " + '/token.txt').read().decode().strip())\" > token.txt"
    )
    oracle = {"turns": [{"toolCalls": [{"name": "run_shell", "arguments": {"command": fetch}}]}]}
    verify = 'grep -qx "$EVAL_HTTP_TOKEN" token.txt || { echo "no token"; exit 1; }\n'
    add_case(tmp_path, "web", verify=verify, oracle=oracle, httpFixture=True)
    assert check(tmp_path) == []


def test_an_oracle_that_exits_0_but_reports_failure_did_not_succeed(tmp_path: Path) -> None:
    # As in the pass rule: the agent's own status is the better witness
    # (Claude's error_max_turns comes with exit 0).
    add_case(tmp_path, "quiet", oracle={**SOLVES, "status": "failed", "error": "max turns"})
    (problem,) = check(tmp_path)
    assert "did not succeed (status failed, exit 0): max turns" in problem


def test_an_oracle_using_exactly_its_budget_is_within_it(tmp_path: Path) -> None:
    add_case(tmp_path, "exact", maxTurns=len(SOLVES["turns"]))
    assert check(tmp_path) == []


def test_a_failing_graders_output_is_reported_by_its_tail(tmp_path: Path) -> None:
    # Where a grader says why it failed: the end of its output.
    noisy = "for i in $(seq 200); do echo noise-$i; done; echo 'the real reason'; exit 3\n"
    add_case(tmp_path, "noisy", verify=noisy)
    (problem,) = check(tmp_path)
    assert problem.endswith("the real reason") and "noise-1\n" not in problem
