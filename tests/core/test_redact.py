"""Secrets out of rows: which environment values are secret, and every form and
piece of one (encoded, in another letter case, cut by a preview) is replaced.

What `capeval.runner.artifacts` keeps on disk is tested in
tests/runner/test_run_artifacts.py."""

from __future__ import annotations

import base64
import json
import os
from urllib.parse import quote, quote_plus

import pytest

from capeval.core.redact import REDACTED, is_secret_name, redact, redact_text, secret_values

SECRET = "sk-test-9f8e7d6c5b4aZQ31"


def test_secret_names() -> None:
    for name in ("OPENAI_API_KEY", "EVAL_HTTP_TOKEN", "db_password", "MY_SECRET", "KEYRING"):
        assert is_secret_name(name)
    for name in ("PATH", "HOME", "EVAL_HTTP_URL"):
        assert not is_secret_name(name)


def test_values_are_replaced_everywhere_in_a_row() -> None:
    env = {
        "OPENAI_API_KEY": "sk-abc123456",
        "EVAL_HTTP_TOKEN": "f00dfeed",
        "PATH": "/usr/bin",
        "X_TOKEN": "1",
    }
    secrets = secret_values(env)
    assert secrets == ["sk-abc123456", "f00dfeed"]  # short values are not treated as secrets
    row = {
        "textPreview": "my key is sk-abc123456!",
        "error": "grader saw f00dfeed",
        "behaviors": {"toolCallsByName": {"f00dfeed": 1}},
        "list": ["x sk-abc123456"],
        "n": 3,
        "path": "/usr/bin",
    }
    out = redact(row, secrets)
    assert out["textPreview"] == f"my key is {REDACTED}!"
    assert out["error"] == f"grader saw {REDACTED}"
    assert out["behaviors"]["toolCallsByName"] == {REDACTED: 1}
    assert out["list"] == [f"x {REDACTED}"]
    assert out["n"] == 3 and out["path"] == "/usr/bin"
    assert "sk-abc123456" not in repr(out) and "f00dfeed" not in repr(out)


def test_a_secret_containing_another_is_replaced_whole() -> None:
    out = redact("AAAA-BBBB", secret_values({"A_KEY": "AAAA", "B_KEY": "AAAA-BBBB"}))
    assert out == REDACTED


def test_secrets_are_gathered_from_every_environment_given() -> None:
    from capeval.core.redact import secret_values

    found = secret_values({"HOME": "/home/u"}, {"AGENT_API_KEY": "sk-agent-1"}, {"T_TOKEN": "tk-9"})
    assert set(found) == {"sk-agent-1", "tk-9"}


def test_a_rows_own_field_names_are_kept() -> None:
    out = redact({"model": "model", "x": {"model": 1}}, ["model"])
    assert out == {"model": REDACTED, "x": {REDACTED: 1}}


def test_kept_fields_are_copied_whole() -> None:
    row = {"resultKey": "ollama:llama3::c", "model": "ollama", "error": "ollama refused"}
    out = redact(row, ["ollama"], keep={"resultKey", "model"})
    assert out == {
        "resultKey": "ollama:llama3::c",
        "model": "ollama",
        "error": f"{REDACTED} refused",
    }


def test_four_characters_make_a_secret_three_do_not() -> None:
    assert secret_values({"A_KEY": "abc", "B_KEY": "abcd"}) == ["abcd"]
    assert redact_text("abc abcd", ["abc", "abcd"]) == f"abc {REDACTED}"


def test_this_process_environment_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAPEVAL_TEST_TOKEN", SECRET)
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
