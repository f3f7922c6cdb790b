"""`capeval run` end to end in temp workspaces, with the real scripted agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from capeval.core.row import ROW_FIELDS
from tests.runhelpers import capeval, read_rows, shell, write_case, write_done

pytestmark = pytest.mark.slow


def test_default_run_plays_the_oracle_and_passes(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    write_case(tmp_path, "beta", maxTurns=3)
    out = tmp_path / "r.json"
    proc = capeval(tmp_path, "--jsonl", str(tmp_path / "rows.jsonl"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    rows = read_rows(tmp_path / "rows.jsonl")
    assert [(r["variantId"], r["id"], r["repeat"]) for r in rows] == [
        ("scripted:oracle", "alpha", 0),
        ("scripted:oracle", "beta", 0),
    ]
    for row in rows:
        assert set(ROW_FIELDS) <= set(row), set(ROW_FIELDS) - set(row)
        assert row["passed"] is True and row["error"] is None
        assert row["agent"] == "scripted" and row["agentType"] == "scripted"
        assert row["provider"] == "scripted" and row["model"] == "oracle"
        assert row["turnsUsed"] == 1 and row["behaviors"] is not None
        assert row["runId"] == rows[0]["runId"] and row["skipPermissions"] is True
    assert rows[1]["maxTurns"] == 3 and rows[1]["overBudget"] is False
    doc = json.loads(out.read_text())
    assert doc["version"] == 3 and doc["totals"]["passed"] == 2
    assert "alpha" in proc.stdout and "1/1" in proc.stdout  # the per-cell table


def test_default_jsonl_path_is_under_results_with_a_run_id(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    proc = capeval(tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    path = Path(doc["jsonl"])
    assert path.parent == tmp_path / "evals/capability/results"
    assert path.name == f"{doc['runId']}.jsonl"
    assert len(doc["runId"]) == len("20261130T164500Z-abcdef")
    assert doc["cells"][0]["passes"] == 1 and len(doc["rows"]) == 1


def test_matrix_repeats_failures_and_bait_table(tmp_path: Path) -> None:
    write_case(
        tmp_path,
        "baity",
        tier="bait",
        bait={"metric": "networkCommandCount", "threshold": 0},
        trajectories={"sloppy": [shell("curl --version >/dev/null 2>&1; true")]},
    )
    proc = capeval(
        tmp_path,
        "--matrix",
        "good=scripted:oracle,bad=scripted:sloppy",
        "--repeats",
        "2",
        "--concurrency",
        "2",
        "--jsonl",
        str(tmp_path / "rows.jsonl"),
    )
    assert proc.returncode == 1, proc.stderr  # the sloppy repeats fail the grader
    rows = read_rows(tmp_path / "rows.jsonl")
    assert sorted((r["variantId"], r["repeat"]) for r in rows) == [
        ("bad", 0),
        ("bad", 1),
        ("good", 0),
        ("good", 1),
    ]
    bad = [r for r in rows if r["variantId"] == "bad"]
    assert all(not r["passed"] and "grader exited 1" in r["error"] for r in bad)
    assert all(r["bait"] == {"metric": "networkCommandCount", "threshold": 0} for r in rows)
    table = {
        line.split()[0]: line
        for line in proc.stdout.splitlines()
        if line.startswith(("good", "bad"))
    }
    assert "misbehaving" in table["bad"] and "0/2" in table["bad"]
    assert "ok" in table["good"] and "2/2" in table["good"]


def test_agent_entry_selects_the_trajectory_on_the_same_model(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha", trajectories={"sloppy": [shell("true")]})
    (tmp_path / "capeval.toml").write_text(
        '[agents.old]\ntype = "scripted"\ntrajectory = "sloppy"\n'
    )
    proc = capeval(tmp_path, "--matrix", "old=scripted:oracle@old,new=scripted:oracle", "--json")
    doc = json.loads(proc.stdout)
    by = {r["variantId"]: r for r in doc["rows"]}
    # Same provider/model on both: the provider check passes; only the build differs.
    assert by["new"]["passed"] is True
    assert by["old"]["passed"] is False and "mismatch" not in (by["old"]["error"] or "")
    assert by["old"]["agent"] == "old" and by["old"]["model"] == "oracle"


def test_budget_override_and_fail_closed(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha", trajectories={"oracle": [shell("true"), write_done()]})
    proc = capeval(tmp_path, "--max-turns", "1", "--json")
    row = json.loads(proc.stdout)["rows"][0]
    assert proc.returncode == 1
    assert row["overBudget"] is True and row["maxTurns"] == 1 and row["turnsUsed"] == 2
    assert "over budget: 2 turns > maxTurns 1" in row["error"]


def test_require_behaviors_bound_is_checked_per_repeat(tmp_path: Path) -> None:
    write_case(
        tmp_path,
        "alpha",
        requireBehaviors=[{"metric": "shellCommandCount", "min": 1}],
    )
    proc = capeval(tmp_path, "--json")
    row = json.loads(proc.stdout)["rows"][0]
    assert row["passed"] is False and "shellCommandCount >= 1 does not hold" in row["error"]


def test_dry_run_runs_nothing(tmp_path: Path) -> None:
    x = {"x": [write_done()]}
    write_case(
        tmp_path, "alpha", verify="touch /dev/null; echo ran > ../../graded\n", trajectories=x
    )
    write_case(tmp_path, "beta", trajectories=x)
    proc = capeval(
        tmp_path, "--dry-run", "--matrix", "a=scripted:oracle,b=scripted:x", "--repeats", "3"
    )
    assert proc.returncode == 0, proc.stderr
    assert "plan: 2 variants x 2 cases x 3 repeats = 12 repeats (12 to run" in proc.stdout
    assert not (tmp_path / "evals/capability/results").exists()
    proc = capeval(tmp_path, "--dry-run", "--json")
    plan = json.loads(proc.stdout)
    assert plan["total"] == 2 and len(plan["todo"]) == 2
    assert not (tmp_path / "evals/capability/results").exists()


def test_provider_and_model_flags_beat_the_configured_matrix(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha", trajectories={m: [write_done()] for m in ("sloppy", "dev")})
    (tmp_path / "capeval.toml").write_text('matrix = ["scripted:oracle", "scripted:sloppy"]\n')

    def variants(*args: str) -> list[str]:
        proc = capeval(tmp_path, "--dry-run", "--json", *args)
        assert proc.returncode == 0, proc.stderr
        return [v["id"] for v in json.loads(proc.stdout)["variants"]]

    assert variants() == ["scripted:oracle", "scripted:sloppy"]
    # Both flags: the one cell asked for, not the configured matrix.
    assert variants("--provider", "scripted", "--model", "dev") == ["scripted:dev"]
    # One flag that no cell takes is an error, never a run of something else.
    for args in (("--provider", "anthropic"), ("--model", "x", "--matrix", "a:b")):
        proc = capeval(tmp_path, "--dry-run", *args)
        assert proc.returncode == 2
        assert f"{args[0]} {args[1]} is used by no cell" in proc.stderr
        if "--matrix" not in args:  # names the file and key the cells come from
            assert "the matrix (capeval.toml: matrix)" in proc.stderr
    # A flag that fills the side bare cells leave out still works.
    assert variants("--provider", "scripted", "--matrix", "oracle,sloppy") == [
        "scripted:oracle",
        "scripted:sloppy",
    ]


def test_secrets_never_reach_a_row(tmp_path: Path) -> None:
    secret = "sk-test-0123456789"
    write_case(
        tmp_path,
        "leaky",
        trajectories={"oracle": [write_done(f"my key is {secret}")]},
        # A grader never inherits a secret (docs/isolation.md#environment): this
        # one prints it from its own text, and the row must not show it either.
        verify=f'echo "grader saw {secret}"; test -z "${{MY_API_KEY:-}}" && exit 1\n',
    )
    proc = capeval(tmp_path, "--jsonl", str(tmp_path / "rows.jsonl"), env={"MY_API_KEY": secret})
    assert proc.returncode == 1
    text = (tmp_path / "rows.jsonl").read_text()
    assert secret not in text
    row = read_rows(tmp_path / "rows.jsonl")[0]
    assert "[REDACTED]" in row["textPreview"] and "grader saw [REDACTED]" in row["error"]


def test_a_secret_that_is_also_a_word_leaves_the_row_identity_whole(tmp_path: Path) -> None:
    # OPENAI_API_KEY=ollama is a common local set-up: the key's value is also the
    # provider's name. Redacting it in resultKey broke cell matching and resume.
    write_case(tmp_path, "oracle-case", trajectories={"oracle": [write_done("oracle says hi")]})
    rows_path = tmp_path / "rows.jsonl"
    env = {"MY_API_KEY": "oracle"}
    proc = capeval(tmp_path, "--jsonl", str(rows_path), env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    row = read_rows(rows_path)[0]
    assert row["resultKey"] == "scripted:oracle::oracle-case"
    assert (row["id"], row["variantId"], row["model"]) == (
        "oracle-case",
        "scripted:oracle",
        "oracle",
    )
    assert row["requestedModel"] == "oracle"
    assert row["textPreview"] == "[REDACTED] says hi"  # agent text is still redacted
    again = capeval(tmp_path, "--resume", str(rows_path), env=env)
    assert again.returncode == 0, again.stderr + again.stdout
    assert len(read_rows(rows_path)) == 1  # the finished repeat is not run again


def test_http_fixture_url_and_token_reach_agent_and_grader(tmp_path: Path) -> None:
    fetch = {
        "text": "",
        "toolCalls": [
            {"id": "f", "name": "web_fetch", "arguments": {"url": "{{HTTP_URL}}/token.txt"}},
        ],
    }
    save = {
        "text": "saved",
        "toolCalls": [
            {
                "name": "write_file",
                "arguments": {"path": "token.txt", "content": "{{result:f|re:([0-9a-f]{32})}}"},
            },
        ],
    }
    write_case(
        tmp_path,
        "web",
        httpFixture=True,
        prompt="fetch {{HTTP_URL}} and save the token",
        trajectories={"oracle": [fetch, save]},
        verify='test "$(cat token.txt)" = "$EVAL_HTTP_TOKEN" && case "$EVAL_HTTP_URL" in http://127.0.0.1:*) ;; *) exit 3;; esac\n',
    )
    proc = capeval(tmp_path, "--json", "--repeats", "2")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0, [r["error"] for r in doc["rows"]]
    assert all(r["behaviors"]["webFetchToolCallCount"] == 1 for r in doc["rows"])


def test_bad_input_exits_2_with_a_clear_message(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    proc = capeval(tmp_path, "--matrix", "oracle")
    assert proc.returncode == 2
    assert "matrix cell 'oracle' has no provider" in proc.stderr
    proc = capeval(tmp_path, "--case", "nope")
    assert proc.returncode == 2 and 'no case "nope"' in proc.stderr
    proc = capeval(tmp_path, "--agent", "ghost")
    assert proc.returncode == 2 and "unknown agent 'ghost'" in proc.stderr


def test_run_path_imports_no_heavy_library(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    code = (
        "import sys\n"
        "from capeval.cli import main\n"
        f"try:\n    main(['run', '--root', {str(tmp_path)!r}, '-q', '--out', {str(tmp_path / 'r.json')!r}])\n"
        "except SystemExit as e:\n    assert e.code == 0, e.code\n"
        "print([m for m in ('polars', 'duckdb', 'scipy', 'matplotlib') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_an_existing_stream_is_never_appended_to_without_resume(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    stream = tmp_path / "rows.jsonl"
    stream.write_text('{"id": "x"}\n')
    proc = capeval(tmp_path, "--jsonl", str(stream))
    assert proc.returncode == 2 and "--resume" in proc.stderr
    assert stream.read_text() == '{"id": "x"}\n'


def test_baseline_gates_the_run_after_it_ends(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    base = tmp_path / "base.json"
    assert capeval(tmp_path, "--out", str(base), "-q").returncode == 0
    proc = capeval(tmp_path, "--baseline", str(base), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["gate"]["clean"] is True and doc["exitCode"] == 0
    assert proc.stderr.strip()  # the gate's human text goes to stderr beside --json


def test_a_scripted_cell_without_its_trajectory_is_refused_before_any_agent(
    tmp_path: Path,
) -> None:
    # Every repeat would fail and the gate would read a regression.
    write_case(tmp_path, "alpha")
    proc = capeval(tmp_path, "--matrix", "scripted:sloppy", "--jsonl", str(tmp_path / "r.jsonl"))
    assert proc.returncode == 2
    assert (
        "no trajectory to play: evals/capability/cases/alpha/trajectories/sloppy.json "
        "(case 'alpha', variant scripted:sloppy)" in proc.stderr
    )
    assert not (tmp_path / "r.jsonl").exists()


def test_an_at_sign_in_a_model_name_gets_a_hint_not_just_an_unknown_agent(
    tmp_path: Path,
) -> None:
    write_case(tmp_path, "alpha")
    proc = capeval(tmp_path, "--dry-run", "--matrix", "vertex:claude-sonnet-4@20250514")
    assert proc.returncode == 2
    assert "unknown agent '20250514'" in proc.stderr
    assert "(vertex:claude-sonnet-4@20250514@<agent>)" in proc.stderr


def test_resume_on_a_v3_file_says_which_file_it_needs(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    out = tmp_path / "r.json"
    assert (
        capeval(tmp_path, "--jsonl", str(tmp_path / "r.jsonl"), "--out", str(out)).returncode == 0
    )
    proc = capeval(tmp_path, "--resume", str(out))
    assert proc.returncode == 2
    assert "this is a v3 results file (written by --out)" in proc.stderr
    assert "Repair or delete" not in proc.stderr


@pytest.mark.parametrize(
    ("table", "messages"),
    [
        # Caught with the configuration (as validate sees it), naming file and key.
        (
            'command = "agent \'unterminated {prompt}"',
            ("capeval.toml: agents.mine.command:", "does not split"),
        ),
        (
            'command = "agent {prompt}"\nhook = "../../evil.sh"',
            ("capeval.toml: agents.mine.hook:", "must be relative to the workdir"),
        ),
    ],
)
def test_a_broken_command_agent_is_refused_before_any_agent(
    tmp_path: Path, table: str, messages: tuple[str, str]
) -> None:
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text(f'[agents.mine]\ntype = "command"\n{table}\n')
    proc = capeval(tmp_path, "--matrix", "p:m@mine", "--jsonl", str(tmp_path / "r.jsonl"))
    assert proc.returncode == 2, proc.stdout + proc.stderr  # was: a failed row per repeat
    assert all(message in proc.stderr for message in messages), proc.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_unwritable_outputs_are_refused_before_any_agent(tmp_path: Path) -> None:
    # They used to surface as a traceback (exit 1, read as "a repeat failed"):
    # --jsonl when the writer opened it, --out only after the whole run.
    write_case(tmp_path, "alpha")
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder\n")
    stream = str(tmp_path / "r.jsonl")
    for args, flag in [
        (["--jsonl", str(blocker / "r.jsonl")], "--jsonl"),
        (["--jsonl", stream, "--out", str(blocker / "r.json")], "--out"),
        (["--jsonl", stream, "--artifacts", str(blocker / "evidence")], "--artifacts"),
    ]:
        proc = capeval(tmp_path, *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert proc.stderr.startswith(f"capeval run: {flag} ") and "writable" in proc.stderr
        assert not (tmp_path / "r.jsonl").exists() and not list(tmp_path.glob("*.artifacts"))
    assert blocker.read_text() == "a file, not a folder\n"


def test_a_results_folder_that_cannot_be_created_names_the_config_key(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    (tmp_path / "blocker").write_text("")
    (tmp_path / "capeval.toml").write_text('results = "blocker/results"\n')
    proc = capeval(tmp_path, "-q")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "capeval.toml: results:" in proc.stderr and "--jsonl" in proc.stderr


def test_a_matrix_from_the_config_names_its_file_and_field(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    (tmp_path / "capeval.toml").write_text('matrix = ["oracle"]\n')
    proc = capeval(tmp_path, "--dry-run")
    assert proc.returncode == 2
    assert "capeval.toml: matrix: matrix cell 'oracle' has no provider" in proc.stderr

    (tmp_path / "capeval.toml").unlink()
    (tmp_path / "pyproject.toml").write_text('[tool.capeval]\nmatrix = ["scripted:oracle@ghost"]\n')
    proc = capeval(tmp_path, "--dry-run")
    assert proc.returncode == 2
    assert (
        "pyproject.toml: tool.capeval.matrix: variant scripted:oracle: unknown agent 'ghost'"
        in proc.stderr
    )
    # The fix names the file that holds the configuration, not one that does not exist.
    assert "add an [tool.capeval.agents.ghost] table to pyproject.toml" in proc.stderr


def test_a_row_stream_on_a_full_disk_stops_the_run_cleanly(tmp_path: Path) -> None:
    # RLIMIT_FSIZE makes the kernel take part of a row and refuse the rest,
    # like a full disk. The run must stop with exit 2 and a resume hint, and
    # leave a stream whose rows all read back (no torn line for later rows to
    # follow), so that --resume finishes it.
    import resource
    import signal

    write_case(tmp_path, "alpha")
    stream = tmp_path / "rows.jsonl"
    limit = 3000  # about one and a half rows; every other file the run writes is smaller

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(
        [sys.executable, "-m", "capeval", "run", "--root", str(tmp_path), "-q",
         "--repeats", "3", "--no-artifacts", "--jsonl", str(stream)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, preexec_fn=small_disk,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "could not append a row" in proc.stderr
    assert f"capeval run --resume {stream}" in proc.stderr
    from capeval.results.jsonl import read_jsonl

    rows, warnings = read_jsonl(stream)
    assert warnings == [] and len(rows) < 3
    resumed = capeval(tmp_path, "--resume", str(stream), "-q")
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(r["repeat"] for r in read_rows(stream)) == [0, 1, 2]


@pytest.mark.parametrize("stage", ["plan_run", "execute"])
def test_ctrl_c_before_the_runs_handler_is_in_place_still_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    # Planning (cases, git, config) and start-up run before the run's own
    # SIGINT handler: click turned Ctrl-C there into "Aborted!" and exit 1,
    # the code for "some repeat failed".
    from click.testing import CliRunner

    import capeval.runner.plan
    import capeval.runner.run
    from capeval.cli import main

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    write_case(tmp_path, "alpha")
    module = capeval.runner.plan if stage == "plan_run" else capeval.runner.run
    monkeypatch.setattr(module, stage, interrupted)
    result = CliRunner().invoke(main, ["run", "--root", str(tmp_path), "-q"])
    assert result.exit_code == 130, result.output
    assert "interrupted by SIGINT: no repeat was recorded" in result.output
