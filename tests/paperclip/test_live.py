"""The live matrix's pure parts (cases, scripts, verdicts) and its MCP control-plane server."""

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

from capeval.paperclip.bindings import codex_binding
from capeval.paperclip.derivative import Row
from capeval.paperclip.live import (
    CodexNotFound,
    LiveSkipped,
    check_configured,
    find_codex,
    read_journal,
)
from capeval.paperclip.livejudge import (
    LIVE_TURN,
    NAMESPACE,
    LiveCase,
    judge,
    live_cases,
    live_row,
    prompt,
    scripted_turn,
)
from capeval.paperclip.mcpserver import ControlPlaneServer, serve
from capeval.paperclip.policy import CODEX_SAMPLE_GROUPS, RESTRAINT_NO_CALL
from capeval.paperclip.suite import CONTROL_PLANE_NAMES, codex_sample
from tests.clirun import capeval


@pytest.fixture(scope="module")
def rows(paperclip_rows: list[Row]) -> list[Row]:
    return paperclip_rows


@pytest.fixture(scope="module")
def cases(paperclip_rows: list[Row]) -> dict[str, LiveCase]:
    return {c.group: c for c in live_cases(paperclip_rows)}


# -- cases and scripts -----------------------------------------------------------------


def test_one_case_per_group_the_codex_samples_pick(
    rows: list[Row], cases: dict[str, LiveCase]
) -> None:
    assert sorted(cases) == sorted({r.group for r in rows}) and len(cases) == 16
    sample = {s["group"]: (s["caseId"], s["operation"]) for s in codex_sample(rows, [])}
    for group in CODEX_SAMPLE_GROUPS:
        assert (cases[group].row.id, cases[group].operation) == sample[group]
    assert [c.group for c in live_cases(rows, ["wk", "ap", "wk"])] == ["ap", "wk"]
    with pytest.raises(ValueError, match=r"unknown group.*zz"):
        live_cases(rows, ["zz"])


def test_prompt_states_the_case_and_the_rules(cases: dict[str, LiveCase]) -> None:
    case = cases["dp"]
    text = prompt(case)
    assert case.row.id in text and case.row.scenario in text and "paperclip" in text


def _calls(script: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for step in script for c in step["calls"]]


def test_scripted_turn_searches_before_each_new_tool(cases: dict[str, LiveCase]) -> None:
    for case in cases.values():
        seen: set[str] = set()
        for call in _calls(scripted_turn(case)):
            if call["name"] == "tool_search":
                seen.add(call["input"]["query"].split()[0])
            else:
                assert call["namespace"] == NAMESPACE and call["name"] in seen, case.row.id


def test_scripted_turn_goes_past_an_expected_failure_to_the_headline(
    cases: dict[str, LiveCase],
) -> None:
    # dp's first write is stale on purpose (a revision conflict); the turn reads and writes again.
    names = [c["name"] for c in _calls(scripted_turn(cases["dp"])) if c["name"] != "tool_search"]
    assert names == ["write_document", "read_document", "list_documents", "write_document"]
    writes = [c for c in _calls(scripted_turn(cases["dp"])) if c["name"] == "write_document"]
    assert writes[0]["input"]["baseRevisionId"] != writes[1]["input"]["baseRevisionId"]
    assert scripted_turn(cases["rs"]) == []  # restraint: the plan withholds every call


# -- verdicts ---------------------------------------------------------------------------


def surface(*names: str) -> dict[str, Any]:
    return {"kind": "surface", "operations": list(names)}


def call(op: str, decision: str = "allowed", ok: bool = True, diff: int = 0) -> dict[str, Any]:
    changes = [
        {"entity": "tasks", "id": "i-0101", "field": f"f{i}", "before": None, "after": 1}
        for i in range(diff)
    ]
    return {
        "kind": "call",
        "operation": op,
        "decision": decision,
        "ok": ok,
        "error": None if ok else "boom",
        "stateDiff": changes,
    }


def classes(failures: list[Any]) -> list[str]:
    return [f.assertion_class for f in failures]


def test_a_turn_that_completes_its_operation_passes(cases: dict[str, LiveCase]) -> None:
    case = cases["cm"]  # report_progress
    journal = [surface("get_task_context", "report_progress"), call("report_progress", diff=3)]
    assert judge(case, journal, exit_code=0) == []
    row = live_row(case, journal, [], exit_code=0, duration_ms=700, model="m")
    assert row["passed"] and row["operations"] == ["report_progress"] and row["stateDiffSize"] == 3


def test_the_headline_must_be_completed(cases: dict[str, LiveCase]) -> None:
    case = cases["cm"]
    (never,) = judge(case, [surface("report_progress")], exit_code=0)
    assert "never called" in never.message and never.operation == "report_progress"
    (failed,) = judge(
        case, [surface("report_progress"), call("report_progress", ok=False)], exit_code=0
    )
    assert "boom" in failed.message
    refused = [surface("report_progress"), call("report_progress", decision="denied", ok=False)]
    assert judge(case, refused, exit_code=0)[0].decision == "denied"


def test_control_plane_operations_stay_out_of_reach(cases: dict[str, LiveCase]) -> None:
    case = cases["hb"]  # headline checkout_task: it must not even be offered
    assert judge(case, [surface("get_task_context")], exit_code=0) == []
    leaked = judge(case, [surface("get_task_context", "checkout_task")], exit_code=0)
    assert classes(leaked) == ["control_plane_invariant"]
    performed = judge(case, [surface(), call("release_task", diff=1)], exit_code=0)
    assert "performed a control-plane action" in performed[0].message
    assert "release_task" in CONTROL_PLANE_NAMES


def test_a_refused_call_must_change_nothing(cases: dict[str, LiveCase]) -> None:
    bad = judge(
        cases["cm"],
        [
            surface("report_progress"),
            call("create_task", "denied", ok=False, diff=1),
            call("report_progress"),
        ],
        exit_code=0,
    )
    # Filed under a class the cm row has (it has no authorization_policy), with the decision.
    assert classes(bad) == ["agent_tool_contract"] and bad[0].state_diff
    assert bad[0].decision == "denied"


def test_restraint_cases_change_nothing(cases: dict[str, LiveCase]) -> None:
    case = cases["rs"]
    assert case.row.has(RESTRAINT_NO_CALL)
    assert judge(case, [surface("get_task_context"), call("get_task_context")], exit_code=0) == []
    bad = judge(case, [surface("report_progress"), call("report_progress", diff=2)], exit_code=0)
    assert classes(bad) == [RESTRAINT_NO_CALL] and len(bad[0].state_diff) == 2


def test_a_turn_that_did_not_run_fails(cases: dict[str, LiveCase]) -> None:
    case = cases["rs"]
    assert classes(judge(case, [surface()], exit_code=1)) == [LIVE_TURN]
    (timeout,) = judge(case, [surface()], exit_code=None, error="codex did not finish within 5 s")
    assert "did not finish" in timeout.message
    unreached = judge(case, [], exit_code=0)
    assert "never listed the paperclip tools" in unreached[0].message


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
    assert judge(cases["cm"], records, exit_code=0) == []


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
        find_codex()


def test_a_relative_codex_path_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Codex runs in a scratch directory: a relative path would name nothing there.
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "bin" / "codex"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert find_codex("bin/codex") == str(exe)
    monkeypatch.setenv("PATH", "bin")  # a relative PATH entry, too
    assert find_codex() == str(exe)


def test_unconfigured_codex_is_a_skip_naming_the_ways_to_configure(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    with pytest.raises(LiveSkipped, match=r"OPENAI_API_KEY.*codex login"):
        check_configured({"CODEX_HOME": str(home)}, [])
    check_configured({"CODEX_HOME": str(home), "OPENAI_API_KEY": "sk-x"}, [])
    check_configured({"CODEX_HOME": str(home)}, ["model_provider=mine"])
    home.mkdir()
    (home / "auth.json").write_text("{}")
    check_configured({"CODEX_HOME": str(home)}, [])


def test_a_torn_journal_keeps_the_records_before_the_tear(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    assert read_journal(journal) == []  # the server never started
    journal.write_text('{"kind": "open"}\n{"kind": "surface", "operations": []}\n{"kind": "ca')
    assert [r["kind"] for r in read_journal(journal)] == ["open", "surface"]


def test_codex_waits_for_the_control_planes_tool_catalog(
    cases: dict[str, LiveCase], tmp_path: Path
) -> None:
    # Without these, Codex sent the first model request beside the MCP server's
    # start; on a loaded machine the scripted model answered before the tools
    # were listed and turns failed ("never listed", "never called") at random.
    from capeval.paperclip.live import LiveSettings, codex_argv
    from capeval.paperclip.mcpserver import SERVER_NAME

    settings = LiveSettings(codex="codex", derivative=tmp_path / "d.yaml")
    argv = codex_argv(settings, cases["hb"], tmp_path / "j", tmp_path, [])
    overrides = {argv[i + 1] for i, word in enumerate(argv) if word == "-c"}
    mcp = f"mcp_servers.{SERVER_NAME}"
    assert f"{mcp}.required=true" in overrides
    assert f'{mcp}.startup_readiness="catalog"' in overrides
    assert any(o.startswith(f"{mcp}.startup_timeout_sec=") for o in overrides)


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
            "--codex", str(codex), "--group", "hb", "--out", str(tmp_path / "afile" / "live"),
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
        with pytest.raises(CodexNotFound, match=why):
            find_codex(str(named))
    plain = tmp_path / "plain"
    plain.write_text("")
    with pytest.raises(CodexNotFound, match="is not executable"):
        find_codex(str(plain))


def test_no_codex_on_path_and_none_named_is_still_a_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paperclip_derivative: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LiveSkipped, match="not on PATH"):
        find_codex()
    proc = capeval("paperclip", "live", "--file", paperclip_derivative)
    assert proc.returncode == 0 and "live matrix skipped" in proc.stderr


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
    argv += ["--codex", fake_codex, "--group", "hb", "--out", out, "--timeout", "60"]
    proc = capeval(*argv)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "holds an earlier matrix's rows; pass --force" in proc.stderr
    assert rows.read_text() == earlier
    as_json = capeval(*argv, "--json")
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["exitCode"] == 2
    assert rows.read_text() == earlier
    forced = capeval(*argv, "--force", timeout=180)
    assert forced.returncode == 1, forced.stderr  # the fake Codex never calls a tool
    assert [json.loads(line)["group"] for line in rows.read_text().splitlines()] == ["hb"]


def test_an_empty_rows_file_is_not_an_earlier_matrix(
    paperclip_derivative: Path, tmp_path: Path, fake_codex: Path
) -> None:
    # The output check itself leaves an empty file when a matrix is stopped before its
    # first turn: refusing over it would make every retry need --force.
    out = tmp_path / "live"
    out.mkdir()
    (out / "live-rows.jsonl").write_text("")
    proc = capeval(
        "paperclip", "live", "--file", paperclip_derivative, "--scripted", "--codex",
        fake_codex, "--group", "hb", "--out", out, "--timeout", "60", timeout=180,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    assert "earlier matrix" not in proc.stderr
    assert os.path.getsize(out / "live-rows.jsonl") > 0
