"""Secrets in the forms and pieces they really take, kept out of rows and artifacts.

Each test pins a rule of `capeval.core.redact` or `capeval.runner.artifacts` that a
one-line break would otherwise slip past, or a way a key used to leak: cut by
a preview or a streamed chunk, encoded by a log, renamed into a file name.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from capeval.agents.scripted import ScriptedAdapter
from capeval.core.agentconfig import AgentConfig
from capeval.core.matrix import Variant
from capeval.core.redact import REDACTED, redact, redact_text, secret_values
from capeval.runner.artifacts import (
    SUMMARY_FILE,
    VERIFY_LOG,
    capped,
    copy_capped,
    path_component,
    redact_bytes,
    safe_cut,
    save_repeat_artifacts,
    verify_log,
)
from capeval.runner.repeat import RepeatJob, RepeatSettings, run_repeat
from capeval.workspace import load_cases
from tests.runhelpers import REPO, write_case, write_done

SECRET = "sk-test-9f8e7d6c5b4aZQ31"
R = REDACTED.encode()


# -- which values are secrets -----------------------------------------------


def test_four_characters_make_a_secret_three_do_not() -> None:
    assert secret_values({"A_KEY": "abc", "B_KEY": "abcd"}) == ["abcd"]
    assert redact_text("abc abcd", ["abc", "abcd"]) == f"abc {REDACTED}"


def test_this_process_environment_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAPEVAL_MUT_TOKEN", SECRET)
    assert SECRET in secret_values(os.environ)


def test_more_secret_names() -> None:
    env = {
        "SMTP_PASS": "pass-one",
        "DB_PASSWD": "pass-two",
        "GPG_PASSPHRASE": "pass-three",
        "GOOGLE_APPLICATION_CREDENTIALS": "/creds.json",
        "PWD": "/work",
        "OLDPWD": "/old",
        "SSH_ASKPASS": "/usr/bin/askpass",
        "XDG_SESSION_TYPE": "wayland",
        "PASSWORD": "pass-four",
        "PASSWD": "pass-five",
        "PASSPHRASE": "pass-six",
    }
    assert set(secret_values(env)) == {
        "pass-one",
        "pass-two",
        "pass-three",
        "/creds.json",
        "pass-four",
        "pass-five",
        "pass-six",
    }


def test_a_key_inside_a_json_config_or_a_url_is_a_secret() -> None:
    # opencode takes its provider's apiKey in a JSON variable whose name is no secret's.
    config = {"provider": {"anthropic": {"options": {"baseURL": "http://h", "apiKey": SECRET}}}}
    env = {
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "HTTPS_PROXY": "http://me:hunter2-pw@proxy:3128",
        "BROKEN": "{not json",
        "ODD_URL": "http://[::1@x",
        "ACCOUNTS": json.dumps([{"name": "me", "token": "tok-in-a-list"}]),
        "NESTED": json.dumps({"credentials": {"default": "under-a-secret"}}),
    }
    assert set(secret_values(env)) == {SECRET, "hunter2-pw", "tok-in-a-list", "under-a-secret"}


# -- how values are found ------------------------------------------------------


def test_every_occurrence_and_tuple_items_are_replaced() -> None:
    assert redact_text(f"{SECRET} and {SECRET}", [SECRET]) == f"{REDACTED} and {REDACTED}"
    assert redact({"t": ("x " + SECRET,)}, [SECRET]) == {"t": [f"x {REDACTED}"]}


def test_any_letter_case_is_found() -> None:
    text = f"upper {SECRET.upper()} lower {SECRET.lower()}"
    assert redact_text(text, [SECRET]) == f"upper {REDACTED} lower {REDACTED}"


def test_json_escaped_and_percent_encoded_forms_are_found() -> None:
    password = 'pa"ss\\wörd/+= x'
    for form in (
        json.dumps(password),
        json.dumps(password, ensure_ascii=False),
        json.dumps(json.dumps(password)),  # a JSON string inside a JSON line
        quote(password, safe=""),
        quote(password, safe="").lower(),
        quote_plus(password),
        json.dumps(password).replace("/", "\\/"),  # some encoders escape the slash
    ):
        out = redact_text(f"seen {form} here", [password])
        shapes = (REDACTED, f'"{REDACTED}"', f'"\\"{REDACTED}\\""')
        assert out in {f"seen {shape} here" for shape in shapes}, (form, out)


@pytest.mark.parametrize("prefix", ["", "u:", "us:", "use:"])
def test_base64_forms_are_found_at_every_alignment(prefix: str) -> None:
    encoded = base64.b64encode((prefix + SECRET).encode()).decode()
    out = redact_text(f"Authorization: Basic {encoded}", [SECRET])
    assert REDACTED in out
    rest = out.removeprefix("Authorization: Basic ").replace(REDACTED, "")
    # What is left encodes the prefix, or mixes a byte or two of the key with padding.
    assert len(rest) <= 8 + 2 * len(prefix)
    url_safe = base64.urlsafe_b64encode((prefix + SECRET + "??>>").encode()).decode()
    assert REDACTED in redact_text(url_safe, [SECRET + "??>>"])


def test_overlapping_secrets_leave_no_piece_of_either() -> None:
    a, b = "AAAA-BBBB-CCCC", "CCCC-DDDD"
    for order in ([a, b], [b, a], [a, "BBBB"]):
        assert redact_text(f"x {a}-DDDD y", order).startswith(f"x {REDACTED}")
        assert redact_text(f"x {a}-DDDD y", order) in (f"x {REDACTED} y", f"x {REDACTED}-DDDD y")
    assert redact_text(f"x {a}-DDDD y", [a, b]) == f"x {REDACTED} y"


# -- a secret cut in two --------------------------------------------------------


def test_a_preview_cut_in_the_middle_of_a_key_keeps_no_piece_of_it() -> None:
    for k in range(8, len(SECRET)):
        for text in (
            "my key is " + SECRET[:k],  # cut by [:limit]
            "my key is " + SECRET[:k] + "…",  # cut by a preview
            json.dumps({"text": SECRET[:k] + "…"}),
            '{"content": "' + SECRET[:k] + '", "delta": true}',  # one streamed chunk
            "..." + SECRET[-k:] + " rest",  # cut by [-limit:]
            '{"content": "' + SECRET[-k:] + ' rest", "delta": true}',
        ):
            out = redact_text(text, [SECRET])
            assert REDACTED in out and SECRET[:8] not in out and SECRET[-8:] not in out, text


def test_a_cut_piece_is_found_whole_and_a_short_one_is_left() -> None:
    # A text starting with a tail; a head reaching past a quote that is part of the key.
    assert redact_text(SECRET[-10:] + " rest", [SECRET]) == f"{REDACTED} rest"
    quoted = 'abcdefghij"klmnopqrst'
    cut = json.dumps(quoted)[:-7] + '"'  # "abcdefghij\"klmnop"
    assert redact_text(cut, [quoted]) == f'"{REDACTED}"'
    # Seven characters of a key's start are ordinary text (`sk-test`, a quoted word).
    for text in ('say "sk-test"', 'say "' + SECRET[-7:] + '"', "…" + SECRET[-7:]):
        assert redact_text(text, [SECRET]) == text


def test_a_head_inside_other_text_is_no_cut() -> None:
    # GOOGLE_APPLICATION_CREDENTIALS is a path: other paths under the same folder stay.
    path = "/home/u/.config/gcloud/creds.json"
    out = redact_text(f"open /home/u/src/main.py and {path}", [path])
    assert out == f"open /home/u/src/main.py and {REDACTED}"


def test_a_streamed_key_split_across_lines_is_redacted_in_the_capture(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    capture.mkdir()
    chunks = ["my key is " + SECRET[:11], SECRET[11:] + ", done"]
    lines = [json.dumps({"type": "message", "content": c, "delta": True}) for c in chunks]
    (capture / "gemini-stream.jsonl").write_text("\n".join(lines) + "\n")
    dest = save_repeat_artifacts(tmp_path / "out", capture_dir=capture, secrets=[SECRET])
    kept = (dest / "gemini-stream.jsonl").read_text()
    assert SECRET[:8] not in kept and SECRET[-8:] not in kept and kept.count(REDACTED) == 2


def test_a_rows_preview_cut_in_a_key_keeps_no_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPEVAL_MUT_API_KEY", SECRET)
    # The scripted agent's preview keeps 300 characters: the key is cut at 10.
    write_case(tmp_path, "alpha", trajectories={"oracle": [write_done("x" * 290 + SECRET)]})
    (case,) = load_cases(tmp_path)
    agent = AgentConfig(name="scripted", type="scripted")
    job = RepeatJob(case, Variant("v", "scripted", "oracle"), 0, agent)
    row = run_repeat(job, ScriptedAdapter(agent), RepeatSettings(root=tmp_path))
    assert row["textPreview"].endswith(REDACTED), row["textPreview"][-30:]
    assert SECRET[:8] not in json.dumps(row)


# -- the cut of a capped file ----------------------------------------------------


def test_cut_ignores_a_secret_ending_at_it_and_moves_past_chained_ones() -> None:
    data = b"a" * 90 + SECRET.encode()[:10] + b"b" * 50
    assert safe_cut(data, 100, [SECRET[:10]]) == 100
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
    src.write_bytes(b"a" * 76 + SECRET.encode() + b"b" * 100)
    copy_capped(src, tmp_path / "copy", [SECRET], max_bytes=100)
    assert (tmp_path / "copy").read_bytes().startswith(b"a" * 76 + R + b"\n[capeval: truncated")


def test_a_truncated_file_is_still_redacted(tmp_path: Path) -> None:
    src = tmp_path / "log"
    src.write_bytes(b"key " + SECRET.upper().encode() + b"\n" + b"z" * 5000)
    assert copy_capped(src, tmp_path / "copy", [SECRET], max_bytes=1000) is True
    kept = (tmp_path / "copy").read_bytes()
    assert kept.startswith(b"key " + R + b"\n") and SECRET.upper().encode() not in kept


def test_verify_log_cut_at_a_key_in_another_case_keeps_none_of_it(tmp_path: Path) -> None:
    verify = b"a" * 95 + SECRET.upper().encode() + b"b" * 100
    dest = save_repeat_artifacts(tmp_path / "0", verify=verify, secrets=[SECRET], max_bytes=100)
    kept = (dest / VERIFY_LOG).read_bytes()
    assert kept.startswith(b"a" * 95 + b"\n[capeval: truncated, kept the first 95 of ")


def test_undecodable_bytes_pass_through_unchanged() -> None:
    data = b"\xff\xfe " + SECRET.encode() + b" \x80\xc3"
    assert redact_bytes(data, [SECRET]) == b"\xff\xfe " + R + b" \x80\xc3"


def test_a_file_shorter_than_it_said_reports_what_was_kept() -> None:
    assert (
        capped(b"abc", 10, [], 100) == b"abc\n[capeval: truncated, kept the first 3 of 10 bytes]\n"
    )


# -- what save_repeat_artifacts writes ----------------------------------------


def test_a_secret_in_a_capture_file_name_is_redacted(tmp_path: Path) -> None:
    capture = tmp_path / "capture"
    capture.mkdir()
    (capture / f"log-{SECRET}.txt").write_text("x")
    dest = save_repeat_artifacts(tmp_path / "0", capture_dir=capture, secrets=[SECRET])
    assert [p.name for p in dest.iterdir()] == [f"log-{REDACTED}.txt"]


def test_a_secret_deep_in_summary_tool_arguments_is_redacted(tmp_path: Path) -> None:
    quoted = 'pw"with\\quote'
    call = {
        "name": "run_shell",
        "arguments": {"command": f"curl -H 'x-api-key: {SECRET}'", "env": {SECRET: [SECRET]}},
        "raw": json.dumps({"cmd": f"login {quoted}"}),
    }
    summary = {"turns": [{"toolCalls": [call]}]}
    dest = save_repeat_artifacts(tmp_path / "0", summary=summary, secrets=[SECRET, quoted])
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
