"""The command adapter against a small fake product that calls the hook like corbits.

The fake product (written below, run as a real subprocess) runs shell
commands in the workdir, then calls `sh <hook> postTurn` and
`sh <hook> postRun` with JSON on stdin, the way corbits does. Everything is
real: processes, files, git; only the product is small.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from capeval.agents.base import AgentRequest
from capeval.agents.command import CommandAdapter, CommandTemplateError, hook_path, render_command
from capeval.core.agentconfig import DEFAULT_HOOK, AgentConfig
from capeval.core.turns import SHELL, TokenUsage
from tests.agentrun import agent_table, capeval_run
from tests.runhelpers import read_rows, write_case

FAKE_PRODUCT = textwrap.dedent(
    '''
    """A fake coding-agent CLI: runs commands, reports through the capeval hook."""
    import argparse, json, os, subprocess, sys, time

    p = argparse.ArgumentParser()
    p.add_argument("--cwd", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--max-turns")
    p.add_argument("--mode", default="ok")
    p.add_argument("--dangerously-skip-permissions", action="store_true")
    p.add_argument("--force", action="store_true")
    p.add_argument("prompt")
    a = p.parse_args()
    with open(os.environ["FAKE_ARGV_OUT"], "w") as fh:
        json.dump(sys.argv[1:], fh)
    hook = os.path.join(a.cwd, os.environ.get("FAKE_HOOK", ".corbits/hooks/eval-run-capture.sh"))
    commands = [
        "echo one > notes.txt && cat notes.txt | wc -l",
        "sed -i 's/one/two/' notes.txt",
        "FOO=bar true",
    ]
    turns = []
    for i, cmd in enumerate(commands):
        subprocess.run(["bash", "-c", cmd], cwd=a.cwd, check=True)
        turn = {
            "turnIndex": i,
            "assistantTurn": {"content": [{"type": "text", "text": ""}]},
            "toolCalls": [{"id": f"c{i}", "name": "run_shell", "arguments": {"command": cmd}}],
            "durationMs": 10 + i,
        }
        turns.append(turn)
        if a.mode != "nohook":
            subprocess.run(["sh", hook, "postTurn"], input=json.dumps(turn).encode(), check=True)
    turns.append({
        "turnIndex": 3,
        "assistantTurn": {"content": [{"type": "text", "text": "All done."}]},
        "toolCalls": [],
        "durationMs": 5,
    })
    summary = {
        "status": "done", "startedAt": "2026-11-30T10:00:00Z", "finishedAt": "2026-11-30T10:00:02Z",
        "durationMs": 1234, "turnsUsed": 4, "toolCallCount": 3,
        "tokenUsage": {"input": 100, "output": 20, "cacheRead": 50, "cacheWrite": 0, "thinking": 3},
        "turns": turns, "sessionId": "fake-session-1", "provider": "acme", "model": a.model,
    }
    if a.mode in ("uncounted", "empty"):  # the product states no counts of its own
        del summary["turnsUsed"], summary["toolCallCount"]
    if a.mode == "empty":
        summary["turns"] = []
    if a.mode == "reportfail":  # the product says it failed, yet exits 0
        summary["status"], summary["error"] = "failed", "gave up after 3 turns"
    if a.mode == "sleep":
        time.sleep(30)
    if a.mode != "nohook":
        subprocess.run(["sh", hook, "postRun"], input=json.dumps(summary).encode(), check=True)
    sys.exit(3 if a.mode == "fail" else 0)
    '''
)


@pytest.fixture
def product(tmp_path: Path) -> Path:
    path = tmp_path / "fake_product.py"
    path.write_text(FAKE_PRODUCT)
    return path


def template(product: Path, mode: str = "ok") -> str:
    return (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(product))} --cwd {{workdir}} "
        f"--model {{model}} --max-turns {{max_turns}} --mode {mode} {{prompt}}"
    )


def make_request(
    tmp_path: Path, prompt: str = "fix it", extra_env: dict[str, str] | None = None, **kw: object
) -> AgentRequest:
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    return AgentRequest(
        workdir=workdir,
        prompt=prompt,
        provider="acme",
        model="m-1",
        case_dir=tmp_path,
        capture_dir=tmp_path / "capture",
        timeout_s=kw.pop("timeout_s", 60.0),  # type: ignore[arg-type]
        env={"FAKE_ARGV_OUT": str(tmp_path / "argv.json"), **(extra_env or {})},
        **kw,  # type: ignore[arg-type]
    )


def adapter(product: Path, mode: str = "ok", **kw: object) -> CommandAdapter:
    return CommandAdapter(
        AgentConfig(name="fake", type="command", command=template(product, mode), **kw)
    )  # type: ignore[arg-type]


def test_hook_summary_becomes_the_result(tmp_path: Path, product: Path) -> None:
    request = make_request(tmp_path, max_turns=7)
    result = adapter(product).run(request)
    assert result.status == "done" and result.exitCode == 0, result.error
    assert result.error is None
    assert result.sessionId == "fake-session-1"
    assert (result.provider, result.model) == ("acme", "m-1")
    assert result.turnsUsed == 4 and result.toolCallCount == 3
    assert result.tokenUsage == TokenUsage(input=100, output=20, cacheRead=50, thinking=3)
    assert result.durationMs == 1234
    assert result.textPreview == "All done."
    assert result.summary is not None
    shell = [c for t in result.summary.turns for c in t.toolCalls]
    assert [c.kind for c in shell] == [SHELL] * 3
    assert shell[1].command == "sed -i 's/one/two/' notes.txt"
    # The product really ran in the workdir; the capture stayed outside it.
    assert (request.workdir / "notes.txt").read_text() == "two\n"
    assert (request.capture_dir / "run-summary.json").is_file()
    assert not list(request.workdir.rglob("run-summary.json"))
    # The hook sits at the corbits path, executable, invisible to `git status`.
    hook = request.workdir / DEFAULT_HOOK
    assert hook.stat().st_mode & 0o111
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=request.workdir, capture_output=True, text=True
    ).stdout
    assert ".corbits" not in status and "notes.txt" in status
    # {max_turns} filled from the budget.
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[argv.index("--max-turns") + 1] == "7"


def test_behaviors_derive_from_the_hook_summary(tmp_path: Path, product: Path) -> None:
    from capeval.core.behaviors import derive_behaviors

    result = adapter(product).run(make_request(tmp_path))
    assert result.summary is not None
    b = derive_behaviors(result.summary)
    assert b["shellCommandCount"] == 3
    assert b["chainSegmentCount"] == 5  # 3 + 1 + 1
    assert b["maxChainSegmentsPerCommand"] == 3
    assert b["editViaShellCount"] == 1
    assert b["envAssignmentCommandCount"] == 1
    assert b["maxTurnDurationMs"] == 12


def test_prompt_is_one_argument_and_never_reaches_a_shell(tmp_path: Path, product: Path) -> None:
    nasty = 'it\'s "quoted"; touch PWNED && $(touch PWNED2) `touch PWNED3` {model} *'
    request = make_request(tmp_path, prompt=nasty)
    result = adapter(product).run(request)
    assert result.status == "done", result.error
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[-1] == nasty
    assert not list(request.workdir.glob("PWNED*")) and not list(tmp_path.glob("PWNED*"))
    # No budget: `--max-turns {max_turns}` disappears entirely.
    assert "--max-turns" not in argv


def test_no_hook_call_means_no_behaviors_and_a_budget_fails_closed(
    tmp_path: Path, product: Path
) -> None:
    from capeval.core.passrule import decide, is_over_budget

    result = adapter(product, "nohook").run(make_request(tmp_path, max_turns=10))
    assert result.exitCode == 0 and result.status == "done"
    assert result.summary is None
    assert result.turnsUsed is None and result.toolCallCount is None
    assert "hook was never called" in (result.error or "")
    over = is_over_budget(10, result.turnsUsed)
    assert over is True
    verdict = decide(
        agent_exit_code=result.exitCode,
        verify_exit_code=0,
        over_budget=over,
        budget=10,
        turns_used=result.turnsUsed,
    )
    assert verdict.passed is False
    assert "turnsUsed was not reported" in (verdict.error or "")


def test_counts_come_from_the_reported_turns_but_never_from_none(
    tmp_path: Path, product: Path
) -> None:
    # Turns in the summary are the product's own report: they give the counts.
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    counted = adapter(product, "uncounted").run(make_request(tmp_path / "a", max_turns=10))
    assert (counted.turnsUsed, counted.toolCallCount) == (4, 3)
    # No turns and no turnsUsed is no report at all: a budget must fail
    # closed (docs/running.md#the-pass-rule), where 0 would have passed it.
    empty = adapter(product, "empty").run(make_request(tmp_path / "b", max_turns=10))
    assert empty.status == "done" and empty.turnsUsed is None
    assert empty.toolCallCount is None


def test_post_turn_calls_are_ignored(tmp_path: Path, product: Path) -> None:
    """Only postRun writes the capture: a postTurn payload never replaces it."""
    request = make_request(tmp_path)
    cfg = AgentConfig(name="fake", type="command", command=template(product))
    CommandAdapter(cfg).run(request)
    hook = request.workdir / DEFAULT_HOOK
    before = (request.capture_dir / "run-summary.json").read_text()
    subprocess.run(["sh", str(hook), "postTurn"], input=b'{"x": 1}', check=True)
    assert (request.capture_dir / "run-summary.json").read_text() == before


def test_nonzero_exit_fails_with_the_summary_kept(tmp_path: Path, product: Path) -> None:
    result = adapter(product, "fail").run(make_request(tmp_path))
    assert result.status == "failed" and result.exitCode == 3
    assert "exit code 3" in (result.error or "")
    assert result.summary is not None and result.turnsUsed == 4
    # The summary behaviors are derived from carries the run's verdict, not the product's.
    assert result.summary.status == "failed"


def test_timeout_kills_the_product(tmp_path: Path, product: Path) -> None:
    result = adapter(product, "sleep").run(make_request(tmp_path, timeout_s=1.0))
    assert result.status == "timeout" and result.exitCode == 124
    assert result.summary is None
    assert "timed out" in (result.error or "")


def test_custom_hook_path_and_env_reach_the_product(tmp_path: Path, product: Path) -> None:
    request = make_request(tmp_path, extra_env={"FAKE_HOOK": "tools/capture.sh"})
    result = adapter(product, hook="tools/capture.sh").run(request)
    assert result.summary is not None, result.error
    assert (request.workdir / "tools" / "capture.sh").is_file()


def test_missing_binary_is_a_clear_failure(tmp_path: Path) -> None:
    cfg = AgentConfig(name="corbits", type="command", command="no-such-corbits exec {prompt}")
    result = CommandAdapter(cfg).run(make_request(tmp_path))
    assert result.status == "failed" and result.exitCode is None
    assert "no-such-corbits" in (result.error or "") and "[agents.corbits]" in (result.error or "")


def test_render_command_splits_first_then_substitutes() -> None:
    values = {
        "workdir": "/w d",
        "prompt": "a 'b' c",
        "provider": "p",
        "model": "m",
        "max_turns": None,
    }
    argv = render_command(
        "corbits exec --cwd {workdir} --model={provider}/{model} {prompt}", values
    )
    assert argv == ["corbits", "exec", "--cwd", "/w d", "--model=p/m", "a 'b' c"]
    # A None placeholder drops its argument, and the flag before it when it was the whole value.
    assert render_command("x --max-turns {max_turns} --n={max_turns} {prompt}", values) == [
        "x",
        "a 'b' c",
    ]
    assert render_command("x {prompt}", values, ("--extra", "{model}")) == [
        "x",
        "a 'b' c",
        "--extra",
        "m",
    ]


def test_bad_templates_and_hook_paths_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(CommandTemplateError, match="does not split"):
        render_command("x 'unclosed {prompt}", {"prompt": "p"})
    with pytest.raises(CommandTemplateError, match="empty"):
        render_command("   ", {})
    for bad in ("/etc/hook.sh", "../outside.sh", "a/../../b.sh"):
        with pytest.raises(CommandTemplateError, match="inside"):
            hook_path(tmp_path, bad)
    missing = CommandAdapter(AgentConfig(name="c", type="command")).run(make_request(tmp_path))
    assert missing.status == "failed" and "[agents.c]" in (missing.error or "")


def _notes_case(root: Path, **fields: object) -> None:
    """A workspace whose one case passes when notes.txt says two, as the fake product leaves it."""
    write_case(
        root,
        "notes",
        verify="grep -qx two notes.txt\n",
        prompt="write two into notes.txt",
        **fields,
    )


@pytest.mark.slow
def test_capeval_run_with_command_agents(tmp_path: Path, product: Path) -> None:
    """Through `capeval run`: the hooked run passes; the one whose hook never fires fails closed."""
    root = tmp_path / "ws"
    _notes_case(root, maxTurns=10)
    agents = []
    for name, mode in (("fake", "ok"), ("fake-nohook", "nohook")):
        argv_out = str(tmp_path / (name + ".json"))
        agents.append(
            agent_table(name, "command", template(product, mode), env={"FAKE_ARGV_OUT": argv_out})
        )
    (root / "capeval.toml").write_text("\n".join(agents))
    rows_path = tmp_path / "rows.jsonl"
    matrix = "hooked=acme:m-1@fake,silent=acme:m-1@fake-nohook"
    proc = capeval_run(root, matrix, rows_path, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one repeat failed
    rows = {r["variantId"]: r for r in read_rows(rows_path)}
    hooked, silent = rows["hooked"], rows["silent"]
    assert hooked["passed"] is True, hooked["error"]
    assert hooked["turnsUsed"] == 4 and hooked["sessionId"] == "fake-session-1"
    assert hooked["behaviors"]["editViaShellCount"] == 1
    assert silent["verifyExitCode"] == 0 and silent["agentExitCode"] == 0  # the work was done...
    assert silent["passed"] is False  # ...but with no turn count a budgeted case fails closed
    assert silent["overBudget"] is True and silent["turnsUsed"] is None
    assert silent["behaviors"] is None
    # Why: the adapter's diagnosis reaches the row although the agent exited 0.
    assert "hook was never called" in silent["error"]
    assert hooked["error"] is None


def test_the_installed_hook_stays_out_of_git_status(tmp_path: Path) -> None:
    # The runner's `git init --template=` makes no .git/info/, so the exclude
    # line was never written and graders checking for a clean tree saw the hook.
    from types import SimpleNamespace

    from capeval.agents.command import install_hook
    from capeval.runner.workdir import prepare_workdir

    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "README.md").write_text("x\n")
    case = SimpleNamespace(id="c", fixture="fx", fixture_path=lambda root: root / "fx")
    workdir = prepare_workdir(tmp_path, case, dest=tmp_path / "wd")  # type: ignore[arg-type]
    install_hook(workdir, None, tmp_path / "summary.json")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=workdir, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert status == ""


def test_nan_in_a_hook_summary_is_an_unusable_summary_not_a_crash(
    tmp_path: Path,
) -> None:
    from capeval.agents.command import read_capture

    path = tmp_path / "summary.json"
    path.write_text('{"status": "done", "durationMs": NaN, "turns": []}')
    summary, _, error = read_capture(path)
    assert summary is None
    assert error is not None and "contains NaN, which is not JSON" in error


def test_an_unset_value_never_drops_a_prompt_that_starts_with_a_dash() -> None:
    # The word before {max_turns} was judged after substitution: a prompt
    # '- fix the bug' looked like the flag that took the missing value.
    values = {"prompt": "- fix the bug\n- add tests", "max_turns": None}
    assert render_command("agent run {prompt} {max_turns}", values) == [
        "agent",
        "run",
        "- fix the bug\n- add tests",
    ]
    flagged = render_command("agent run --max-turns {max_turns} {prompt}", values)
    assert flagged == ["agent", "run", "- fix the bug\n- add tests"]


def test_the_version_probe_never_runs_in_the_users_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wrapper that does not answer --version acts as an agent where it runs:
    # the probe ran it in the current directory, the user's checkout.
    wrapper = tmp_path / "agent.sh"
    wrapper.write_text('#!/bin/sh\necho "ran with: $1" >> agent-was-here.txt\necho 2.3.4\n')
    wrapper.chmod(0o755)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    monkeypatch.chdir(checkout)
    config = AgentConfig(name="mine", type="command", command=f"{wrapper} {{prompt}}")
    assert CommandAdapter(config).version() == "2.3.4"
    assert list(checkout.iterdir()) == []


SKIPS = ("--dangerously-skip-permissions", "--force")


@pytest.mark.parametrize("skip", [True, False])
def test_ask_permissions_drops_the_words_the_config_names(
    tmp_path: Path, product: Path, skip: bool
) -> None:
    config = AgentConfig(
        name="fake",
        type="command",
        command=template(product) + " --dangerously-skip-permissions",
        args=("--force",),
        skip_permissions_args=SKIPS,
    )
    # A prompt holding one of the words is the user's text, never dropped.
    request = make_request(tmp_path, prompt="--force it", skip_permissions=skip)
    result = CommandAdapter(config).run(request)
    assert result.status == "done", result.error
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert ("--dangerously-skip-permissions" in argv) is skip
    assert argv.count("--force") == (1 if skip else 0)  # from `args`, dropped too
    assert "--force it" in argv


def _run_asking(tmp_path: Path, product: Path, extra: str) -> subprocess.CompletedProcess[str]:
    root = tmp_path / "ws"
    _notes_case(root)
    command = template(product) + " --dangerously-skip-permissions --force"
    (root / "capeval.toml").write_text(
        "[agents.fake]\n"
        'type = "command"\n'
        f"command = {json.dumps(command)}\n"
        f"env = {{ FAKE_ARGV_OUT = {json.dumps(str(tmp_path / 'argv.json'))} }}\n" + extra
    )
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "capeval",
            "run",
            "--root",
            str(root),
            "--matrix",
            "acme:m-1@fake",
            "--ask-permissions",
            "--jsonl",
            str(tmp_path / "rows.jsonl"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ask_permissions_is_refused_for_a_command_agent_that_names_no_skip_words(
    tmp_path: Path, product: Path
) -> None:
    proc = _run_asking(tmp_path, product, "")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot honor --ask-permissions" in proc.stderr
    assert "[agents.fake] skip_permissions_args" in proc.stderr
    assert not (tmp_path / "argv.json").exists()  # refused before any agent ran


def test_a_skip_word_the_template_lacks_is_a_configuration_problem(
    tmp_path: Path, product: Path
) -> None:
    proc = _run_asking(tmp_path, product, 'skip_permissions_args = ["--dangerously-skip"]\n')
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        "capeval.toml: agents.fake.skip_permissions_args: names '--dangerously-skip', not a "
        "word of the command template or args" in proc.stderr
    )
    # Found by validate too, before any run asks for permissions.
    check = subprocess.run(
        [sys.executable, "-m", "capeval", "validate", "--root", str(tmp_path / "ws")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 2 and "agents.fake.skip_permissions_args" in check.stdout + (
        check.stderr
    )


@pytest.mark.slow
def test_ask_permissions_through_capeval_run_drops_the_flags_and_says_so(
    tmp_path: Path, product: Path
) -> None:
    words = json.dumps(list(SKIPS))
    proc = _run_asking(tmp_path, product, f"skip_permissions_args = {words}\n")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (row,) = map(json.loads, (tmp_path / "rows.jsonl").read_text().splitlines())
    assert row["skipPermissions"] is False and row["passed"] is True
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert not set(SKIPS) & set(argv)


def test_a_run_the_product_reports_failed_fails_though_it_exits_0(
    tmp_path: Path, product: Path
) -> None:
    # The product's own verdict counts, as a CLI's `result` line does: exit 0
    # alone must not make a run it says it gave up on "done".
    result = adapter(product, "reportfail").run(make_request(tmp_path))
    assert result.exitCode == 0
    assert result.status == "failed"
    assert result.error == "gave up after 3 turns"
    assert result.summary is not None and result.summary.status == "failed"


def test_a_summary_left_from_an_earlier_run_is_never_read_as_this_runs(
    tmp_path: Path, product: Path
) -> None:
    # A capture directory used before (a rerun by hand, a retry) holds the
    # last run's summary; a run whose hook never fires must not report it.
    request = make_request(tmp_path, max_turns=10)
    assert adapter(product).run(request).turnsUsed == 4
    silent = adapter(product, "nohook").run(request)
    assert silent.summary is None and silent.turnsUsed is None
    assert "hook was never called" in (silent.error or "")


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        # A flag before a word that merely contains the unset placeholder stays.
        ("x --verbose --n={max_turns} {prompt}", ["x", "--verbose", "p"]),
        # Only a flag takes the value: a subcommand before it stays.
        ("x run {max_turns} {prompt}", ["x", "run", "p"]),
        # The word before was itself substituted: it is not the flag that took the value.
        ("x --cwd={workdir} {max_turns} {prompt}", ["x", "--cwd=/w", "p"]),
        # One unset placeholder drops the whole word: no literal "None" reaches the agent.
        ("x --budget={model}:{max_turns} {prompt}", ["x", "p"]),
    ],
)
def test_an_unset_placeholder_drops_only_its_own_words(template: str, expected: list[str]) -> None:
    values = {"workdir": "/w", "prompt": "p", "provider": "acme", "model": "m", "max_turns": None}
    assert render_command(template, values) == expected
