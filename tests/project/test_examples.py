"""The ready-made CI files in examples/: they parse, and every capeval command in them
exists with the flags they pass (docs/scale-out.md shows the same files)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from capeval.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
WORKFLOW = EXAMPLES / "github-actions" / "capeval-shards.yml"
SHARDS_JOB = EXAMPLES / "kubernetes" / "capeval-shards-job.yaml"
MERGE_JOB = EXAMPLES / "kubernetes" / "capeval-merge-job.yaml"
FILES = sorted(p for p in EXAMPLES.rglob("*") if p.suffix in (".yml", ".yaml"))

# What a script word may hold in place of a value: a GitHub expression, a shell
# variable or arithmetic. Each becomes a plausible value ("2"): the flags are
# what is checked, and every value there is a count, an index or a path.
_EXPRESSION = re.compile(r"\$\{\{[^}]*\}\}|\$\(\([^)]*\)\)|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\?")
_SHELL_WORDS = {";", "&&", "||", "|", ">", ">>", "then", "fi", "else", "do", "done"}


def _documents(path: Path) -> list[Any]:
    return list(yaml.safe_load_all(path.read_text(encoding="utf-8")))


def _scripts(node: Any) -> Iterator[str]:
    """Every shell script in a document: GitHub `run:` steps, Kubernetes `args`."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "run" and isinstance(value, str):
                yield value
            elif key == "args" and isinstance(value, list):
                yield from (v for v in value if isinstance(v, str))
            else:
                yield from _scripts(value)
    elif isinstance(node, list):
        for item in node:
            yield from _scripts(item)


def _capeval_calls(script: str) -> Iterator[list[str]]:
    """The argument lists of the capeval commands a script runs (`capeval` where a
    command starts: a line's first word, or after `;`, `&&`, `||`, `then`, ...)."""
    starts = {";", "&&", "||", "|", "then", "else", "do", "if", "!"}
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(_EXPRESSION.sub("2", line), comments=True)
        call: list[str] | None = None
        for index, word in enumerate(words):
            if call is not None:
                if word in _SHELL_WORDS:
                    yield call
                    call = None
                else:
                    call.append(word)
            if call is None and word == "capeval" and (index == 0 or words[index - 1] in starts):
                call = []
        if call is not None:
            yield call


def _calls() -> list[tuple[str, list[str]]]:
    return [
        (f"{path.relative_to(REPO)}: capeval {' '.join(call)}", call)
        for path in FILES
        for doc in _documents(path)
        for script in _scripts(doc)
        for call in _capeval_calls(script)
    ]


CALLS = _calls()


def test_the_examples_parse_as_yaml() -> None:
    assert {WORKFLOW, SHARDS_JOB, MERGE_JOB} <= set(FILES)
    for path in FILES:
        assert all(isinstance(doc, dict) for doc in _documents(path)), path


def test_the_workflow_runs_a_matrix_of_shards_then_a_merge_that_gates() -> None:
    (flow,) = _documents(WORKFLOW)
    assert True in flow or "on" in flow  # YAML 1.1 reads the key `on` as true
    shard, merge = flow["jobs"]["shard"], flow["jobs"]["merge"]
    count = int(flow["env"]["SHARDS"])
    assert shard["strategy"]["matrix"]["shard"] == list(range(1, count + 1))
    assert shard["strategy"]["fail-fast"] is False
    assert merge["needs"] == "shard" and merge["if"] == "always()"
    text = WORKFLOW.read_text()
    assert "$GITHUB_STEP_SUMMARY" in text and "gh pr comment" in text
    assert "--run-id" in text and "pull-requests: write" in text


def test_the_kubernetes_job_takes_its_shard_from_the_completion_index() -> None:
    (job,) = _documents(SHARDS_JOB)
    spec = job["spec"]
    assert job["kind"] == "Job" and spec["completionMode"] == "Indexed"
    (container,) = spec["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert int(env["SHARDS"]) == spec["completions"] == spec["parallelism"]
    script = "\n".join(container["args"])
    assert "JOB_COMPLETION_INDEX + 1" in script and '--shard "$shard/$SHARDS"' in script
    (merge,) = _documents(MERGE_JOB)
    merge_env = {
        e["name"]: e.get("value") for e in merge["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert merge_env["RUN_ID"] == env["RUN_ID"]


def test_the_examples_run_capeval() -> None:
    commands = {call[0] for _, call in CALLS}
    assert {"run", "merge", "gate", "report"} <= commands


@pytest.mark.parametrize(("where", "call"), CALLS, ids=[where for where, _ in CALLS])
def test_each_capeval_command_exists_with_those_flags(where: str, call: list[str]) -> None:
    name, *args = call
    ctx = click.Context(main, info_name="capeval")
    command = main.get_command(ctx, name)
    assert command is not None, f"{where}: no command {name!r}"
    try:
        command.make_context(name, list(args), parent=ctx)
    except click.UsageError as exc:
        pytest.fail(f"{where}: {exc.format_message()}")
