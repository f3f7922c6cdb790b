"""The CLI as a contract: usage errors exit 2 naming the flag and the fix, never a
traceback; --json output stays JSON; diagnostics go to stderr."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from capeval.cli import main
from tests.clirun import capeval

SAMPLES = Path(__file__).resolve().parents[2] / "evals" / "capability" / "samples"


@pytest.mark.parametrize("sql", ["", "   ", "-- only a comment", ";"])
def test_query_without_a_statement_is_bad_usage(sql: str) -> None:
    # DuckDB returns no cursor for these: an AttributeError traceback, exit 1.
    done = capeval("query", "--from", SAMPLES, "--", sql)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "holds no SQL statement" in done.stderr and "capeval query --list" in done.stderr


def test_an_empty_named_query_is_named_by_its_file(tmp_path: Path) -> None:
    (tmp_path / "evals" / "capability" / "cases").mkdir(parents=True)
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "nothing.sql").write_text("-- to be written\n")
    done = capeval("query", "nothing", "--from", SAMPLES, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "analysis/nothing.sql holds no SQL statement" in done.stderr


@pytest.mark.slow
def test_plot_to_an_unwritable_path_is_bad_usage(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = capeval("plot", "heatmap", SAMPLES, "-o", blocker / "heatmap.png")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"cannot write {blocker / 'heatmap.png'}: {blocker} is a file, not a folder" in (
        done.stderr
    )
    assert "pass -o with a writable path" in done.stderr


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["paperclip", "run", "--jsonl", "{blocker}/rows.jsonl"], "--jsonl"),
        (["paperclip", "report", "--out", "{blocker}/evidence"], "--out"),
    ],
)
def test_paperclip_outputs_that_cannot_be_written_are_bad_usage(
    tmp_path: Path, paperclip_derivative: Path, args: list[str], flag: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    argv = [a.format(blocker=blocker) for a in args]
    done = capeval(*argv, "--file", paperclip_derivative)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"cannot write {blocker}/" in done.stderr and "is a file, not a folder" in done.stderr
    assert f"pass {flag} with a writable path" in done.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "1e12", "-1", "0", "soon"])
@pytest.mark.parametrize("command", [["agents", "check"], ["paperclip", "live"]])
def test_timeouts_must_be_finite_positive_seconds(command: list[str], value: str) -> None:
    # `nan` ended every wait at once (a check "timed out" instantly); `inf`
    # and 1e12 crashed the wait with OverflowError; -1 was taken as given.
    result = CliRunner().invoke(main, [*command, "--timeout", value])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--timeout'" in result.output
    assert "seconds" in result.output


def test_baseline_freeze_to_an_unwritable_out_is_bad_usage(tmp_path: Path) -> None:
    from tests.runhelpers import write_case, write_done

    write_case(tmp_path, "alpha", trajectories={"sloppy": [write_done("sloppy")]})
    (tmp_path / "capeval.toml").write_text(
        '[agents.sloppy]\ntype = "scripted"\ntrajectory = "sloppy"\n'
    )
    (tmp_path / "a-file").write_text("")
    done = capeval(
        "baseline", "freeze", "--repeats", "1", "--out", "a-file/baseline.json", cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot write a-file/baseline.json: a-file is a file, not a folder" in done.stderr


@pytest.mark.slow
def test_run_json_with_a_refused_gate_says_why(tmp_path: Path) -> None:
    # `"gate": null` told a machine nothing; the reasons went to stdout in
    # text mode, mixed into the run's own table.
    import json

    from tests.runhelpers import write_case, write_done

    write_case(tmp_path, "alpha", trajectories={"sloppy": [write_done("sloppy")]})
    base = tmp_path / "base.jsonl"
    first = capeval("run", "--matrix", "v=scripted:oracle", "--jsonl", base, "-q",
                    "--no-artifacts", cwd=tmp_path)  # fmt: skip
    assert first.returncode == 0, first.stderr
    args = ("run", "--matrix", "v=scripted:sloppy", "-q", "--no-artifacts", "--baseline", base)
    done = capeval(*args, "--json", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    doc = json.loads(done.stdout)
    assert doc["exitCode"] == 2
    assert doc["gate"]["exitCode"] == 2
    assert "provider/model changed" in doc["gate"]["errors"][0]
    text = capeval(*args, cwd=tmp_path)
    assert text.returncode == 2
    assert "provider/model changed" in text.stderr and "provider/model" not in text.stdout


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_query_without_name_or_sql_is_a_usage_error(extra: list[str]) -> None:
    # It printed the list of named queries and exited 0: with --json a
    # script whose query came out empty read that list as its answer.
    result = CliRunner().invoke(main, ["query", *extra])
    assert result.exit_code == 2, result.output
    assert "missing NAME|SQL" in result.stderr and "flaky_cells" in result.stderr
    assert result.stdout == ""
    listing = CliRunner().invoke(main, ["query", "--list", *extra])
    assert listing.exit_code == 0 and "flaky_cells" in listing.stdout
