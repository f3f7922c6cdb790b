"""Trajectory files: loading, the errors a trajectory author sees, and templates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capeval.agents.trajectory import (
    TemplateError,
    TrajectoryError,
    load_trajectory,
    parse_trajectory,
    references,
    render,
    validate_trajectory,
)


def write(tmp_path: Path, obj: Any, name: str = "oracle") -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    return path


def problems_of(obj: Any) -> list[str]:
    return [str(p) for p in validate_trajectory(obj, file="t.json")]


def shell(cmd: str, **extra: Any) -> dict[str, Any]:
    return {"name": "run_shell", "arguments": {"command": cmd}, **extra}


def test_minimal_trajectory_loads_with_defaults(tmp_path: Path) -> None:
    t = load_trajectory(write(tmp_path, {"turns": [{"text": "hi"}]}))
    assert t.name == "oracle"
    assert t.status == "done" and t.exitCode == 0 and t.error is None
    assert t.turns[0].text == "hi" and t.turns[0].calls == () and t.turns[0].thinkMs == 0


def test_nonzero_exit_code_defaults_to_failed_status() -> None:
    t = parse_trajectory({"turns": [{"text": "x"}], "exitCode": 3}, "x")
    assert (t.exitCode, t.status) == (3, "failed")


def test_calls_get_ids_by_position_and_nested_calls_by_task(tmp_path: Path) -> None:
    obj = {
        "turns": [
            {"toolCalls": [shell("a"), shell("b", id="named")]},
            {
                "toolCalls": [
                    {
                        "name": "task",
                        "arguments": {"description": "d", "calls": [shell("c"), shell("d")]},
                    }
                ]
            },
        ]
    }
    t = load_trajectory(write(tmp_path, obj))
    assert [c.id for c in t.calls()] == ["t0c0", "named", "t1c0", "t1c0.0", "t1c0.1"]
    assert [c.arguments["command"] for c in t.calls() if c.name == "run_shell"] == list("abcd")


def test_missing_file_names_the_file_and_the_trajectory(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryError) as err:
        load_trajectory(tmp_path / "nope.json", file="cases/x/trajectories/nope.json")
    assert str(err.value).startswith("cases/x/trajectories/nope.json: ")
    assert "'nope'" in str(err.value) and "does not exist" in str(err.value)


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryError) as err:
        load_trajectory(write(tmp_path, '{"turns": [\n  {"text": }\n]}'), file="t.json")
    assert "t.json: not valid JSON at line 2 column" in str(err.value)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({}, "t.json: turns: missing; add it"),
        ({"turns": []}, "t.json: turns: must not be empty"),
        (
            {"turns": [{"txt": "x"}]},
            't.json: turns[0].txt: unknown field; expected one of: text, thinkMs, toolCalls (did you mean "text"?)',
        ),
        (
            {"turns": [{"thinkMs": "fast"}]},
            "t.json: turns[0].thinkMs: expected simulated model time",
        ),
        (
            {"turns": [{"toolCalls": [{"name": "bash", "arguments": {}}]}]},
            't.json: turns[0].toolCalls[0].name: unknown value "bash"; expected one of: run_shell,',
        ),
        (
            {"turns": [{"toolCalls": [{"name": "run_shell", "arguments": {"cmd": "ls"}}]}]},
            "t.json: turns[0].toolCalls[0].arguments.command: missing; add it: a bash command",
        ),
        (
            {
                "turns": [
                    {"toolCalls": [{"name": "edit_file", "arguments": {"path": "a", "old": "x"}}]}
                ]
            },
            "t.json: turns[0].toolCalls[0].arguments.new: missing",
        ),
        (
            {
                "turns": [
                    {
                        "toolCalls": [
                            {
                                "name": "task",
                                "arguments": {
                                    "description": "d",
                                    "calls": [{"name": "grep", "arguments": {"path": "."}}],
                                },
                            }
                        ]
                    }
                ]
            },
            "t.json: turns[0].toolCalls[0].arguments.calls[0].arguments.pattern: missing",
        ),
        ({"turns": [{"text": "x"}], "status": "ok"}, 't.json: status: unknown value "ok"'),
        ({"turns": [{"text": "x"}], "exitCode": 300}, "t.json: exitCode: must be <= 255"),
    ],
)
def test_schema_errors_name_the_field_and_the_fix(obj: Any, expected: str) -> None:
    found = problems_of(obj)
    assert any(p.startswith(expected) for p in found), found


def test_empty_turns_does_not_offer_dropping_the_required_field() -> None:
    problems = validate_trajectory({"turns": []}, file="t.json")
    assert len(problems) == 1
    text = str(problems[0])
    assert text.startswith("t.json: turns: must not be empty")
    assert "drop the field" not in text
    # The fix it does offer is true: one turn is valid.
    assert validate_trajectory({"turns": [{"text": "done"}]}, file="t.json") == []
    assert "missing" in str(validate_trajectory({}, file="t.json")[0])


def test_a_result_reference_must_point_at_an_earlier_call() -> None:
    obj = {
        "turns": [
            {"toolCalls": [shell("echo {{result:later}}")]},
            {"toolCalls": [shell("echo hi", id="later")]},
        ]
    }
    (problem,) = problems_of(obj)
    assert problem.startswith(
        "t.json: turns[0].toolCalls[0].arguments: {{result:later}} refers to no earlier call"
    )


def test_a_nested_call_cannot_wait_for_its_own_task() -> None:
    nested = shell("echo {{result:job}}")
    obj = {
        "turns": [
            {
                "toolCalls": [
                    {
                        "id": "job",
                        "name": "task",
                        "arguments": {"description": "d", "calls": [nested]},
                    }
                ]
            }
        ]
    }
    (problem,) = problems_of(obj)
    assert "turns[0].toolCalls[0].arguments.calls[0].arguments" in problem
    assert "refers to no earlier call" in problem


def test_duplicate_ids_and_bad_regexes_are_reported_together() -> None:
    obj = {
        "turns": [
            {"toolCalls": [shell("a", id="x"), shell("echo {{result:x|re:([a-}}", id="x")]},
        ]
    }
    found = problems_of(obj)
    assert any("turns[0].toolCalls[1].id: duplicate call id 'x'" in p for p in found), found
    assert any("turns[0].toolCalls[1].arguments: bad regex '([a-'" in p for p in found), found


def test_load_raises_every_problem_at_once(tmp_path: Path) -> None:
    obj = {"turns": [{"txt": 1}, {"thinkMs": -1}]}
    with pytest.raises(TrajectoryError) as err:
        load_trajectory(write(tmp_path, obj), file="t.json")
    assert len(err.value.problems) == 2


# --- templates ----------------------------------------------------------------

RESULTS = {"page": "<p>token=<code>ab12cd</code></p>", "n": "42\n"}


def fill(value: Any, url: str | None = "http://127.0.0.1:9") -> Any:
    return render(value, http_url=url, result=RESULTS.__getitem__)


def test_http_url_is_substituted_anywhere_in_the_arguments() -> None:
    args = {"url": "{{HTTP_URL}}/a", "nested": ["x {{HTTP_URL}}", {"k": "{{HTTP_URL}}"}], "n": 3}
    assert fill(args) == {
        "url": "http://127.0.0.1:9/a",
        "nested": ["x http://127.0.0.1:9", {"k": "http://127.0.0.1:9"}],
        "n": 3,
    }


def test_http_url_without_a_fixture_is_an_error() -> None:
    with pytest.raises(TemplateError, match="no HTTP fixture"):
        fill("{{HTTP_URL}}", url=None)


def test_result_template_inserts_the_whole_result() -> None:
    assert fill("[{{result:n}}]") == "[42\n]"


def test_regex_template_inserts_the_first_group_or_the_whole_match() -> None:
    assert fill("t={{result:page|re:<code>([a-z0-9]+)</code>}}") == "t=ab12cd"
    assert fill("{{result:page|re:token=<code>[a-z]+}}") == "token=<code>ab"


def test_regex_without_a_match_is_an_error_naming_the_call() -> None:
    with pytest.raises(TemplateError, match=r"no match in the result of 'page'"):
        fill("{{result:page|re:secret=(\\d+)}}")


def test_other_braces_are_left_alone() -> None:
    assert fill("{{ name }} {{result}} {x}") == "{{ name }} {{result}} {x}"


def test_references_lists_ids_and_regexes() -> None:
    value = {"a": ["{{result:x}}", "{{result:y|re:(\\d+)}} {{HTTP_URL}}"]}
    assert list(references(value)) == [("x", None), ("y", "(\\d+)")]


def test_byte_order_mark_is_named_with_the_fix(tmp_path: Path) -> None:
    # Some editors save JSON with a BOM; Python's own words ("decode using
    # utf-8-sig") do not tell a user what to change in the file.
    path = tmp_path / "oracle.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"turns": [{"text": "hi"}]}).encode())
    with pytest.raises(TrajectoryError) as err:
        load_trajectory(path, file="cases/x/trajectories/oracle.json")
    message = str(err.value)
    assert message.startswith("cases/x/trajectories/oracle.json: ")
    assert "byte order mark" in message and "without BOM" in message
