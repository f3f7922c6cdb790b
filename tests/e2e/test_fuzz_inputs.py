"""Random bytes, random JSON and random nesting through every command that takes a file.

Whatever the file holds, a command either reads it (exit 0, 1 or 3) or
refuses it (exit 2) with a message naming the file; it never prints a
traceback (a crash exits 1, the gate's "regressed"), never runs past a time
bound and never grows past a memory bound. Each command runs as users run
it, a fresh process, under RLIMIT_AS so a runaway allocation fails fast.

Bounded: a fixed number of examples per command (hypothesis, derandomized
so CI failures reproduce), each process with a timeout.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.rowfactory import result_row

pytestmark = pytest.mark.slow

MEMORY_BOUND = 2 << 30  # bytes of address space per command
TIME_BOUND = 60  # seconds per command
EXAMPLES = 12

REPO = Path(__file__).resolve().parents[2]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))


def run(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capeval.cli", *map(str, args)],
        cwd=cwd,
        env={**os.environ, "CAPEVAL_PIPE_WAIT_S": "1"},
        capture_output=True,
        text=True,
        timeout=TIME_BOUND,
        preexec_fn=_limit_memory,
    )


# -- what a hostile file may hold ---------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _row_with(changes: dict[str, Any]) -> str:
    row = result_row("alpha", passed=True)
    row.update(changes)
    return json.dumps(row)


contents = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v)),
    st.integers(min_value=50, max_value=3000).map(lambda n: "[" * n + "]" * n),
    st.integers(min_value=50, max_value=3000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.dictionaries(
        st.sampled_from(["passed", "id", "behaviors", "repeat", "runId", "cases"]),
        json_values,
        max_size=3,
    ).map(_row_with),
    st.lists(json_values, max_size=3).map(lambda vs: "\n".join(json.dumps(v) for v in vs)),
    st.text(max_size=200).map(lambda t: '{"version": 3, "cases": [' + t),
    st.sampled_from(
        [
            "",
            "\ufeff{}",
            _row_with({}) + "\n" + _row_with({})[:30],
            _row_with({"passed": "yes"}),
            _row_with({"behaviors": {"shellCommandCount": True}}),
            '{"passed": true, "passed": false}',
            "NaN",
            "1" * 5000,
        ]
    ),
)


# A shard's plan as `capeval run --shard 1/1` writes it, for one triple (v, alpha, 0).
SHARD_PLAN = {
    **{name: None for name in ("tiers", "provider", "model", "agent", "max_turns")},
    **{name: None for name in ("agent_timeout_s", "verify_timeout_s", "isolation")},
    **{name: None for name in ("ask_permissions", "allow_provider_fallback")},
    "cases": [],
    "matrix": [],
    "repeats": 1,
    "shard": "1/1",
    "runId": "r",
    "resolved": {"variants": [{"id": "v"}], "cases": ["alpha"]},
    "sharding": {
        "index": 1,
        "count": 1,
        "rule": "lpt-case-ms-v1",
        "weights": {},
        "planDigest": "d",
    },
}


def _merge_stream(f: Path) -> list[str | Path]:
    """`capeval merge` of a hostile stream beside a shard's plan."""
    f.with_name(f.name + ".plan.json").write_text(json.dumps(SHARD_PLAN))
    return ["merge", f, "-o", f.with_name(f"{f.name}.merged.jsonl")]


def _merge_plan(f: Path) -> list[str | Path]:
    """`capeval merge` of a shard's stream beside a hostile plan (`f`)."""
    stream = f.with_name(f.name.removesuffix(".plan.json"))
    stream.write_text(_row_with({"runId": "r", "variantId": "v"}) + "\n")
    return ["merge", stream, "-o", f.with_name(f"{stream.name}.merged.jsonl")]


def _files_commands(tmp: Path) -> dict[str, Callable[[Path], list[str | Path]]]:
    good = tmp / "good.jsonl"
    good.write_text(_row_with({}) + "\n")
    return {
        "merge": _merge_stream,
        "merge-plan": _merge_plan,
        "aggregate": lambda f: ["aggregate", f],
        "gate": lambda f: ["gate", "--baseline", good, "--candidate", f, "--no-advisory"],
        "compare-baseline": lambda f: ["compare", "--baseline", f, "--candidate", good],
        "report": lambda f: ["report", "--baseline", good, "--candidate", f, "--format", "md"],
        "history": lambda f: ["history", f],
        "query": lambda f: ["query", "--from", f, "SELECT count(*) FROM repeats"],
        "behaviors": lambda f: ["behaviors", f],
        "behaviors-stream": lambda f: ["behaviors", "--stream", "codex", f],
        "paperclip-validate": lambda f: ["paperclip", "validate", "--file", f],
    }


COMMANDS = [
    "aggregate",
    "gate",
    "compare-baseline",
    "report",
    "history",
    "query",
    "behaviors",
    "behaviors-stream",
    "paperclip-validate",
    "merge",
    "merge-plan",
]
SUFFIX = {
    "history": ".jsonl",
    "query": ".jsonl",
    "paperclip-validate": ".yaml",
    "merge": ".jsonl",
    "merge-plan": ".jsonl.plan.json",
}


def check(proc: subprocess.CompletedProcess[str], file: Path) -> None:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode in (0, 1, 2, 3), (proc.returncode, out[-3000:])
    if proc.returncode == 2:
        assert file.name in out, f"exit 2 without naming {file.name}: {out[-2000:]}"


@pytest.mark.parametrize("command", COMMANDS)
def test_hostile_contents_are_read_or_refused_by_name(
    command: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    build = _files_commands(tmp)[command]
    counter = iter(range(10**6))

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(data=contents)
    def one(data: str | bytes) -> None:
        file = tmp / f"input-{next(counter)}{SUFFIX.get(command, '.json')}"
        if isinstance(data, str):
            file.write_text(data, encoding="utf-8", errors="surrogatepass")
        else:
            file.write_bytes(data)
        check(run(build(file), cwd=tmp), file)

    one()


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_file_that_is_not_a_regular_file_is_refused_by_name(
    command: str, kind: str, tmp_path: Path
) -> None:
    odd = tmp_path / f"odd{SUFFIX.get(command, '.json')}"
    if kind == "fifo":
        os.mkfifo(odd)  # no writer: opening it to read would wait forever
    else:
        odd.mkdir()
    proc = run(_files_commands(tmp_path)[command](odd), cwd=tmp_path)
    check(proc, odd)
    if kind == "fifo" or command not in ("history", "query"):  # those two take folders
        assert proc.returncode == 2
