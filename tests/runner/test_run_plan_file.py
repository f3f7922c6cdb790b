"""The stored plan beside a row stream (`<stream>.plan.json`): what --resume
trusts, and what --out may not replace."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.runhelpers import capeval, read_rows, write_case


def _finished_run(root: Path, *extra: str) -> Path:
    """A real run of case alpha x 2 repeats, with its last row dropped (one left to do)."""
    write_case(root, "alpha")
    write_case(root, "beta")  # today's default run would take it too
    stream = root / "rows.jsonl"
    done = capeval(root, "--jsonl", str(stream), "--case", "alpha", "--repeats", "2", *extra)
    assert done.returncode == 0, done.stderr
    lines = stream.read_text().splitlines(keepends=True)
    assert len(lines) == 2
    stream.write_text(lines[0])
    return stream


def _edited(change: Callable[[dict[str, Any]], Any]) -> Callable[[Path, dict[str, Any]], str]:
    def edit(_root: Path, plan: dict[str, Any]) -> str:
        changed = change(plan)
        return json.dumps(plan if changed is None else changed, indent=2)

    return edit


def _v3_export(root: Path, _plan: dict[str, Any]) -> str:
    return (root / "export.json").read_text()


def _drop(*names: str) -> Callable[[dict[str, Any]], None]:
    return lambda plan: [plan.pop(n) for n in names] and None


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (_edited(lambda plan: {}), "'cases'"),
        (_edited(lambda plan: []), "JSON array"),
        (_edited(lambda plan: plan.update(cases=5)), "'cases'"),
        (_edited(lambda plan: plan.update(repeats="2")), "'repeats'"),
        (_edited(lambda plan: plan.update(repeats=0)), "'repeats'"),
        (_edited(lambda plan: plan.update(provider=["x"])), "'provider'"),
        (_edited(lambda plan: plan["resolved"].update(variants=3)), "'resolved.variants'"),
        (_edited(_drop("repeats")), "'repeats'"),
        (_v3_export, "v3 results file"),
    ],
    ids=[
        "empty object",
        "array",
        "cases not a list",
        "repeats a string",
        "repeats zero",
        "provider a list",
        "resolved variants not a list",
        "repeats missing",
        "v3 export",
    ],
)
def test_resume_refuses_a_plan_of_another_shape(
    tmp_path: Path, edit: Callable[[Path, dict[str, Any]], str], named: str
) -> None:
    # `{}` was read as "no flags": today's default run (both cases, another
    # repeat count) was appended under the old run id, reported as all passed;
    # the other plans crashed the resume with a traceback (exit 1).
    stream = _finished_run(tmp_path, "--out", str(tmp_path / "export.json"))
    meta = tmp_path / "rows.jsonl.plan.json"
    meta.write_text(edit(tmp_path, json.loads(meta.read_text())))
    before = stream.read_bytes()

    refused = capeval(tmp_path, "--resume", str(stream))

    assert refused.returncode == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    assert str(meta) in refused.stderr and named in refused.stderr
    assert f"delete {meta} and pass the run's flags again" in refused.stderr
    assert stream.read_bytes() == before


@pytest.mark.slow
def test_resume_accepts_a_plan_without_the_fields_older_runs_did_not_write(
    tmp_path: Path,
) -> None:
    # `artifacts`, `resolved`, `root` and `config` came later than the flags:
    # a plan without them is still the run's own.
    stream = _finished_run(tmp_path)
    meta = tmp_path / "rows.jsonl.plan.json"
    plan = json.loads(meta.read_text())
    for name in ("artifacts", "resolved", "root", "config"):
        plan.pop(name, None)
    plan["agent_timeout_s"] = 300  # a whole number of seconds is a number too
    meta.write_text(json.dumps(plan))

    resumed = capeval(tmp_path, "--resume", str(stream), "-q")

    assert resumed.returncode == 0, resumed.stderr
    rows = read_rows(stream)
    assert [(r["id"], r["repeat"]) for r in rows] == [("alpha", 0), ("alpha", 1)]
    assert {r["runId"] for r in rows} == {plan["runId"]}


def test_resume_of_a_stream_without_rows_may_start_from_an_empty_plan(tmp_path: Path) -> None:
    # Nothing to mix with: the run starts as its flags (here none) say.
    write_case(tmp_path, "alpha")
    stream = tmp_path / "rows.jsonl"
    stream.write_text("")
    (tmp_path / "rows.jsonl.plan.json").write_text("{}")

    resumed = capeval(tmp_path, "--resume", str(stream), "-q")

    assert resumed.returncode == 0, resumed.stderr
    assert [r["id"] for r in read_rows(stream)] == ["alpha"]


@pytest.mark.parametrize("target", ["ox.jsonl.plan.json", "saved-plan.json"])
def test_out_may_not_replace_another_runs_plan(tmp_path: Path, target: str) -> None:
    # `--out ox.jsonl.plan.json` replaced run ox's plan with a v3 file, and
    # `--resume ox.jsonl` then crashed; a plan kept under another name is
    # still a plan.
    write_case(tmp_path, "alpha")
    ox = tmp_path / "ox.jsonl"
    first = capeval(tmp_path, "--case", "alpha", "--jsonl", str(ox), "-q")
    assert first.returncode == 0, first.stderr
    plan = tmp_path / "ox.jsonl.plan.json"
    out = tmp_path / target
    if target != plan.name:
        out.write_bytes(plan.read_bytes())
    kept = out.read_bytes()

    refused = capeval(
        tmp_path, "--case", "alpha", "--jsonl", str(tmp_path / "oz.jsonl"), "--out", str(out)
    )

    assert refused.returncode == 2, refused.stderr
    assert f"--out {out}: is another run's plan" in refused.stderr
    assert out.read_bytes() == kept
    assert not (tmp_path / "oz.jsonl").exists()  # refused before anything ran
    resumed = capeval(tmp_path, "--resume", str(ox), "-q")
    assert resumed.returncode == 0, resumed.stderr


def test_out_may_still_be_named_like_a_plan_when_no_run_owns_it(tmp_path: Path) -> None:
    # Neither a stream beside it nor a plan inside it: an ordinary export path,
    # and an earlier export there is replaced as usual.
    write_case(tmp_path, "alpha")
    out = tmp_path / "nothing.jsonl.plan.json"
    for _ in range(2):
        stream = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
        done = capeval(tmp_path, "--jsonl", str(stream), "--out", str(out), "-q")
        assert done.returncode == 0, done.stderr
        assert json.loads(out.read_text())["version"] == 3


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"repeats": 2.0}, "field 'repeats' is 2.0, expected a whole number of at least 1"),
        ({"max_turns": True}, "field 'max_turns' is true, expected a whole number or null"),
        ({"agent_timeout_s": float("nan")}, "field 'agent_timeout_s' is NaN, expected a number"),
        ({"artifacts": True}, "field 'artifacts' is true, expected a folder path or false"),
        ({"runId": ""}, "field 'runId' is \"\", expected a run id string"),
        (
            {"resolved": {"variants": [{"provider": "p"}]}},
            'field \'resolved.variants\' is [{"provider": "p"}], expected a list of variant',
        ),
    ],
)
def test_plan_problem_names_the_field_and_what_would_be_right(
    change: dict[str, Any], says: str
) -> None:
    from capeval.runner.planfile import SHAPE_FIELDS, plan_problem

    lists = {"cases": [], "tiers": [], "matrix": []}
    plan = {name: None for name in SHAPE_FIELDS} | lists | {"repeats": 2, "runId": "r"}
    assert plan_problem(plan, holds_rows=True) is None
    problem = plan_problem(plan | change, holds_rows=True)
    assert problem is not None and problem.startswith(says), problem
