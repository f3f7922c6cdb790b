"""Each repeat's evidence kept beside the stream: what is copied, redacted, capped, replaced.

Repeats run for real (scripted agent subprocess, git workdir, bash grader);
the CLI tests go through `capeval run` in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from capeval.agents.claude_code import ClaudeCodeAdapter
from capeval.agents.scripted import ScriptedAdapter
from capeval.core.agentconfig import AgentConfig
from capeval.core.isolation import Isolation
from capeval.core.matrix import Variant
from capeval.core.redact import REDACTED
from capeval.runner.artifacts import (
    CLAIM_FILE,
    CUT_FILE,
    SUMMARY_FILE,
    VERIFY_LOG,
    ArtifactBudget,
    capped,
    copy_capped,
    default_artifacts_dir,
    path_component,
    redact_bytes,
    repeat_dir,
    run_budget,
    safe_cut,
    save_repeat_artifacts,
    verify_log,
)
from capeval.runner.repeat import RepeatJob, RepeatSettings, run_repeat
from capeval.workspace import load_cases
from tests.runhelpers import (
    REPO,
    capeval,
    interrupt_when,
    read_rows,
    shell,
    start_capeval,
    write_case,
    write_done,
)

SECRET = "sk-test-9f8e7d6c5b4a"
# 24 characters: the cut tests place it against a cap of 100 bytes.
KEY = "sk-test-9f8e7d6c5b4aZQ31"
R = REDACTED.encode()
FAILING_GRADER = 'echo "grader looked at done.txt"\necho "expected ok, found nothing" >&2\nexit 3\n'


def _repeat(
    tmp_path: Path,
    *,
    artifacts: bool = True,
    variant: str = "scripted:oracle",
    isolation: Isolation | None = None,
    **case_fields: object,
) -> tuple[dict, Path]:
    """Run case `alpha`'s oracle once in-process; (row, the stream's folder)."""
    write_case(tmp_path, "alpha", **case_fields)
    (case,) = load_cases(tmp_path)
    rows_dir = tmp_path / "results"
    settings = RepeatSettings(
        root=tmp_path,
        artifacts_dir=default_artifacts_dir(rows_dir / "run.jsonl") if artifacts else None,
        rows_dir=rows_dir,
    )
    agent = AgentConfig(name="scripted", type="scripted")
    job = RepeatJob(
        case, Variant(variant, "scripted", "oracle"), 0, agent, isolation=isolation or Isolation()
    )
    return run_repeat(job, ScriptedAdapter(agent), settings), rows_dir


def test_scripted_repeat_keeps_summary_capture_and_verify_log(tmp_path: Path) -> None:
    row, rows_dir = _repeat(tmp_path)
    assert row["passed"] is True
    assert row["artifacts"] == "run.artifacts/scripted%3Aoracle/alpha/0"
    folder = rows_dir / row["artifacts"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "scripted-prompt.txt",
        "scripted-summary.json",
        SUMMARY_FILE,
        VERIFY_LOG,
    ]
    summary = json.loads((folder / SUMMARY_FILE).read_text())
    assert summary["turnsUsed"] == row["turnsUsed"] == 1
    assert summary["turns"][0]["toolCalls"][0]["name"] == "write_file"
    assert (folder / "scripted-prompt.txt").read_text() == "write ok to done.txt"
    log = (folder / VERIFY_LOG).read_text()
    assert log.startswith("$ bash verify.sh\n# exit code 0 after ")
    # Nothing of the machine's temp paths leaks into the header.
    assert str(tmp_path) not in log


def test_failing_graders_output_is_in_verify_log(tmp_path: Path) -> None:
    row, rows_dir = _repeat(tmp_path, verify=FAILING_GRADER)
    assert row["passed"] is False and row["verifyExitCode"] == 3
    log = (rows_dir / row["artifacts"] / VERIFY_LOG).read_text()
    assert "# exit code 3 after " in log
    stdout, stderr = log.split("--- stderr ---")
    assert "grader looked at done.txt" in stdout
    assert "expected ok, found nothing" in stderr


def test_no_artifacts_dir_keeps_nothing_and_row_says_null(tmp_path: Path) -> None:
    row, rows_dir = _repeat(tmp_path, artifacts=False)
    assert row["artifacts"] is None and row["passed"] is True
    assert not rows_dir.exists()


def test_secret_in_agent_output_is_redacted_in_every_artifact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Passed to the agent by name (env_pass); the grader never gets a secret-named
    # variable, but prints what the agent left in the workdir.
    monkeypatch.setenv("CAPEVAL_TEST_API_KEY", SECRET)
    leak = shell('echo "key=$CAPEVAL_TEST_API_KEY" | tee leak.txt; echo ok > done.txt')
    grader = 'echo "grader saw $(cat leak.txt)"\ntest "$(cat done.txt)" = ok\n'
    row, rows_dir = _repeat(
        tmp_path,
        trajectories={"oracle": [leak]},
        verify=grader,
        isolation=Isolation(env_pass=("CAPEVAL_TEST_API_KEY",)),
    )
    assert row["passed"] is True
    folder = rows_dir / row["artifacts"]
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert {"scripted-summary.json", SUMMARY_FILE, VERIFY_LOG} <= set(files)
    for name, data in files.items():
        assert SECRET.encode() not in data, name
    assert (
        f"key={REDACTED}" in json.loads(files[SUMMARY_FILE])["turns"][0]["toolCalls"][0]["result"]
    )
    assert f"key={REDACTED}".encode() in files["scripted-summary.json"]
    assert f"grader saw key={REDACTED}".encode() in files[VERIFY_LOG]


def test_artifacts_that_cannot_be_saved_cost_the_evidence_not_the_row(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    (case,) = load_cases(tmp_path)
    blocker = tmp_path / "results"
    blocker.write_text("a file where the artifacts folder should go\n")
    settings = RepeatSettings(root=tmp_path, artifacts_dir=blocker / "run.artifacts")
    agent = AgentConfig(name="scripted", type="scripted")
    job = RepeatJob(case, Variant("v", "scripted", "oracle"), 0, agent)
    row = run_repeat(job, ScriptedAdapter(agent), settings)
    assert row["passed"] is True and row["artifacts"] is None
    assert "artifacts not saved to run.artifacts/v/alpha/0: " in row["error"]
    assert str(tmp_path) not in row["error"]


# -- the copy itself --------------------------------------------------------


def test_cap_truncates_with_a_marker(tmp_path: Path) -> None:
    src = tmp_path / "big.log"
    src.write_bytes(b"x" * 5000)
    truncated = copy_capped(src, tmp_path / "copy.log", [], max_bytes=1000)
    data = (tmp_path / "copy.log").read_bytes()
    assert truncated is True
    assert data.startswith(b"x" * 1000) and not data.startswith(b"x" * 1001)
    assert data.endswith(b"[capeval: truncated, kept the first 1000 of 5000 bytes]\n")
    small = tmp_path / "small.log"
    small.write_bytes(b"y" * 1000)
    assert copy_capped(small, tmp_path / "small-copy.log", [], max_bytes=1000) is False
    assert (tmp_path / "small-copy.log").read_bytes() == b"y" * 1000


def test_cap_never_keeps_part_of_a_secret_cut_in_two(tmp_path: Path) -> None:
    data = b"a" * 95 + SECRET.encode() + b"b" * 100
    assert safe_cut(data, 100, [SECRET]) == 95
    src = tmp_path / "log"
    src.write_bytes(data)
    copy_capped(src, tmp_path / "copy", [SECRET], max_bytes=100)
    kept = (tmp_path / "copy").read_bytes()
    assert kept.startswith(b"a" * 95 + b"\n[capeval: truncated, kept the first 95 of 215 bytes]")
    assert SECRET[:5].encode() not in kept


def test_cut_ignores_a_secret_ending_at_it_and_moves_past_chained_ones() -> None:
    data = b"a" * 90 + KEY.encode()[:10] + b"b" * 50
    assert safe_cut(data, 100, [KEY[:10]]) == 100
    s1, s2 = "PQRSTUVW", "UVWxyz12"  # overlap in "PQRSTUVWxyz12"
    data = b"." * 10 + b"PQRSTUVWxyz12" + b"." * 20
    for order in ([s1, s2], [s2, s1], ["unrelated-one", s2, s1]):
        assert safe_cut(data, 20, order) == 10


def test_a_multibyte_key_straddling_the_cap_is_dropped_whole(tmp_path: Path) -> None:
    key = "pässwörd-€€€€-ключ"
    src = tmp_path / "log"
    src.write_bytes(b"a" * 95 + key.encode() + b"b" * 200)
    copy_capped(src, tmp_path / "copy", [key], max_bytes=100)
    kept = (tmp_path / "copy").read_bytes()
    assert kept.startswith(b"a" * 95 + b"\n[capeval: truncated, kept the first 95 of ")


def test_a_key_ending_exactly_at_the_cap_is_redacted(tmp_path: Path) -> None:
    src = tmp_path / "log"
    src.write_bytes(b"a" * 76 + KEY.encode() + b"b" * 100)
    copy_capped(src, tmp_path / "copy", [KEY], max_bytes=100)
    assert (tmp_path / "copy").read_bytes().startswith(b"a" * 76 + R + b"\n[capeval: truncated")


def test_a_truncated_file_is_still_redacted(tmp_path: Path) -> None:
    src = tmp_path / "log"
    src.write_bytes(b"key " + KEY.upper().encode() + b"\n" + b"z" * 5000)
    assert copy_capped(src, tmp_path / "copy", [KEY], max_bytes=1000) is True
    kept = (tmp_path / "copy").read_bytes()
    assert kept.startswith(b"key " + R + b"\n") and KEY.upper().encode() not in kept


def test_verify_log_cut_at_a_key_in_another_case_keeps_none_of_it(tmp_path: Path) -> None:
    verify = b"a" * 95 + KEY.upper().encode() + b"b" * 100
    dest = save_repeat_artifacts(tmp_path / "0", verify=verify, secrets=[KEY], max_bytes=100)
    kept = (dest / VERIFY_LOG).read_bytes()
    assert kept.startswith(b"a" * 95 + b"\n[capeval: truncated, kept the first 95 of ")


def test_undecodable_bytes_pass_through_unchanged() -> None:
    data = b"\xff\xfe " + KEY.encode() + b" \x80\xc3"
    assert redact_bytes(data, [KEY]) == b"\xff\xfe " + R + b" \x80\xc3"


def test_a_file_shorter_than_it_said_reports_what_was_kept() -> None:
    assert (
        capped(b"abc", 10, [], 100) == b"abc\n[capeval: truncated, kept the first 3 of 10 bytes]\n"
    )


def test_a_cap_one_byte_into_a_secret_keeps_none_of_it() -> None:
    from capeval.runner.artifacts import capped

    data = b"abcd" + b"sk-secret-9" + b"tail"
    kept = capped(data, len(data), ["sk-secret-9"], 5)
    assert kept.startswith(b"abcd\n[capeval: truncated, kept the first 4 ")


def test_verify_log_and_summary_are_capped_too(tmp_path: Path) -> None:
    dest = tmp_path / "a" / "0"
    summary = {"turns": [{"text": "t" * 4000}]}
    save_repeat_artifacts(dest, verify=b"v" * 4000, summary=summary, max_bytes=500)
    for name in (VERIFY_LOG, SUMMARY_FILE):
        data = (dest / name).read_bytes()
        assert len(data) < 600 and b"[capeval: truncated, kept the first 500 of " in data


def test_only_top_level_files_of_the_capture_are_copied(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    (capture / "claude-config").mkdir(parents=True)
    (capture / "claude-config" / ".credentials.json").write_text('{"token": "login"}')
    (capture / "claude-code-stream.jsonl").write_text('{"type": "system"}\n')
    outside = tmp_path / "outside.txt"
    outside.write_text("not the agent's")
    (capture / "link.txt").symlink_to(outside)
    (capture / VERIFY_LOG).write_text("the agent's own file of that name")
    dest = save_repeat_artifacts(tmp_path / "out" / "0", capture_dir=capture, verify=b"grader\n")
    assert sorted(p.name for p in dest.iterdir()) == [
        "capture-verify.log",
        "claude-code-stream.jsonl",
        VERIFY_LOG,
    ]
    assert (dest / VERIFY_LOG).read_bytes() == b"grader\n"


def test_a_failed_copy_leaves_the_previous_folder_and_no_staging(tmp_path: Path) -> None:
    dest = save_repeat_artifacts(tmp_path / "v" / "0", verify=b"first\n")
    with pytest.raises(TypeError):
        save_repeat_artifacts(dest, verify=b"second\n", summary={"bad": object()})
    assert (dest / VERIFY_LOG).read_bytes() == b"first\n"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["0"]


def test_a_rerun_replaces_the_folder_and_clears_a_killed_copy(tmp_path: Path) -> None:
    dest = save_repeat_artifacts(tmp_path / "v" / "0", verify=b"first\n", summary={"n": 1})
    killed = tmp_path / "v" / ".0.tmp-deadbeef"  # staging of a run killed mid-copy
    killed.mkdir()
    (killed / VERIFY_LOG).write_text("half")
    save_repeat_artifacts(dest, verify=b"second\n")
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == ["0"]
    assert sorted(p.name for p in dest.iterdir()) == [VERIFY_LOG]
    assert (dest / VERIFY_LOG).read_bytes() == b"second\n"


def test_path_components_are_safe_distinct_and_reversible() -> None:
    ids = ["scripted:oracle", "xai/thegreataxios:grok-4.5", "a_b", "a:b", "a/b", "..", ".hidden"]
    names = [path_component(i) for i in ids]
    assert len(set(names)) == len(ids)
    for original, name in zip(ids, names, strict=True):
        assert "/" not in name and ":" not in name and not name.startswith(".")
        assert unquote(name) == original
    assert repeat_dir(Path("r"), "a/b", "c", 2) == Path("r/a%2Fb/c/2")


def test_a_streamed_key_split_across_lines_is_redacted_in_the_capture(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    capture.mkdir()
    chunks = ["my key is " + KEY[:11], KEY[11:] + ", done"]
    lines = [json.dumps({"type": "message", "content": c, "delta": True}) for c in chunks]
    (capture / "gemini-stream.jsonl").write_text("\n".join(lines) + "\n")
    dest = save_repeat_artifacts(tmp_path / "out", capture_dir=capture, secrets=[KEY])
    kept = (dest / "gemini-stream.jsonl").read_text()
    assert KEY[:8] not in kept and KEY[-8:] not in kept and kept.count(REDACTED) == 2


def test_a_secret_in_a_capture_file_name_is_redacted(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    capture.mkdir()
    (capture / f"log-{KEY}.txt").write_text("x")
    dest = save_repeat_artifacts(tmp_path / "0", capture_dir=capture, secrets=[KEY])
    assert [p.name for p in dest.iterdir()] == [f"log-{REDACTED}.txt"]


def test_a_secret_deep_in_summary_tool_arguments_is_redacted(tmp_path: Path) -> None:
    quoted = 'pw"with\\quote'
    call = {
        "name": "run_shell",
        "arguments": {"command": f"curl -H 'x-api-key: {KEY}'", "env": {KEY: [KEY]}},
        "raw": json.dumps({"cmd": f"login {quoted}"}),
    }
    summary = {"turns": [{"toolCalls": [call]}]}
    dest = save_repeat_artifacts(tmp_path / "0", summary=summary, secrets=[KEY, quoted])
    text = (dest / SUMMARY_FILE).read_text()
    assert "9f8e7d6c" not in text and "with" not in text
    assert json.loads(text)["turns"][0]["toolCalls"][0]["arguments"]["env"] == {
        REDACTED: [REDACTED]
    }


def test_capture_files_are_capped_at_the_given_size(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    capture.mkdir()
    (capture / "big.log").write_bytes(b"x" * 5000)
    dest = save_repeat_artifacts(tmp_path / "0", capture_dir=capture, max_bytes=100)
    assert (dest / "big.log").read_bytes() == (
        b"x" * 100 + b"\n[capeval: truncated, kept the first 100 of 5000 bytes]\n"
    )


def test_a_missing_capture_folder_still_saves_the_rest(tmp_path: Path) -> None:
    dest = save_repeat_artifacts(tmp_path / "0", capture_dir=tmp_path / "gone", verify=b"v\n")
    assert [p.name for p in dest.iterdir()] == [VERIFY_LOG]


def test_a_file_turned_symlink_after_the_listing_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "login.json"
    outside.write_text('{"token": "the user login"}')
    capture = tmp_path / "capture"
    capture.mkdir()
    (capture / "ok.log").write_text("fine")
    (capture / "swapped.log").symlink_to(outside)
    with pytest.raises(OSError):
        copy_capped(capture / "swapped.log", tmp_path / "copy", [], max_bytes=100)
    # As if the file had been swapped for the link between listing and copying.
    monkeypatch.setattr(
        "capeval.runner.artifacts.capture_files", lambda d: sorted(Path(d).iterdir())
    )
    dest = save_repeat_artifacts(tmp_path / "0", capture_dir=capture)
    assert [p.name for p in dest.iterdir()] == ["ok.log"]


def test_a_rerun_clears_a_retired_folder_left_by_a_kill(tmp_path: Path) -> None:
    dest = save_repeat_artifacts(tmp_path / "v" / "0", verify=b"first\n")
    retired = tmp_path / "v" / ".0.old-deadbeef"
    retired.mkdir()
    (retired / VERIFY_LOG).write_text("old")
    save_repeat_artifacts(dest, verify=b"second\n")
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == ["0"]


def test_a_copy_killed_before_the_rename_leaves_only_a_hidden_folder(tmp_path: Path) -> None:
    dest = tmp_path / "v" / "0"
    killed = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "import capeval.runner.artifacts as a\n"
        "a._publish = lambda staging, dest: os._exit(9)\n"
        "a.save_repeat_artifacts(Path(sys.argv[1]), verify=b'half')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])}
    proc = subprocess.run([sys.executable, "-c", killed, str(dest)], env=env, check=False)
    assert proc.returncode == 9
    left = [p.name for p in dest.parent.iterdir()]
    assert len(left) == 1 and left[0].startswith(".0."), left
    save_repeat_artifacts(dest, verify=b"whole\n")
    assert [p.name for p in dest.parent.iterdir()] == ["0"]


def test_verify_log_header() -> None:
    log = verify_log(["bash", "verify.sh"], 3, 12.6, b"out", b"err")
    assert log == (
        b"$ bash verify.sh\n# exit code 3 after 13 ms\n--- stdout ---\nout\n--- stderr ---\nerr\n"
    )
    assert verify_log(["bash"], None, None, b"", b"").startswith(b"$ bash\n# exit code None\n")


def test_an_empty_id_still_names_a_folder() -> None:
    assert path_component("") == "_"


# -- through the command --------------------------------------------------------


@pytest.mark.slow
def test_cli_default_folder_no_artifacts_and_custom_folder(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    proc = capeval(tmp_path, "--jsonl", "res/a.jsonl", "-q")
    assert proc.returncode == 0, proc.stderr
    (row,) = read_rows(tmp_path / "res/a.jsonl")
    assert row["artifacts"] == "a.artifacts/scripted%3Aoracle/alpha/0"
    assert (tmp_path / "res" / row["artifacts"] / SUMMARY_FILE).is_file()

    proc = capeval(tmp_path, "--jsonl", "res/b.jsonl", "--no-artifacts", "-q")
    assert proc.returncode == 0, proc.stderr
    (row,) = read_rows(tmp_path / "res/b.jsonl")
    assert row["artifacts"] is None
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == [
        "a.artifacts",
        "a.jsonl",
        "a.jsonl.plan.json",
        "b.jsonl",
        "b.jsonl.plan.json",
    ]

    proc = capeval(tmp_path, "--jsonl", "res/c.jsonl", "--artifacts", "evidence", "-q")
    assert proc.returncode == 0, proc.stderr
    (row,) = read_rows(tmp_path / "res/c.jsonl")
    assert row["artifacts"] == "../evidence/scripted%3Aoracle/alpha/0"
    assert (tmp_path / "res" / row["artifacts"] / VERIFY_LOG).is_file()

    proc = capeval(tmp_path, "--artifacts", "x", "--no-artifacts", "--dry-run")
    assert proc.returncode == 2 and "--artifacts and --no-artifacts" in proc.stderr


@pytest.mark.slow
def test_cli_resume_keeps_the_choice_and_replaces_rerun_repeats(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha", trajectories={"oracle": [write_done("first")]})
    stream = tmp_path / "res/run.jsonl"
    proc = capeval(tmp_path, "--jsonl", str(stream), "--artifacts", "evidence", "-q")
    assert proc.returncode == 0, proc.stderr
    folder = tmp_path / "evidence/scripted%3Aoracle/alpha/0"
    (folder / "left-from-before.txt").write_text("stale")
    # The row is lost (as if the run died before writing it): resume re-runs the repeat.
    stream.write_text("")
    write_case(tmp_path, "alpha", trajectories={"oracle": [write_done("second")]})
    proc = capeval(tmp_path, "--resume", str(stream), "-q")
    assert proc.returncode == 0, proc.stderr
    (row,) = read_rows(stream)
    assert (stream.parent / row["artifacts"]).resolve() == folder.resolve()
    assert not (folder / "left-from-before.txt").exists()
    summary = json.loads((folder / SUMMARY_FILE).read_text())
    assert summary["turns"][0]["assistantTurn"]["content"][0]["text"] == "second"
    assert not (stream.parent / "run.artifacts").exists()


@pytest.mark.slow
def test_plan_json_reports_the_artifacts_folder(tmp_path: Path) -> None:
    write_case(tmp_path, "alpha")
    proc = capeval(tmp_path, "--jsonl", "res/a.jsonl", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert (tmp_path / plan["artifacts"]).resolve() == (tmp_path / "res/a.artifacts").resolve()
    proc = capeval(tmp_path, "--jsonl", "res/a.jsonl", "--dry-run", "--json", "--no-artifacts")
    assert json.loads(proc.stdout)["artifacts"] is None
    assert not (tmp_path / "res").exists()  # a dry run writes nothing


@pytest.mark.slow
def test_interrupted_repeat_leaves_no_artifacts(tmp_path: Path) -> None:
    # Ordered by events alone: one repeat at a time, so done-first's row and
    # artifacts are written before hang's agent starts; hang's agent then
    # blocks on a FIFO nobody writes, so only the Ctrl-C can end its repeat.
    started, never = tmp_path / "started", tmp_path / "never-written"
    os.mkfifo(never)
    write_case(tmp_path, "done-first")
    write_case(
        tmp_path, "hang", trajectories={"oracle": [shell(f"touch {started}; read _ < {never}")]}
    )
    stream = tmp_path / "res/run.jsonl"
    proc = start_capeval(tmp_path, "--jsonl", str(stream))
    err = interrupt_when(proc, started.exists)
    assert proc.returncode == 130, err
    (row,) = read_rows(stream)
    assert row["id"] == "done-first" and (stream.parent / row["artifacts"]).is_dir()
    variant = tmp_path / "res/run.artifacts/scripted%3Aoracle"
    assert sorted(p.name for p in variant.iterdir()) == ["done-first", "hang"]
    # No folder for the interrupted repeat: only the run's claim on its cell, kept for --resume.
    assert [p.name for p in (variant / "hang").iterdir()] == [CLAIM_FILE]


# A stand-in for the `claude` binary (a real subprocess): the real CLI needs a
# login and the network. It prints a short stream-json run that echoes a
# secret, logs to stderr and leaves a login file in its isolated config home.
FAKE_CLAUDE = f"""#!{sys.executable}
import json, os, sys
key = os.environ["CAPEVAL_TEST_API_KEY"]
with open(os.path.join(os.environ["CLAUDE_CONFIG_DIR"], ".credentials.json"), "w") as fh:
    fh.write(json.dumps({{"token": key}}))
open("done.txt", "w").write("ok")
events = [
    {{"type": "system", "subtype": "init", "session_id": "s1", "model": "claude-x"}},
    {{"type": "assistant", "session_id": "s1", "message": {{"id": "m1", "model": "claude-x",
      "content": [{{"type": "text", "text": "key=" + key}}]}}}},
    {{"type": "result", "subtype": "success", "is_error": False, "session_id": "s1",
      "result": "done"}},
]
for event in events:
    print(json.dumps(event))
print("claude stderr: using " + key, file=sys.stderr)
"""


def test_cli_agent_stream_and_stderr_are_kept_its_config_home_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPEVAL_TEST_API_KEY", SECRET)
    binary = tmp_path / "bin" / "claude"
    binary.parent.mkdir()
    binary.write_text(FAKE_CLAUDE)
    binary.chmod(0o755)
    write_case(tmp_path, "alpha")
    (case,) = load_cases(tmp_path)
    agent = AgentConfig(name="claude-code", type="claude-code", command=str(binary))
    settings = RepeatSettings(
        root=tmp_path, artifacts_dir=tmp_path / "res/run.artifacts", rows_dir=tmp_path / "res"
    )
    passed = Isolation(env_pass=("CAPEVAL_TEST_API_KEY",))  # an agent's variable, by name
    job = RepeatJob(case, Variant("v", "anthropic", "claude-x"), 0, agent, isolation=passed)
    row = run_repeat(job, ClaudeCodeAdapter(agent), settings)
    assert row["passed"] is True, row["error"]
    folder = tmp_path / "res" / row["artifacts"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "claude-code-stderr.log",
        "claude-code-stream.jsonl",
        SUMMARY_FILE,
        VERIFY_LOG,
    ]
    stream = (folder / "claude-code-stream.jsonl").read_text().splitlines()
    assert json.loads(stream[1])["message"]["content"][0]["text"] == f"key={REDACTED}"
    assert (folder / "claude-code-stderr.log").read_text() == f"claude stderr: using {REDACTED}\n"
    summary = json.loads((folder / SUMMARY_FILE).read_text())
    assert summary["turns"][0]["assistantTurn"]["content"][0]["text"] == f"key={REDACTED}"


def _capture(tmp_path: Path, sizes: dict[str, int]) -> Path:
    capture = tmp_path / "capture"
    capture.mkdir(exist_ok=True)
    for name, size in sizes.items():
        (capture / name).write_bytes(b"x" * size)
    return capture


def test_a_repeat_keeps_at_most_its_total_and_says_what_was_cut(tmp_path: Path) -> None:
    # One repeat once kept 171 MB (30 files of 5 MB): the folder has a total cap.
    capture = _capture(tmp_path, {"a.log": 400, "b.log": 400, "c.log": 400})
    dest = save_repeat_artifacts(
        tmp_path / "out" / "0", capture_dir=capture, verify=b"v" * 100, max_total=1000
    )
    assert (dest / VERIFY_LOG).read_bytes() == b"v" * 100  # the grader's log comes first
    assert (dest / "a.log").stat().st_size == 400 and (dest / "b.log").stat().st_size == 400
    assert b"kept the first 100 of 400 bytes" in (dest / "c.log").read_bytes()
    cut = (dest / CUT_FILE).read_text()
    assert "c.log: 400 bytes, kept the first 100 (the repeat's cap)" in cut


def test_files_past_the_repeat_cap_are_left_out_and_listed(tmp_path: Path) -> None:
    capture = _capture(tmp_path, {"a.log": 600, "b.log": 600})
    dest = save_repeat_artifacts(tmp_path / "out" / "0", capture_dir=capture, max_total=600)
    assert not (dest / "b.log").exists()
    assert "b.log: 600 bytes, left out (the repeat's cap)" in (dest / CUT_FILE).read_text()


def test_the_per_file_cap_is_named_as_such(tmp_path: Path) -> None:
    capture = _capture(tmp_path, {"big.log": 900})
    dest = save_repeat_artifacts(tmp_path / "out" / "0", capture_dir=capture, max_bytes=500)
    assert (
        "big.log: 900 bytes, kept the first 500 (the cap of 500 bytes per file)"
        in (dest / CUT_FILE).read_text()
    )


def test_repeats_share_the_runs_budget(tmp_path: Path) -> None:
    budget = ArtifactBudget(1000)
    first = save_repeat_artifacts(
        tmp_path / "v" / "0", capture_dir=_capture(tmp_path, {"a.log": 800}), budget=budget
    )
    assert not (first / CUT_FILE).exists()
    second = save_repeat_artifacts(tmp_path / "v" / "1", verify=b"v" * 500, budget=budget)
    assert b"kept the first 200 of 500 bytes" in (second / VERIFY_LOG).read_bytes()
    assert (
        "verify.log: 500 bytes, kept the first 200 (the run's cap)"
        in (second / CUT_FILE).read_text()
    )
    assert budget.take(1) == 0


def test_a_resumed_run_counts_what_its_folder_already_holds(tmp_path: Path) -> None:
    folder = tmp_path / "run.artifacts"
    (folder / "v" / "c" / "0").mkdir(parents=True)
    (folder / "v" / "c" / "0" / VERIFY_LOG).write_bytes(b"x" * 300)
    assert run_budget(folder, total=1000).take(10_000) == 700
    assert run_budget(tmp_path / "absent", total=1000).take(10_000) == 1000
