"""Running a repeat again while it measured nothing (docs/running.md#retries).

A repeat whose outcome is `error` (a 429, an overloaded or failing provider,
a refused login, a broken connection, a CLI that could not start, capeval's
own failure) says nothing about the agent. `capeval run --retries N` runs it
again, up to N more times, each attempt from scratch in a fresh workdir (a
new `run_repeat`), after a wait that doubles each time, with random jitter so
concurrent repeats do not hit a recovering provider in step. Only the last
attempt's row is written, counting every attempt in `attempts`; each
attempt's outcome and error are kept in the repeat's artifacts
(`attempts.json`, and the earlier attempts' evidence in `attempt-<n>/`).

The schedule is tenacity's (`wait_exponential` plus `wait_random`): a small, well-tested
library rather than one more hand-made loop of sleeps and counters. Waits are
cut short by the run's stop event, so Ctrl-C during a backoff stops at once;
the repeat then leaves no row and `--resume` runs it again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_result,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from capeval.agents.base import Adapter
from capeval.core.outcome import ERROR, row_outcome
from capeval.core.row import Row
from capeval.runner.artifacts import repeat_dir, write_attempts
from capeval.runner.repeat import RepeatCancelled, RepeatJob, RepeatSettings, run_repeat

DEFAULT_RETRIES = 2
DEFAULT_WAIT_S = 10.0
MAX_WAIT_S = 300.0
# What an attempt's record in `attempts.json` keeps of its row.
ATTEMPT_FIELDS = (
    "attempts",
    "outcome",
    "errorKind",
    "providerStatus",
    "agentExitCode",
    "status",
    "error",
    "startedAt",
    "finishedAt",
)


@dataclass(frozen=True)
class RetryPolicy:
    """`--retries` (more attempts after the first) and `--retry-wait` (the first wait)."""

    retries: int = DEFAULT_RETRIES
    wait_s: float = DEFAULT_WAIT_S
    max_wait_s: float = MAX_WAIT_S

    def __post_init__(self) -> None:
        if self.retries < 0 or self.wait_s < 0:
            raise ValueError("--retries and --retry-wait must not be negative")


def measured_nothing(row: Mapping[str, Any]) -> bool:
    return row_outcome(row) == ERROR


def run_with_retries(
    job: RepeatJob,
    adapter: Adapter,
    settings: RepeatSettings,
    policy: RetryPolicy,
    *,
    stop: threading.Event | None = None,
    on_retry: Callable[[Row, float], None] | None = None,
) -> Row:
    """The repeat's row after at most `policy.retries` more attempts of an `error` one.

    Raises `RepeatCancelled` when the run stops meanwhile (no row is written).
    """
    stop = stop or threading.Event()
    records: list[dict[str, Any]] = []

    def attempt() -> Row:
        if stop.is_set():
            raise RepeatCancelled
        number = job.prior_attempts + len(records) + 1
        row = run_repeat(job, adapter, settings, attempt=number)
        records.append({k: row.get(k) for k in ATTEMPT_FIELDS})
        _note_attempts(job, settings, row, records)
        return row

    def sleep(seconds: float) -> None:
        if stop.wait(seconds):
            raise RepeatCancelled

    def before_sleep(state: RetryCallState) -> None:
        if on_retry is not None and state.outcome is not None and state.next_action is not None:
            on_retry(state.outcome.result(), state.next_action.sleep)

    row: Row = retrying(policy, sleep=sleep, before_sleep=before_sleep)(attempt)
    return row


def retrying(
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None],
    before_sleep: Callable[[RetryCallState], None] | None = None,
) -> Retrying:
    """The retry schedule of `policy`: a call returning a row is made again while the row
    measured nothing (`measured_nothing`); out of attempts, the last row stands.

    Shared by capability repeats and the Paperclip live matrix's turns.
    """
    return Retrying(
        stop=stop_after_attempt(policy.retries + 1),
        # wait_s, 2 * wait_s, 4 * wait_s ... (capped), each plus up to wait_s of jitter.
        wait=wait_exponential(multiplier=policy.wait_s, max=policy.max_wait_s)
        + wait_random(0, policy.wait_s),
        retry=retry_if_result(measured_nothing),
        sleep=sleep,
        before_sleep=before_sleep,
        # Out of attempts: the last row stands (an `error` one), never an exception.
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        reraise=True,
    )


def _note_attempts(
    job: RepeatJob, settings: RepeatSettings, row: Row, records: Sequence[Mapping[str, Any]]
) -> None:
    """Each attempt so far in the repeat's artifacts folder (when it was kept)."""
    if settings.artifacts_dir is None or row.get("artifacts") is None:
        return
    variant, case, repeat = job.triple
    with contextlib.suppress(OSError):  # the evidence is lost, never the row
        write_attempts(repeat_dir(settings.artifacts_dir, variant, case, repeat), records)
