"""The pure case rules (docs/cases.md#case-json): one test per rule, plain dicts, no disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capeval.core.case import (
    Bait,
    Case,
    CaseFacts,
    Requirement,
    case_from_dict,
    field_path,
    validate_case_dict,
)
from capeval.core.metrics import METRIC_NAMES
from capeval.core.passrule import decide
from capeval.core.problems import Problem, ProblemsError

FILE = "evals/capability/cases/demo/case.json"
OK_FACTS = CaseFacts(fixture="ok", grader="ok")


def minimal(**changes: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "id": "demo",
        "tier": "simple",
        "title": "Demo",
        "fixture": "evals/capability/fixtures/demo",
        "prompt": "Fix the bug.",
    }
    obj.update(changes)
    return {k: v for k, v in obj.items() if v is not ...}


def check(obj: Any, facts: CaseFacts = OK_FACTS, **kw: Any) -> list[Problem]:
    return validate_case_dict(obj, file=FILE, dirname="demo", root_facts=facts, **kw)


def fields(problems: list[Problem]) -> list[str]:
    return [p.field for p in problems]


def only(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


# --- valid cases ---------------------------------------------------------------


def test_minimal_case_is_valid() -> None:
    assert check(minimal()) == []


def test_full_case_is_valid_and_round_trips() -> None:
    obj = minimal(
        tier="bait",
        prompt="Read {{HTTP_URL}} and report the token.",
        maxTurns=12,
        verify="check.sh",
        bait={"metric": "networkCommandCount", "threshold": 0},
        httpFixture=True,
        requireBehaviors=[
            {"metric": "webFetchToolCallCount", "min": 1},
            {"metric": "editViaShellCount", "max": 0},
            {"metric": "chainSegmentCount", "min": 2, "max": 2},
        ],
    )
    assert check(obj) == []
    case = case_from_dict(obj, dir=Path("cases/demo"), file=Path("cases/demo/case.json"))
    assert case.to_json() == obj
    assert case.bait == Bait("networkCommandCount", 0)
    assert case.requireBehaviors[2] == Requirement("chainSegmentCount", 2, 2)


def test_defaults_filled_by_case_from_dict() -> None:
    case = case_from_dict(minimal(), dir=Path("d"), file=Path("d/case.json"))
    assert (case.verify, case.maxTurns, case.bait, case.httpFixture, case.requireBehaviors) == (
        "verify.sh",
        None,
        None,
        False,
        (),
    )
    assert case.verify_path == Path("d/verify.sh")
    assert case.trajectory_path("oracle") == Path("d/trajectories/oracle.json")
    assert case.fixture_path(Path("root")) == Path("root/evals/capability/fixtures/demo")


# --- required, unknown, types ------------------------------------------------------


@pytest.mark.parametrize("name", ["id", "tier", "title", "fixture", "prompt"])
def test_each_required_field_is_reported_when_missing(name: str) -> None:
    problem = only(check(minimal(**{name: ...})))
    assert problem.field == name
    assert problem.message.startswith("missing; add it:")


def test_unknown_field_names_allowed_fields_and_suggests_the_close_one() -> None:
    problem = only(check(minimal(maxturns=5)))
    assert problem.field == "maxturns"
    assert "unknown field" in problem.message
    assert "maxTurns" in problem.message
    assert 'did you mean "maxTurns"?' in problem.message


@pytest.mark.parametrize(
    ("name", "value", "got"),
    [
        ("id", 5, "integer 5"),
        ("tier", ["simple"], "array"),
        ("title", None, "null"),
        ("fixture", {"dir": "x"}, "object"),
        ("prompt", 3.5, "number 3.5"),
        ("maxTurns", "10", 'string "10"'),
        ("maxTurns", 10.0, "number 10.0"),
        ("maxTurns", True, "boolean true"),
        ("verify", 1, "integer 1"),
        ("bait", "networkCommandCount", "string"),
        ("httpFixture", 5, "integer 5"),
        ("requireBehaviors", {"metric": "x"}, "object"),
    ],
)
def test_wrong_type_names_the_field_the_expected_type_and_the_value(
    name: str, value: Any, got: str
) -> None:
    problem = only(check(minimal(**{name: value})))
    assert problem.field == name
    assert problem.message.startswith("expected ")
    assert f"got {got}" in problem.message


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
@pytest.mark.parametrize("name", ["title", "prompt"])
def test_a_blank_title_or_prompt_is_one_problem(name: str, blank: str) -> None:
    # "   " passed: an agent was run on a prompt with no task in it.
    problem = only(check(minimal(**{name: blank})))
    assert problem.field == name
    assert problem.message.startswith("must not be empty or blank; expected ")


def test_a_null_value_is_named_once() -> None:
    # It read "got null null": the type name and the value are the same word.
    problem = only(check(minimal(maxTurns=None)))
    assert problem.message.endswith("got null"), problem.message


def test_case_file_that_is_not_an_object_is_one_problem() -> None:
    problem = only(check([minimal()]))
    assert problem.field == ""
    assert "expected a JSON object" in problem.message and "got array" in problem.message


# --- id and tier ------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["Demo", "my_case", "a b", "", "ü"])
def test_id_must_be_lower_case_letters_digits_and_dashes(bad: str) -> None:
    problems = check(minimal(id=bad))
    assert fields(problems) == ["id"]
    assert "lower-case letters, digits and '-'" in problems[0].message


def test_id_pattern_problem_suggests_a_valid_id() -> None:
    assert 'e.g. "my-case"' in only(check(minimal(id="My_Case"))).message


def test_id_must_equal_the_directory_name() -> None:
    problem = only(check(minimal(id="other")))
    assert problem.field == "id"
    assert '"other" does not equal its directory name "demo"' in problem.message
    assert 'set "id": "demo"' in problem.message


def test_unknown_tier_lists_the_configured_tiers() -> None:
    problem = only(check(minimal(tier="hard")))
    assert problem.field == "tier"
    assert 'unknown tier "hard"; expected one of: simple, complex, bait' in problem.message


def test_configured_tiers_replace_the_default_ones() -> None:
    assert check(minimal(tier="nightly"), tiers=("simple", "nightly")) == []
    assert fields(check(minimal(tier="bait"), tiers=("simple", "nightly"))) == ["tier"]


# --- fixture and grader --------------------------------------------------------------


@pytest.mark.parametrize("path", ["/srv/fixtures/demo", "C:\\fixtures\\demo"])
def test_fixture_must_be_relative(path: str) -> None:
    problem = only(check(minimal(fixture=path), facts=CaseFacts(grader="ok")))
    assert problem.field == "fixture"
    assert "is absolute; write it relative to the workspace root" in problem.message


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ("missing", "does not exist"),
        ("not_dir", "is not a directory"),
        ("escapes", "resolves outside the workspace root"),
        ("is_root", "is the workspace root itself"),
    ],
)
def test_fixture_facts_become_problems(state: Any, words: str) -> None:
    problem = only(check(minimal(), facts=CaseFacts(fixture=state, grader="ok")))
    assert problem.field == "fixture"
    assert problem.message.startswith('"evals/capability/fixtures/demo" ' + words)


def test_unchecked_facts_raise_no_problem_so_validation_needs_no_disk() -> None:
    # The fixture path does not exist anywhere; without facts it is not judged.
    assert check(minimal(fixture="no/such/dir"), facts=CaseFacts()) == []


def test_missing_default_grader_points_at_the_file_and_the_verify_field() -> None:
    problem = only(check(minimal(), facts=CaseFacts(fixture="ok", grader="missing")))
    assert problem.field == "verify"
    assert "grader verify.sh not found in evals/capability/cases/demo/" in problem.message
    assert 'set "verify"' in problem.message


def test_missing_named_grader_is_reported() -> None:
    problem = only(
        check(minimal(verify="check.sh"), facts=CaseFacts(fixture="ok", grader="missing"))
    )
    assert "grader check.sh not found" in problem.message


def test_grader_that_is_a_directory_is_reported() -> None:
    problem = only(check(minimal(), facts=CaseFacts(fixture="ok", grader="not_file")))
    assert "is not a regular file" in problem.message


@pytest.mark.parametrize("bad", ["sub/verify.sh", "../verify.sh", "..", ".", "a\\b.sh"])
def test_verify_must_be_a_plain_file_name(bad: str) -> None:
    problem = only(check(minimal(verify=bad)))
    assert problem.field == "verify"
    assert "plain file name in the case directory" in problem.message


# --- bait ----------------------------------------------------------------------------


def test_bait_on_unknown_metric_names_file_field_and_allowed_metrics() -> None:
    problem = only(check(minimal(bait={"metric": "netCount", "threshold": 0})))
    text = str(problem)
    assert text.startswith(f'{FILE}: bait.metric: unknown metric "netCount"; expected one of: ')
    for name in METRIC_NAMES:
        assert name in text


def test_bait_on_informational_tool_calls_by_name_is_rejected() -> None:
    assert fields(check(minimal(bait={"metric": "toolCallsByName", "threshold": 1}))) == [
        "bait.metric"
    ]


@pytest.mark.parametrize("threshold", [-1, -0.5])
def test_bait_threshold_must_not_be_negative(threshold: float) -> None:
    problem = only(check(minimal(bait={"metric": "networkCommandCount", "threshold": threshold})))
    assert problem.field == "bait.threshold"
    assert problem.message.startswith(f"must be >= 0, got {threshold}")


def test_bait_threshold_must_be_a_number() -> None:
    problem = only(check(minimal(bait={"metric": "networkCommandCount", "threshold": "0"})))
    assert (problem.field, problem.message.split(",")[0]) == (
        "bait.threshold",
        "expected a number >= 0",
    )


def test_bait_needs_both_keys_and_no_others() -> None:
    problems = check(minimal(bait={"metric": "networkCommandCount", "limit": 0}))
    assert sorted(fields(problems)) == ["bait.limit", "bait.threshold"]


# --- prompt placeholder ---------------------------------------------------------------


@pytest.mark.parametrize("flag", [..., False])
def test_http_url_placeholder_needs_http_fixture(flag: Any) -> None:
    problem = only(check(minimal(prompt="Open {{HTTP_URL}}", httpFixture=flag)))
    assert problem.field == "prompt"
    assert 'add "httpFixture": true' in problem.message


def test_render_prompt_substitutes_the_url_and_refuses_without_one() -> None:
    obj = minimal(prompt="Open {{HTTP_URL}} now", httpFixture=True)
    case = case_from_dict(obj, dir=Path("d"), file=Path("d/case.json"))
    assert case.render_prompt("http://127.0.0.1:9/x") == "Open http://127.0.0.1:9/x now"
    with pytest.raises(ValueError, match="HTTP_URL"):
        case.render_prompt(None)


@pytest.mark.parametrize(
    "prompt", ["Open {{HTTP_URI}} now", "Open {{ HTTP_URL }} now", "Open {{http_url}} now"]
)
def test_a_mistyped_prompt_placeholder_is_named(prompt: str) -> None:
    # It reached the agent as is: never told the fixture's URL, every repeat
    # failed as if the agent had, and nothing said why.
    problem = only(check(minimal(prompt=prompt, httpFixture=True)))
    assert problem.field == "prompt"
    assert problem.message.startswith("unknown placeholder {{")
    assert 'did you mean "{{HTTP_URL}}"' in problem.message


def test_other_templates_braces_in_a_task_are_not_placeholders() -> None:
    # A task about a template language may quote one; a prompt has no escape.
    prompt = "Render {{name}}, {{ user.email }} and {{VERSION}} in page.html"
    assert check(minimal(prompt=prompt)) == []


# --- maxTurns ------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -3])
def test_max_turns_must_be_positive(value: int) -> None:
    problem = only(check(minimal(maxTurns=value)))
    assert problem.field == "maxTurns"
    assert "positive integer" in problem.message


# --- requireBehaviors ------------------------------------------------------------------


def test_an_empty_require_behaviors_is_valid_and_requires_nothing() -> None:
    # The spec types the field as a list and only makes a non-empty one fail
    # a repeat without captured behaviors.
    assert check(minimal(requireBehaviors=[])) == []
    case = case_from_dict(minimal(requireBehaviors=[]), dir=Path("demo"), file=Path(FILE))
    assert case.requireBehaviors == ()
    verdict = decide(
        agent_exit_code=0,
        verify_exit_code=0,
        over_budget=False,
        requirements=case.requireBehaviors,
        behaviors=None,
    )
    assert verdict.passed


def test_requirement_needs_a_bound() -> None:
    problem = only(check(minimal(requireBehaviors=[{"metric": "networkCommandCount"}])))
    assert problem.field == "requireBehaviors[0]"
    assert 'add "min" and/or "max"' in problem.message


@pytest.mark.parametrize("bound", ["min", "max"])
def test_requirement_bounds_must_not_be_negative(bound: str) -> None:
    req = {"metric": "networkCommandCount", bound: -1}
    problem = only(check(minimal(requireBehaviors=[req])))
    assert problem.field == f"requireBehaviors[0].{bound}"
    assert "must be >= 0, got -1" in problem.message


def test_requirement_min_above_max_is_reported_and_equal_is_fine() -> None:
    reqs = [
        {"metric": "chainSegmentCount", "min": 2, "max": 2},
        {"metric": "chainSegmentCount", "min": 3, "max": 1},
    ]
    problem = only(check(minimal(requireBehaviors=reqs)))
    assert problem.field == "requireBehaviors[1]"
    assert "min 3 is greater than max 1" in problem.message


def test_requirement_metric_must_be_known() -> None:
    problem = only(check(minimal(requireBehaviors=[{"metric": "netCount", "max": 0}])))
    assert problem.field == "requireBehaviors[0].metric"
    assert 'unknown metric "netCount"' in problem.message


def test_requirement_entry_must_be_an_object_without_unknown_keys() -> None:
    problems = check(
        minimal(
            requireBehaviors=[
                "networkCommandCount",
                {"metric": "chainSegmentCount", "max": 1, "mx": 2},
            ]
        )
    )
    assert fields(problems) == ["requireBehaviors[0]", "requireBehaviors[1].mx"]


def test_requirement_holds_checks_bounds_and_fails_closed() -> None:
    req = Requirement("networkCommandCount", min=1, max=2)
    assert req.holds({"networkCommandCount": 1})
    assert req.holds({"networkCommandCount": 2})
    assert not req.holds({"networkCommandCount": 0})
    assert not req.holds({"networkCommandCount": 3})
    assert not req.holds({})
    assert not req.holds(None)
    assert Requirement("editViaShellCount", max=0).describe() == "editViaShellCount <= 0"


def test_a_boolean_metric_value_is_no_number_and_fails_the_requirement() -> None:
    # JSON true is a Python int: counted as 1 it would pass a "min": 1 bound
    # from a stream that never measured the metric.
    assert not Requirement("networkCommandCount", min=1).holds({"networkCommandCount": True})
    assert not Requirement("networkCommandCount", max=1).holds({"networkCommandCount": False})


def test_a_requirement_with_both_bounds_describes_both() -> None:
    # The failed repeat's error quotes it; dropping a bound misstates the rule.
    assert Requirement("toolCallCount", min=1, max=3).describe() == "1 <= toolCallCount <= 3"
    assert Requirement("toolCallCount", min=2).describe() == "toolCallCount >= 2"


def test_bait_misbehaves_only_above_threshold() -> None:
    bait = Bait("networkCommandCount", 1)
    assert not bait.misbehaves(1)
    assert bait.misbehaves(1.5)
    assert bait.to_json() == {"metric": "networkCommandCount", "threshold": 1}


# --- all at once, and the message format ----------------------------------------------


def test_every_problem_in_one_case_is_reported_at_once_in_field_order() -> None:
    obj = {
        "id": "Other",
        "tier": "hard",
        "title": "",
        "fixture": "/abs",
        "prompt": "see {{HTTP_URL}}",
        "maxTurns": 0,
        "bait": {"metric": "netCount", "threshold": -1},
        "requireBehaviors": [{"metric": "networkCommandCount"}],
        "color": "red",
    }
    problems = check(obj, facts=CaseFacts(grader="missing"))
    assert fields(problems) == [
        "id",
        "tier",
        "title",
        "fixture",
        "prompt",
        "maxTurns",
        "verify",
        "bait.metric",
        "bait.threshold",
        "requireBehaviors[0]",
        "color",
    ]


def test_empty_optional_list_still_offers_dropping_it() -> None:
    from capeval.core.case import schema_problems
    from capeval.core.jsonschemas import strict_validator

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"xs": {"type": "array", "minItems": 1, "description": "a list"}},
    }
    errors = list(strict_validator(schema).iter_errors({"xs": []}))
    (problem,) = schema_problems(errors, file="f", schema=schema)
    assert str(problem).endswith("with at least one entry, or drop the field")
    (problem,) = schema_problems(errors, file="f")
    assert str(problem).endswith("with at least one entry")


def test_problem_text_is_file_field_message() -> None:
    assert str(Problem("a/case.json", "bait.metric", "bad")) == "a/case.json: bait.metric: bad"
    assert str(Problem("a/case.json", "", "bad")) == "a/case.json: bad"
    err = ProblemsError([Problem("f", "x", "one"), Problem("f", "y", "two")])
    assert str(err) == "f: x: one\nf: y: two"
    assert len(err.problems) == 2


def test_field_path_renders_indices() -> None:
    assert field_path(["requireBehaviors", 0, "min"]) == "requireBehaviors[0].min"
    assert field_path([]) == ""


def test_case_is_frozen() -> None:
    case = case_from_dict(minimal(), dir=Path("d"), file=Path("d/case.json"))
    assert isinstance(case, Case)
    with pytest.raises(AttributeError):
        case.id = "x"  # type: ignore[misc]


def test_empty_tiers_skip_the_tier_rule_but_not_its_type() -> None:
    assert check(minimal(tier="anything"), tiers=()) == []
    assert fields(check(minimal(tier=3), tiers=())) == ["tier"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_fields = st.sampled_from(
    [
        "id",
        "tier",
        "title",
        "fixture",
        "prompt",
        "maxTurns",
        "verify",
        "bait",
        "httpFixture",
        "requireBehaviors",
        "x",
    ]
)


@settings(max_examples=200, deadline=None)
@given(changes=st.dictionaries(_fields, _json, max_size=4))
def test_any_json_yields_problems_never_an_exception(changes: dict[str, Any]) -> None:
    problems = check(minimal(**changes))
    assert all(isinstance(p, Problem) and p.message for p in problems)
    # Whatever was wrong, a dict the rules accept builds a Case.
    if not problems:
        case_from_dict(minimal(**changes), dir=Path("d"), file=Path("d/case.json"))
