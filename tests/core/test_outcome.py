"""A row's outcome: its own, else derived from `passed` and `status` for rows that predate it."""

from __future__ import annotations

import pytest

from capeval.core.outcome import derive_outcome, outcome_problem, row_outcome, status_kind


@pytest.mark.parametrize(
    ("passed", "status", "want"),
    [
        (True, "done", "passed"),
        (False, "done", "failed"),
        (False, "timeout", "failed"),  # the agent ran out of its time: judged
        (False, "failed", "failed"),
        (False, "cancelled", "error"),  # the original harness never measured it
        (True, "cancelled", "passed"),
        (None, None, "failed"),
    ],
)
def test_rows_that_predate_outcome_derive_it(passed: object, status: object, want: str) -> None:
    assert derive_outcome(passed, status) == want
    assert row_outcome({"passed": passed, "status": status}) == want


def test_a_stated_outcome_wins() -> None:
    assert row_outcome({"passed": False, "status": "done", "outcome": "error"}) == "error"


@pytest.mark.parametrize(
    ("outcome", "passed", "problem"),
    [
        (None, True, None),
        ("passed", True, None),
        ("error", False, None),
        ("passed", False, "but 'passed' is false"),
        ("failed", True, "but 'passed' is true"),
        ("skipped", False, "must be one of passed, failed, error"),
    ],
)
def test_a_stated_outcome_must_agree_with_passed(
    outcome: object, passed: object, problem: str | None
) -> None:
    found = outcome_problem(outcome, passed)
    assert (found is None) if problem is None else (problem in (found or ""))


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, "rate_limit"),
        (529, "overloaded"),
        (503, "overloaded"),
        (500, "server"),
        (502, "server"),
        (401, "auth"),
        (403, "auth"),
        (400, None),  # a request too long: the agent's own doing
        (404, None),
        (None, None),
    ],
)
def test_http_statuses_that_mean_an_outage(status: int | None, kind: str | None) -> None:
    assert status_kind(status) == kind
