"""The live matrix's parts that need no agent CLI: cases, scripts, the CLI adapters' argv and
output reading, retries, the MCP control-plane server, skipping and the command's checks."""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from capeval import __version__
from capeval.core.paperclip.policy import CODEX_SAMPLE_GROUPS
from capeval.paperclip.bindings import codex_binding
from capeval.paperclip.derivative import Row
from capeval.paperclip.live import (
    AgentNotFound,
    LiveRunner,
    LiveSettings,
    LiveSkipped,
    find_agent,
    read_journal,
    run_with_retries,
)
from capeval.paperclip.liveagents import AGENTS
from capeval.paperclip.livecases import LiveCase, live_cases, prompt, scripted_calls
from capeval.paperclip.livejudge import judge
from capeval.paperclip.mcpserver import ControlPlaneServer, serve
from capeval.paperclip.suite import CONTROL_PLANE_NAMES, codex_sample
from tests.clirun import capeval

CODEX, CLAUDE = AGENTS["codex"], AGENTS["claude-code"]


@pytest.fixture(scope="module")
def rows(paperclip_rows: list[Row]) -> list[Row]:
    return paperclip_rows


@pytest.fixture(scope="module")
def cases(paperclip_rows: list[Row]) -> dict[str, LiveCase]:
    """The single or granted configuration of each group's case, by group."""
    return {c.group: c for c in live_cases(paperclip_rows) if c.granted}


# -- cases and scripts -----------------------------------------------------------------


def test_one_case_per_group_the_codex_samples_pick_in_every_configuration(
    rows: list[Row], cases: dict[str, LiveCase]
) -> None:
    assert sorted(cases) == sorted({r.group for r in rows}) and len(cases) == 16
    sample = {s["group"]: (s["caseId"], s["operation"]) for s in codex_sample(rows, [])}
    for group in CODEX_SAMPLE_GROUPS:
        assert (cases[group].row.id, cases[group].operation) == sample[group]
    every = live_cases(rows)
    optional = [c for c in every if c.grants != "single"]
    assert {c.grants for c in optional} == {"granted", "ungranted"}
    assert len(optional) == 2 * len({c.row.id for c in optional})
    assert all(c.gated for c in optional if c.grants == "ungranted")
    assert {c.group for c in live_cases(rows, ["wk", "ap", "wk"])} == {"ap", "wk"}
    with pytest.raises(ValueError, match=r"unknown group.*zz"):
        live_cases(rows, ["zz"])


def test_prompt_states_the_case_and_the_rules(cases: dict[str, LiveCase]) -> None:
    case = cases["dp"]
    text = prompt(case)
    assert case.row.id in text and case.row.scenario in text and "paperclip" in text


def test_scripted_turn_goes_past_an_expected_failure_to_the_headline(
    cases: dict[str, LiveCase],
) -> None:
    # dp's first write is stale on purpose (a revision conflict); the turn reads and writes again.
    calls = scripted_calls(cases["dp"])
    names = [c["operation"] for c in calls]
    assert names == ["write_document", "read_document", "list_documents", "write_document"]
    writes = [c for c in calls if c["operation"] == "write_document"]
    assert writes[0]["arguments"]["baseRevisionId"] != writes[1]["arguments"]["baseRevisionId"]
    assert scripted_calls(cases["rs"]) == []  # restraint: the plan withholds every call
    # A correct turn never tries a control-plane-owned operation, whatever the plan probes.
    for case in cases.values():
        assert not {c["operation"] for c in scripted_calls(case)} & set(CONTROL_PLANE_NAMES)


def test_each_cli_is_scripted_in_its_own_tool_vocabulary(cases: dict[str, LiveCase]) -> None:
    for case in cases.values():
        calls = scripted_calls(case)
        # Codex finds each new MCP tool with its tool search before calling it.
        seen: set[str] = set()
        steps = [c for step in CODEX.render(calls) for c in step["calls"]]
        for call in steps:
            if call["name"] == "tool_search":
                seen.add(call["input"]["query"].split()[0])
            else:
                assert call["namespace"] == "mcp__paperclip" and call["name"] in seen
        assert [c["name"] for c in steps if c["name"] != "tool_search"] == [
            c["operation"] for c in calls
        ]
        # Claude Code names the server's tools mcp__<server>__<tool>.
        assert [s["calls"][0]["name"] for s in CLAUDE.render(calls)] == [
            f"mcp__paperclip__{c['operation']}" for c in calls
        ]


# -- the CLI adapters ------------------------------------------------------------------


def test_codex_waits_for_the_control_planes_tool_catalog(tmp_path: Path) -> None:
    # Without these, Codex sent the first model request beside the MCP server's
    # start; on a loaded machine the scripted model answered before the tools
    # were listed and turns failed ("never listed", "never called") at random.
    argv = CODEX.argv("codex", "do it", ["python", "-m", "srv"], tmp_path, "m", ["-c", "x=1"])
    overrides = {argv[i + 1] for i, word in enumerate(argv) if word == "-c"}
    mcp = "mcp_servers.paperclip"
    assert f'{mcp}.command="python"' in overrides and f'{mcp}.args=["-m", "srv"]' in overrides
    assert f"{mcp}.required=true" in overrides
    assert f'{mcp}.startup_readiness="catalog"' in overrides
    assert f'{mcp}.default_tools_approval_mode="approve"' in overrides
    assert any(o.startswith(f"{mcp}.startup_timeout_sec=") for o in overrides)
    assert argv[-1] == "do it" and argv[argv.index("-m") : argv.index("-m") + 2] == ["-m", "m"]


def test_claude_code_gets_only_the_control_plane_and_no_builtin_tool(tmp_path: Path) -> None:
    argv = CLAUDE.argv("claude", "do it", ["python", "-m", "srv"], tmp_path, None, [])
    config = json.loads(argv[argv.index("--mcp-config") + 1])
    assert config == {"mcpServers": {"paperclip": {"command": "python", "args": ["-m", "srv"]}}}
    assert "--strict-mcp-config" in argv and argv[argv.index("--tools") + 1] == ""
    assert argv[argv.index("--allowedTools") + 1] == "mcp__paperclip"
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert "--model" not in argv and "--dangerously-skip-permissions" not in argv


def test_each_cli_says_which_calls_it_refused_itself() -> None:
    codex = CODEX.report("", "ERROR unsupported call: mcp__paperclip__checkout_task\n", 0)
    assert codex.cli_refused == ("checkout_task",)
    events = [
        {"type": "assistant", "message": {"model": "claude-x", "content": [
            {"type": "tool_use", "id": "t1", "name": "mcp__paperclip__create_task", "input": {}},
        ]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
             "content": "<tool_use_error>Error: No such tool available: mcp__paperclip__create_task</tool_use_error>"},
        ]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": "done"},
    ]  # fmt: skip
    claude = CLAUDE.report("\n".join(json.dumps(e) for e in events), "", 0)
    assert claude.cli_refused == ("create_task",) and claude.infra_error is None
    cut = CLAUDE.report("\n".join(json.dumps(e) for e in events[:2]), "", 1)
    assert cut.infra_error and cut.error_kind == "stream"  # no result event: never measured


def test_an_outage_is_told_from_a_failure_as_capability_runs_tell_it() -> None:
    def codex_failing(message: str) -> Any:
        events = [
            {"type": "thread.started", "thread_id": "t"},
            {"type": "turn.started"},
            {"type": "turn.failed", "error": {"message": message}},
        ]
        return CODEX.report("\n".join(json.dumps(e) for e in events), "", 1)

    limited = codex_failing("exceeded retry limit, last status: 429 Too Many Requests")
    assert (limited.error_kind, limited.provider_status) == ("rate_limit", 429)
    assert limited.infra_error and "429" in limited.infra_error
    refused = codex_failing("model refused: 400 bad request")  # the turn's own failure
    assert refused.infra_error is None and refused.error_kind is None


# -- retries -----------------------------------------------------------------------------


def test_an_error_turn_is_run_again_on_the_capability_schedule_and_the_last_row_kept(
    cases: dict[str, LiveCase], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import capeval.paperclip.live as live
    from capeval.runner.retry import RetryPolicy

    outcomes = iter(["error", "error", "passed"])

    def turn(settings: Any, runner: Any, case: Any) -> dict[str, Any]:
        outcome = next(outcomes)
        return {"outcome": outcome, "error": f"attempt was {outcome}"}

    monkeypatch.setattr(live, "run_turn", turn)
    waits: list[float] = []
    settings = LiveSettings(tmp_path / "d.yaml", retry=RetryPolicy(2, 1.0))
    runner = LiveRunner(CODEX, "codex")
    row = run_with_retries(settings, runner, cases["cm"], sleep=waits.append)
    assert row["outcome"] == "passed" and row["attempts"] == 3
    assert row["attemptErrors"] == ["attempt was error", "attempt was error"]
    # `capeval run --retry-wait 1`: 1 s, then 2 s, each plus up to 1 s of jitter.
    assert 1.0 <= waits[0] <= 2.0 and 2.0 <= waits[1] <= 3.0
    outcomes = iter(["error", "error"])
    once = run_with_retries(
        LiveSettings(tmp_path / "d.yaml", retry=RetryPolicy(1, 0.0)), runner, cases["cm"]
    )
    assert once["outcome"] == "error" and once["attempts"] == 2
    failed = iter(["failed"])
    monkeypatch.setattr(live, "run_turn", lambda *a: {"outcome": next(failed)})
    assert run_with_retries(settings, runner, cases["cm"])["attempts"] == 1  # judged: kept


def test_the_matrix_runs_every_repeat_of_every_agent_and_case_through_the_row_writer(
    rows: list[Row], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import capeval.paperclip.live as live

    def turn(settings: Any, runner: Any, case: LiveCase) -> dict[str, Any]:
        return {"outcome": "passed", "agent": runner.name, "id": case.config_id}

    monkeypatch.setattr(live, "run_turn", turn)
    ap = [c for c in live_cases(rows) if c.group == "ap"]
    runners = [LiveRunner(CODEX, "codex"), LiveRunner(CLAUDE, "claude")]
    rows_path = tmp_path / "live-rows.jsonl"
    seen: list[dict[str, Any]] = []
    out = live.run_matrix(
        LiveSettings(tmp_path / "d.yaml", repeats=2), runners, ap, rows_path, progress=seen.append
    )
    assert [(r["repeat"], r["agent"], r["id"]) for r in out] == [
        (repeat, agent, case.config_id)
        for repeat in (0, 1)
        for agent in ("codex", "claude-code")
        for case in ap
    ]
    assert len({r["runId"] for r in out}) == 1 and seen == out
    assert all(r["capevalVersion"] == __version__ for r in out)
    assert [json.loads(line) for line in rows_path.read_text().splitlines()] == out


# -- the MCP server -----------------------------------------------------------------------


def rpc(server: ControlPlaneServer, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    out = io.StringIO()
    serve(server, [json.dumps(m) + "\n" for m in messages], out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_mcp_server_lists_the_codex_binding_and_runs_calls_on_the_control_plane(
    cases: dict[str, LiveCase],
) -> None:
    journal = io.StringIO()
    server = ControlPlaneServer(cases["cm"].row, journal)
    init, listed = rpc(
        server,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert init["result"]["protocolVersion"] == "2025-06-18"
    tools = listed["result"]["tools"]
    assert [t["name"] for t in tools] == [t["name"] for t in codex_binding(ctx=server.ctx)]
    assert not {t["name"] for t in tools} & set(CONTROL_PLANE_NAMES)
    assert all(t["inputSchema"]["type"] == "object" for t in tools)

    args = {"task": "i-0103", "body": "status", "idempotencyKey": "k-1", "_meta": {"callId": "c"}}
    done, refused, unknown = rpc(
        server,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "report_progress", "arguments": args}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "checkout_task", "arguments": {"task": "i-0103"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "resources/list"},
    )  # fmt: skip
    body = json.loads(done["result"]["content"][0]["text"])
    assert done["result"]["isError"] is False and body["decision"] == "allowed"
    assert refused["result"]["isError"] is True
    assert json.loads(refused["result"]["content"][0]["text"])["decision"] == "absent"
    assert unknown["error"]["code"] == -32601

    records = [json.loads(line) for line in journal.getvalue().splitlines()]
    assert [r["kind"] for r in records] == ["open", "surface", "call", "call"]
    wrote, probe = records[2], records[3]
    assert wrote["arguments"] == {k: v for k, v in args.items() if k != "_meta"}
    assert wrote["decision"] == "allowed" and wrote["stateDiff"]
    assert probe["decision"] == "absent" and probe["stateDiff"] == [] and not probe["onSurface"]
    assert judge(cases["cm"], records[:3], exit_code=0).outcome == "passed"
    # The refused attempt at a control-plane operation is the agent's failure all the same.
    (attempt,) = judge(cases["cm"], records, exit_code=0).failures
    assert (attempt.operation, attempt.decision) == ("checkout_task", "absent")


def test_mcp_server_answers_a_malformed_call_as_a_tool_error(cases: dict[str, LiveCase]) -> None:
    # A missing required argument used to raise KeyError and end the server mid-turn.
    journal = io.StringIO()
    server = ControlPlaneServer(cases["cm"].row, journal)
    before = copy.deepcopy(server.cp.state)
    bad = {"name": "report_progress", "arguments": {"task": "i-0103", "idempotencyKey": "k"}}
    called, pong = rpc(
        server,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": bad},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    )
    body = json.loads(called["result"]["content"][0]["text"])
    assert called["result"]["isError"] is True
    assert (
        body["error"] == "invalid_arguments" and "'body' is a required property" in body["detail"]
    )
    assert pong == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert server.cp.state == before
    record = [json.loads(line) for line in journal.getvalue().splitlines()][-1]
    assert (record["kind"], record["error"], record["stateDiff"]) == (
        "call",
        "invalid_arguments",
        [],
    )


def test_mcp_server_survives_an_internal_error(
    cases: dict[str, LiveCase], monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = io.StringIO()
    server = ControlPlaneServer(cases["cm"].row, journal)

    def broken(name: str, args: dict[str, Any]) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(server.cp, "call", broken)
    failed, pong = rpc(
        server,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    )
    assert failed["error"]["code"] == -32603 and "boom" in failed["error"]["message"]
    assert pong["result"] == {}
    assert json.loads(journal.getvalue().splitlines()[-1]) == {
        "kind": "error",
        "message": "RuntimeError: boom",
    }


def test_mcp_server_runs_as_a_process_on_stdio(
    tmp_path: Path, cases: dict[str, LiveCase], paperclip_derivative: Path
) -> None:
    journal = tmp_path / "journal.jsonl"
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "capeval.paperclip.mcpserver", "--case", cases["wk"].row.id,
         "--journal", str(journal), "--derivative", str(paperclip_derivative)],
        input="".join(json.dumps(m) + "\n" for m in lines) + "not json\n",
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [o.get("id") for o in out] == [0, 1, 2, None]
    assert out[3]["error"]["code"] == -32700
    # Ask mode: the write operations are not offered at all.
    offered = {t["name"] for t in out[2]["result"]["tools"]}
    assert "report_progress" in offered and "finish_task" not in offered
    assert json.loads(journal.read_text().splitlines()[0])["caseId"] == cases["wk"].row.id


def test_mcp_server_ungranted_lists_or_withholds_the_optional_tool(
    rows: list[Row],
) -> None:
    se = next(c for c in live_cases(rows) if c.group == "se" and c.grants == "ungranted")
    absent = ControlPlaneServer(se.row, io.StringIO(), granted=False)
    assert se.gated not in absent.names
    journal = io.StringIO()
    listed = ControlPlaneServer(se.row, journal, granted=False, list_granted=True)
    assert se.gated in listed.names
    (call,) = scripted_calls(se)
    (answer,) = rpc(
        listed,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": call["operation"], "arguments": call["arguments"]}},
    )  # fmt: skip
    assert answer["result"]["isError"] is True
    opened, record = (json.loads(line) for line in journal.getvalue().splitlines())
    assert (opened["granted"], opened["listing"]) == (False, "granted")
    assert opened["controlPlaneActions"] and opened["openDiff"]
    assert record["decision"] == "denied" and record["stateDiff"] == []


def test_mcp_server_rejects_an_unknown_case(tmp_path: Path, paperclip_derivative: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "capeval.paperclip.mcpserver", "--case", "nope-01",
         "--journal", str(tmp_path / "j"), "--derivative", str(paperclip_derivative)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and "unknown case 'nope-01'" in proc.stderr


# -- skipping -----------------------------------------------------------------------------


def test_missing_codex_is_a_skip_that_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LiveSkipped, match=r"not on PATH.*npm install.*--codex PATH"):
        find_agent(CODEX)


def test_a_relative_codex_path_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Codex runs in a scratch directory: a relative path would name nothing there.
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "bin" / "codex"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert find_agent(CODEX, "bin/codex") == str(exe)
    monkeypatch.setenv("PATH", "bin")  # a relative PATH entry, too
    assert find_agent(CODEX) == str(exe)


def test_an_unconfigured_cli_is_a_skip_naming_the_ways_to_configure(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    with pytest.raises(LiveSkipped, match=r"OPENAI_API_KEY.*codex login"):
        CODEX.check_configured({"CODEX_HOME": str(home)}, [])
    CODEX.check_configured({"CODEX_HOME": str(home), "OPENAI_API_KEY": "sk-x"}, [])
    CODEX.check_configured({"CODEX_HOME": str(home)}, ["model_provider=mine"])
    home.mkdir()
    (home / "auth.json").write_text("{}")
    CODEX.check_configured({"CODEX_HOME": str(home)}, [])
    claude_home = tmp_path / "claude-home"
    with pytest.raises(LiveSkipped, match=r"Claude Code.*ANTHROPIC_API_KEY.*log in"):
        CLAUDE.check_configured({"CLAUDE_CONFIG_DIR": str(claude_home)}, [])
    CLAUDE.check_configured({"ANTHROPIC_API_KEY": "sk-x"}, [])
    claude_home.mkdir()
    (claude_home / ".credentials.json").write_text("{}")
    CLAUDE.check_configured({"CLAUDE_CONFIG_DIR": str(claude_home)}, [])


def test_a_torn_journal_keeps_the_records_before_the_tear(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    assert read_journal(journal) == []  # the server never started
    journal.write_text('{"kind": "open"}\n{"kind": "surface", "operations": []}\n{"kind": "ca')
    assert [r["kind"] for r in read_journal(journal)] == ["open", "surface"]


def test_an_out_that_cannot_hold_the_rows_is_bad_usage_not_a_traceback(
    tmp_path: Path, paperclip_derivative: Path
) -> None:
    # `run` and `report` name an unwritable output and exit 2; `live` made its folder only
    # inside the matrix and ended with NotADirectoryError before the first turn.
    from click.testing import CliRunner

    from capeval.cli import main

    codex = tmp_path / "codex"
    codex.write_text("#!/bin/sh\nexit 0\n")  # found, never run: the check comes first
    codex.chmod(0o755)
    (tmp_path / "afile").write_text("")
    result = CliRunner().invoke(
        main,
        [
            "paperclip", "live", "--file", str(paperclip_derivative), "--scripted",
            "--agent", "codex", "--codex", str(codex), "--group", "hb",
            "--out", str(tmp_path / "afile" / "live"),
        ],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "cannot write" in result.output and "--out" in result.output


def test_the_live_progress_line_names_the_decision_and_its_reason() -> None:
    from capeval.commands.paperclip import failure_line

    line = failure_line(
        {
            "assertionClass": "agent_tool_contract",
            "operation": "request_review",
            "decision": "denied",
            "reason": "operation_not_available_in_task_mode",
            "message": "no agent tool call was allowed",
        }
    )
    assert line == (
        "agent_tool_contract: request_review decision=denied "
        "(operation_not_available_in_task_mode): no agent tool call was allowed"
    )
    assert failure_line({"assertionClass": "live_turn", "operation": "", "message": "m"}) == (
        "live_turn: - decision=-: m"
    )


@pytest.fixture
def fake_codex(tmp_path: Path) -> Path:
    """An executable named codex that is found but exits at once (no turn passes)."""
    exe = tmp_path / "bin" / "codex"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


@pytest.mark.slow
def test_a_named_codex_that_is_not_an_executable_is_bad_input(
    paperclip_derivative: Path, tmp_path: Path
) -> None:
    for named, why in (
        (tmp_path / "nope" / "codex", "does not exist"),
        (tmp_path, "is a directory"),
        ("no-such-codex-here", "is not on PATH"),
    ):
        proc = capeval("paperclip", "live", "--file", paperclip_derivative, "--codex", named)
        assert proc.returncode == 2, proc.stderr
        assert why in proc.stderr and "live matrix skipped" not in proc.stderr + proc.stdout
        with pytest.raises(AgentNotFound, match=why):
            find_agent(CODEX, str(named))
    plain = tmp_path / "plain"
    plain.write_text("")
    with pytest.raises(AgentNotFound, match="is not executable"):
        find_agent(CODEX, str(plain))


def test_no_codex_on_path_and_none_named_is_still_a_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paperclip_derivative: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LiveSkipped, match="not on PATH"):
        find_agent(CODEX)
    from click.testing import CliRunner

    from capeval.cli import main

    argv = ["paperclip", "live", "--file", str(paperclip_derivative)]
    text = CliRunner().invoke(main, argv)
    assert text.exit_code == 0 and "live matrix skipped" in text.output
    assert "`codex` is not on PATH" in text.output and "`claude` is not on PATH" in text.output
    as_json = CliRunner().invoke(main, [*argv, "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.output)["turns"] == 0
    assert len(json.loads(as_json.output)["skipped"]) == 2


def test_a_model_is_named_for_one_agent_or_for_all() -> None:
    import click

    from capeval.commands.paperclip import _models

    both = ["codex", "claude-code"]
    assert _models(["gpt-x"], both) == {"codex": "gpt-x", "claude-code": "gpt-x"}
    assert _models(["codex=gpt-x", "claude-code=sonnet"], both) == {
        "codex": "gpt-x",
        "claude-code": "sonnet",
    }
    with pytest.raises(click.BadParameter, match="not in this matrix"):
        _models(["claude-code=sonnet"], ["codex"])
    # A misspelt agent was taken for a model id and handed to every agent ("claude=opus").
    with pytest.raises(
        click.BadParameter,
        match="'claude=opus' names an agent 'claude' capeval does not know; write "
        "codex=MODEL or claude-code=MODEL for one agent, or a bare MODEL for every agent",
    ):
        _models(["claude=opus"], both)


@pytest.mark.slow
def test_live_keeps_an_earlier_matrix_unless_forced(
    paperclip_derivative: Path, tmp_path: Path, fake_codex: Path
) -> None:
    out = tmp_path / "live"
    out.mkdir()
    rows = out / "live-rows.jsonl"
    earlier = "".join(json.dumps({"group": g, "passed": True}) + "\n" for g in ("ap", "ar", "bl"))
    rows.write_text(earlier)
    argv = ["paperclip", "live", "--file", paperclip_derivative, "--scripted"]
    argv += ["--agent", "codex", "--codex", fake_codex, "--group", "hb", "--out", out]
    argv += ["--timeout", "60", "--retries", "0"]
    proc = capeval(*argv)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "holds an earlier matrix's rows; pass --force" in proc.stderr
    assert rows.read_text() == earlier
    as_json = capeval(*argv, "--json")
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["exitCode"] == 2
    assert rows.read_text() == earlier
    forced = capeval(*argv, "--force", timeout=180)
    assert forced.returncode == 1, forced.stderr  # the fake Codex never lists the tools
    (row,) = [json.loads(line) for line in rows.read_text().splitlines()]
    assert (row["group"], row["agent"], row["outcome"]) == ("hb", "codex", "error")
    assert "ERROR codex hb" in forced.stdout and "0 passed, 0 failed, 1 error" in forced.stdout


def test_an_empty_rows_file_is_not_an_earlier_matrix(
    paperclip_derivative: Path, tmp_path: Path, fake_codex: Path
) -> None:
    # The output check itself leaves an empty file when a matrix is stopped before its
    # first turn: refusing over it would make every retry need --force.
    out = tmp_path / "live"
    out.mkdir()
    (out / "live-rows.jsonl").write_text("")
    proc = capeval(
        "paperclip", "live", "--file", paperclip_derivative, "--scripted", "--agent", "codex",
        "--codex", fake_codex, "--group", "hb", "--out", out, "--timeout", "60", "--retries", "0",
        timeout=180,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    assert "earlier matrix" not in proc.stderr
    assert os.path.getsize(out / "live-rows.jsonl") > 0


def test_progress_numbers_repeats_as_the_rows_and_the_report_do(
    paperclip_derivative: Path, tmp_path: Path, fake_codex: Path
) -> None:
    # The progress said #1 and #2 for the rows' (and the report's) repeats 0 and 1,
    # where `capeval run` says #0 and #1: a failing "#2" was "repeat 1" in the report.
    out = tmp_path / "live"
    proc = capeval(
        "paperclip", "live", "--file", paperclip_derivative, "--scripted", "--agent", "codex",
        "--codex", fake_codex, "--group", "hb", "--out", out, "--timeout", "60", "--retries", "0",
        "--repeats", "2", timeout=180,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # the fake Codex never lists the tools
    rows = [json.loads(line) for line in (out / "live-rows.jsonl").read_text().splitlines()]
    assert [r["repeat"] for r in rows] == [0, 1]
    shown = [line.split(" (")[0] for line in proc.stdout.splitlines() if line.startswith("ERROR")]
    assert shown == [
        "ERROR codex hb hb-context-01:single #0",
        "ERROR codex hb hb-context-01:single #1",
    ]


def test_a_turn_the_timeout_ends_says_what_the_cli_last_complained_of(
    paperclip_derivative: Path, tmp_path: Path
) -> None:
    # Codex with a key but no network retries until the timeout; the turn said only
    # "codex did not finish within N s", while its stream said why (as `capeval run`
    # reports it: "the last error in its stream").
    exe = tmp_path / "bin" / "codex"
    exe.parent.mkdir()
    waiting = "Reconnecting... waiting for network (Connection failed: error sending request)"
    events = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "error", "message": waiting},
    ]
    lines = "".join(f"echo '{json.dumps(e)}'\n" for e in events)
    version = 'if [ "$1" = --version ]; then echo "codex-cli 0.0.1"; exit 0; fi\n'
    exe.write_text(f"#!/bin/sh\n{version}{lines}exec sleep 60\n")
    exe.chmod(0o755)
    out = tmp_path / "live"
    proc = capeval(
        "paperclip", "live", "--file", paperclip_derivative, "--scripted", "--agent", "codex",
        "--codex", exe, "--group", "hb", "--out", out, "--timeout", "2", "--retries", "0",
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    (row,) = [json.loads(line) for line in (out / "live-rows.jsonl").read_text().splitlines()]
    said = f"codex did not finish within 2 s; the last error in its stream: codex: {waiting}"
    assert row["status"] == "timeout" and row["error"] == said
    assert said in proc.stdout
