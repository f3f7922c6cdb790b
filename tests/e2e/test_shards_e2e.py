"""A sharded run end to end: N shard processes at once, merged, gated as the unsharded run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from capeval.core.row import triple
from tests.clirun import capeval
from tests.runhelpers import read_rows

MATRIX = "scripted:oracle,sloppy=scripted:oracle@sloppy"
CASES = ("add-top-flag", "quote-shell-vars", "web-release-token", "semver-compare")


def _workspace(repo_root: Path, root: Path) -> None:
    """The demo workspace (its cases, fixtures, configuration and frozen baseline)."""
    shutil.copytree(repo_root / "evals", root / "evals", ignore=shutil.ignore_patterns("*.jsonl"))
    shutil.copy(repo_root / "capeval.toml", root / "capeval.toml")


def _run_args(*extra: str) -> list[str]:
    cases = [arg for case in CASES for arg in ("--case", case)]
    return ["run", "-q", "--matrix", MATRIX, "--repeats", "2", *cases, *extra]


def _verdicts(doc: dict[str, Any]) -> dict[str, Any]:
    """What a gate decided, without the one metric that is a time (maxTurnDurationMs)."""
    return {
        "summary": {k: v for k, v in doc["summary"].items() if "ehavior" not in k},
        "baitFlags": doc["baitFlags"],
        "clean": doc["clean"],
        "cells": [
            {
                "resultKey": c["resultKey"],
                "status": c["status"],
                "candidate": c["candidate"],
                "bait": c.get("bait"),
                "behaviors": [
                    (b["metric"], b["candidateMedian"], b["verdict"])
                    for b in c.get("behaviors") or []
                    if b["metric"] != "maxTurnDurationMs"
                ],
            }
            for c in doc["cells"]
        ],
    }


@pytest.mark.slow
def test_three_shards_at_once_merge_into_the_run_and_gate_as_it(
    repo_root: Path, tmp_path: Path
) -> None:
    _workspace(repo_root, tmp_path)
    whole = capeval(*_run_args("--jsonl", "whole.jsonl"), cwd=tmp_path, timeout=600)
    assert whole.returncode in (0, 1), whole.stderr

    shards = [
        subprocess.Popen(
            [sys.executable, "-m", "capeval", *_run_args("--shard", f"{i}/3", "--run-id", "ci-42")],
            cwd=tmp_path,
            env={**os.environ},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (1, 2, 3)
    ]
    for proc in shards:
        try:
            _out, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode in (0, 1), err
    results = tmp_path / "evals/capability/results"
    streams = sorted(results.glob("ci-42.shard-*-of-3.jsonl"))
    assert len(streams) == 3
    # Weighed by the configured baseline's durations, the same in every shard's plan.
    weights = json.loads(Path(f"{streams[0]}.plan.json").read_text())["sharding"]["weights"]
    assert set(weights) == set(CASES)

    merged = capeval(
        "merge", *streams, "-o", "merged/run.jsonl", "--out", "merged/run.json", cwd=tmp_path
    )
    assert merged.returncode == 0, merged.stderr
    rows = read_rows(tmp_path / "merged/run.jsonl")
    whole_rows = read_rows(tmp_path / "whole.jsonl")
    assert sorted(map(triple, rows)) == sorted(map(triple, whole_rows))
    assert len(rows) == len({triple(r) for r in rows}) == 16
    assert {r["provenance"]["shard"] for r in rows} == {"1/3", "2/3", "3/3"}
    assert {r["runId"] for r in rows} == {"ci-42"}

    def gate(*candidates: str) -> dict[str, Any]:
        args = [a for c in candidates for a in ("--candidate", c)]
        done = capeval("gate", *args, "--json", cwd=tmp_path)
        assert done.returncode in (0, 1, 3), done.stderr
        return {"exit": done.returncode, **_verdicts(json.loads(done.stdout))}

    expected = gate("whole.jsonl")
    assert gate("merged/run.jsonl") == expected
    assert gate("merged/run.json") == expected
    assert gate(*(str(s) for s in streams)) == expected  # the shard files as they are
    assert any(c["status"] == "new" for c in expected["cells"])  # the sloppy variant

    def report(name: str, *candidates: str) -> str:
        args = [a for c in candidates for a in ("--candidate", c)]
        done = capeval("report", *args, "-o", name, cwd=tmp_path)
        assert done.returncode in (0, 1, 3), done.stderr
        text = (tmp_path / name).read_text()
        return "\n".join(line for line in text.splitlines() if "Candidate:" not in line)

    # The same report, but for the candidate's file names.
    assert report("shards.md", *(str(s) for s in streams)) == report(
        "merged.md", "merged/run.jsonl"
    )

    history = capeval("history", str(results), cwd=tmp_path)
    assert history.returncode == 0, history.stderr
    ci_runs = [line for line in history.stdout.splitlines() if line.startswith("ci-42 ")]
    assert len(ci_runs) == 1, history.stdout  # three files, one run
