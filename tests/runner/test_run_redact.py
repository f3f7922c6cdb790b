"""Secret-named environment values never reach a row."""

from __future__ import annotations

from capeval.core.redact import REDACTED, is_secret_name, redact, secret_values


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
