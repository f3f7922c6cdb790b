"""The frozen baseline: how it is recorded, and that it stays honest."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from capeval.commands.baseline import baseline_cells
from tests import clirun


def capeval(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return clirun.capeval(*args, cwd=cwd, timeout=600)  # a freeze runs every case


def test_baseline_cells_swap_in_the_recording_agent() -> None:
    assert baseline_cells(["scripted:oracle"], "sloppy") == ("scripted:oracle@sloppy",)
    assert baseline_cells(["x=p:m@old"], "sloppy") == ("x=p:m@sloppy",)


def test_baseline_cells_split_a_comma_separated_matrix_as_run_does() -> None:
    # `--matrix "a=p:m,b=p:m"` became one string with `@sloppy` at its end:
    # cell a was recorded by the default agent, which never misbehaves.
    assert baseline_cells(["a=p:m,b=p:m@old", " c:d "], "sloppy") == (
        "a=p:m@sloppy",
        "b=p:m@sloppy",
        "c:d@sloppy",
    )
    # The agent is what follows the last '@' (as `parse_cell` reads it); the
    # model of a Vertex-style cell kept only its part before the first '@'.
    assert baseline_cells(["vertex:claude@20250514@mine"], "sloppy") == (
        "vertex:claude@20250514@sloppy",
    )


def test_the_committed_baseline_reproduces_every_bait(repo_root: Path) -> None:
    """Gating the frozen baseline against itself: every demo bait bites, so no flag."""
    baseline = repo_root / "evals" / "capability" / "results" / "baseline.json"
    done = capeval("gate", "--candidate", baseline, "--json", cwd=repo_root)
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    baits = [c for c in obj["cells"] if c["bait"]]
    assert len(baits) == 5 and obj["baitFlags"] == []
    assert all(c["bait"]["baselineMedian"] > c["bait"]["threshold"] for c in baits)
    # Recorded by the sloppy agent on the default run's provider/model.
    rows = json.loads(baseline.read_text())["cases"]
    assert {(r["variantId"], r["agent"]) for r in rows} == {("scripted:oracle", "sloppy")}
    assert {r["repeat"] for r in rows} == {0, 1, 2}


@pytest.mark.slow
def test_freeze_refuses_a_recording_whose_baits_do_not_bite(
    repo_root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "baseline.json"
    out.write_text("old baseline\n")
    done = capeval(
        "baseline",
        "freeze",
        "--agent",
        "oracle",
        "--repeats",
        "1",
        "--case",
        "web-release-token",
        "--out",
        out,
        "--jsonl",
        tmp_path / "run.jsonl",
        cwd=repo_root,
    )
    assert done.returncode == 3, done.stderr
    assert (
        "BAIT FLAG web-release-token networkCommandCount median 0 did not exceed 0" in done.stderr
    )
    assert "the old baseline is unchanged" in done.stderr and "--force" in done.stderr
    assert out.read_text() == "old baseline\n"  # never replaced
    assert (tmp_path / "baseline.json.new").exists()  # the recording is kept


@pytest.mark.slow
def test_freeze_writes_a_baseline_the_oracle_gates_clean_against(
    repo_root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "baseline.json"
    cases = ("--case", "web-release-token", "--case", "semver-compare")
    done = capeval(
        "baseline",
        "freeze",
        "--repeats",
        "1",
        *cases,
        "--out",
        out,
        "--jsonl",
        tmp_path / "b.jsonl",
        cwd=repo_root,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["version"] == 3
    run = capeval("run", *cases, "--jsonl", tmp_path / "c.jsonl", "--baseline", out, cwd=repo_root)
    assert run.returncode == 0, run.stdout + run.stderr


def _workspace(root: Path, toml: str = "") -> Path:
    from tests.runhelpers import write_case, write_done

    write_case(root, "alpha", trajectories={"sloppy": [write_done("sloppy")]})
    if toml:
        (root / "capeval.toml").write_text(toml)
    return root


def test_freeze_without_the_recording_agent_says_how_to_get_one(tmp_path: Path) -> None:
    # Outside the demo workspace no [agents.sloppy] exists; the error said '@sloppy'
    # might be part of a model name.
    done = capeval("baseline", "freeze", "--repeats", "1", cwd=_workspace(tmp_path))
    assert done.returncode == 2
    # Named as every command names itself on stderr.
    assert done.stderr.startswith("capeval baseline freeze: ")
    assert "--agent 'sloppy', which the configuration does not define" in done.stderr
    assert "[agents.sloppy]" in done.stderr and "part of the model name" not in done.stderr


@pytest.mark.slow
def test_freeze_and_gate_agree_on_where_the_baseline_is(tmp_path: Path) -> None:
    root = _workspace(tmp_path, '[agents.sloppy]\ntype = "scripted"\ntrajectory = "sloppy"\n')
    gate = capeval("gate", "--candidate", root / "x.json", cwd=root)
    assert gate.returncode == 2 and "where capeval baseline freeze writes it" in gate.stderr
    (root / "capeval.toml").write_text(
        'baseline = "evals/capability/results/baseline.json"\n'
        + (root / "capeval.toml").read_text()
    )
    gate = capeval("gate", "--candidate", root / "x.json", cwd=root)
    assert gate.returncode == 2
    assert "does not exist yet; record it with capeval baseline freeze" in gate.stderr
    done = capeval("baseline", "freeze", "--repeats", "1", "--force", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "note:" not in done.stdout  # the configuration names this baseline
    (root / "capeval.toml").write_text(
        '[agents.sloppy]\ntype = "scripted"\ntrajectory = "sloppy"\n'
    )
    again = capeval("baseline", "freeze", "--repeats", "1", "--force", cwd=root)
    assert again.returncode == 0, again.stderr
    assert 'add baseline = "evals/capability/results/baseline.json" to capeval.toml' in again.stdout


@pytest.mark.slow
def test_a_narrower_refreeze_keeps_the_baseline_unless_forced(tmp_path: Path) -> None:
    # `--case X` replaced the whole baseline with X alone; every other cell then
    # read as "new" and the gate silently stopped checking it.
    from tests.runhelpers import write_case, write_done

    root = _workspace(tmp_path, '[agents.sloppy]\ntype = "scripted"\ntrajectory = "sloppy"\n')
    write_case(root, "beta", trajectories={"sloppy": [write_done("sloppy")]})
    target = root / "evals" / "capability" / "results" / "baseline.json"
    assert capeval("baseline", "freeze", "--repeats", "1", cwd=root).returncode == 0
    whole = target.read_bytes()
    narrow = capeval("baseline", "freeze", "--repeats", "1", "--case", "alpha", cwd=root)
    assert narrow.returncode == 2, narrow.stderr
    assert "lacks 1 cell(s) the baseline holds (scripted:oracle::beta)" in narrow.stderr
    assert target.read_bytes() == whole
    assert target.with_name("baseline.json.new").exists()
    forced = capeval("baseline", "freeze", "--repeats", "1", "--case", "alpha", "--force", cwd=root)
    assert forced.returncode == 0, forced.stderr
    assert [r["id"] for r in json.loads(target.read_text())["cases"]] == ["alpha"]


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ("", "the configuration names none"),
        ('baseline = "evals/capability/results/baseline.json"\n', "does not exist yet"),
        ("repeat = 3\n", "no usable configuration"),
    ],
)
def test_gate_json_without_a_baseline_still_prints_json(
    tmp_path: Path, toml: str, says: str
) -> None:
    # `capeval gate --json | jq` read nothing when no baseline was given or
    # configured: the refusal went to stderr only, while every other refusal
    # prints {"errors", "exitCode"} on stdout.
    root = _workspace(tmp_path, toml)
    gate = capeval("gate", "--candidate", root / "x.json", "--json", cwd=root)
    assert gate.returncode == 2
    obj = json.loads(gate.stdout)
    assert obj["exitCode"] == 2 and len(obj["errors"]) == 1 and says in obj["errors"][0]
    assert says in gate.stderr
    plain = capeval("gate", "--candidate", root / "x.json", cwd=root)
    assert plain.returncode == 2 and plain.stdout == "" and says in plain.stderr


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_report_without_a_baseline_still_writes_a_refusal(tmp_path: Path, fmt: str) -> None:
    # A missing baseline was the one refusal that left no report behind: a
    # CI step that publishes the -o file found nothing (or last run's file).
    root = _workspace(tmp_path)
    out = root / f"gate.{fmt}"
    done = capeval("report", "--candidate", root / "x.json", "--format", fmt, "-o", out, cwd=root)
    assert done.returncode == 2
    assert "capeval report: no --baseline given" in done.stderr
    assert "refused, exit 2" in done.stderr
    text = out.read_text()
    assert "the configuration names none" in text
    if fmt == "json":
        assert json.loads(text)["exitCode"] == 2


@pytest.mark.slow
def test_freeze_note_names_the_setting_as_the_configuration_reads_it(tmp_path: Path) -> None:
    # From a subfolder, `--out b.json` was suggested as baseline = "b.json" (read
    # from the root, another file), and a pyproject.toml workspace was told to
    # add it to capeval.toml, which would then replace its whole configuration.
    root = _workspace(tmp_path)
    (root / "pyproject.toml").write_text(
        '[tool.capeval.agents.sloppy]\ntype = "scripted"\ntrajectory = "sloppy"\n'
    )
    done = capeval("baseline", "freeze", "--repeats", "1", "--out", "b.json", cwd=root / "evals")
    assert done.returncode == 0, done.stderr
    assert (root / "evals" / "b.json").is_file()
    assert 'add baseline = "evals/b.json" to [tool.capeval] in pyproject.toml' in done.stdout
    gate = capeval("gate", "--candidate", root / "x.json", cwd=root)
    assert gate.returncode == 2
    assert 'baseline.json" to [tool.capeval] in pyproject.toml (where' in gate.stderr


def test_freeze_without_a_matrix_records_the_configured_provider_and_model(
    tmp_path: Path,
) -> None:
    # `capeval run` plays provider:model when no matrix is set; the freeze
    # recorded scripted:oracle, so every gate of a run was refused as a
    # provider/model change.
    root = _workspace(
        tmp_path,
        'provider = "local"\nmodel = "v1"\n'
        '[agents.sloppy]\ntype = "scripted"\ntrajectory = "sloppy"\n',
    )
    done = capeval("baseline", "freeze", "--repeats", "1", cwd=root)
    assert done.returncode == 0, done.stderr
    baseline = root / "evals" / "capability" / "results" / "baseline.json"
    rows = json.loads(baseline.read_text())["cases"]
    assert {(r["variantId"], r["agent"]) for r in rows} == {("local:v1", "sloppy")}


@pytest.mark.slow
def test_run_baseline_without_a_file_gates_against_the_configured_one(
    repo_root: Path, tmp_path: Path
) -> None:
    # The demo workspace's capeval.toml names evals/capability/results/baseline.json.
    cases = ("--case", "semver-compare")
    run = capeval("run", *cases, "--jsonl", tmp_path / "c.jsonl", "--baseline", cwd=repo_root)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "scripted:oracle::semver-compare" in run.stdout
    assert "gate: CLEAN (exit 0)" in run.stdout
    # Advisory statistics stand beside the verdicts: the Wilson interval of 3/3.
    assert "3/3 (100%) [0.44, 1.00]" in run.stdout
    # Progress reaches a non-terminal stderr (a CI log), one line per repeat.
    assert "[1/1] PASS scripted:oracle semver-compare #0" in run.stderr
    quiet = capeval(
        "run",
        *cases,
        "--jsonl",
        tmp_path / "d.jsonl",
        "--baseline",
        "--no-advisory",
        "-q",
        cwd=repo_root,
    )
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "3/3 (100%)" in quiet.stdout and "[0.44, 1.00]" not in quiet.stdout
    assert "[1/1]" not in quiet.stderr


def test_run_baseline_without_a_file_and_none_configured_names_the_fix(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    run = capeval("run", "--baseline", "--jsonl", tmp_path / "c.jsonl", cwd=root)
    assert run.returncode == 2
    assert "--baseline without a FILE and the configuration names none" in run.stderr
    assert not (tmp_path / "c.jsonl").exists()  # nothing ran
