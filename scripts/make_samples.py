"""Regenerate the committed sample results (evals/capability/samples/).

The samples are what the notebooks, the named-query tests and the README
examples run on, so they are produced by capeval itself: real `capeval run`
invocations of the scripted agent over a few demo cases, in a scratch copy
of this workspace (so the repository's own cases are never touched).

The story they tell: a team develops an agent build called `dev` next to
the reference `oracle` trajectory. In run 1 `dev` is sloppy (it trips every
bait); in runs 2 and 3 it does the right thing but sometimes throws its own
work away (a flaky build: an extra command that reverts the workdir with
probability 0.4 on some cases); in run 4 it is fixed. Run 3 also measures
the `sloppy` trajectory, and run 2 writes a v3 JSON copy beside its JSON
Lines stream (history must count that run once). Each run is made from its
own commit of the scratch workspace, so the `gitCommit` column changes.

    .venv/bin/python scripts/make_samples.py          # about two minutes

Flaky outcomes are random, so regenerating changes the exact counts; the
tests compute their expectations from whatever samples are committed.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "evals" / "capability" / "samples"
CASES = (
    "semver-compare",
    "fix-pagination",
    "inventory-two-bugs",
    "env-release-build",
    "multiline-settings-edit",
    "wait-for-slow-build",
    "web-release-token",
)
# Cases on which the flaky build sometimes reverts its own work.
FLAKY_CASES = ("semver-compare", "inventory-two-bugs", "env-release-build", "fix-pagination")
REVERT = "if (( RANDOM % 100 < 40 )); then git checkout -q -- . && git clean -fdq; fi"
REPEATS = 3


@dataclass(frozen=True)
class RunSpec:
    name: str
    dev_trajectory: str
    matrix: str
    v3_copy: bool = False


RUNS = (
    RunSpec("run1-dev-sloppy", "sloppy", "oracle=scripted:oracle,dev=scripted:dev@dev"),
    RunSpec("run2-dev-flaky", "flaky", "oracle=scripted:oracle,dev=scripted:dev@dev", True),
    RunSpec(
        "run3-dev-flaky",
        "flaky",
        "oracle=scripted:oracle,dev=scripted:dev@dev,sloppy=scripted:sloppy",
    ),
    RunSpec("run4-dev-fixed", "oracle", "oracle=scripted:oracle,dev=scripted:dev@dev"),
)

CONFIG = """# Scratch workspace for scripts/make_samples.py.
agent = "scripted"
concurrency = 2

[timeouts]
agent = 300
verify = 60

[agents.dev]
type = "scripted"
trajectory = "{trajectory}"
"""


def flaky_trajectory(oracle: dict, revert: bool) -> dict:
    """The oracle's trajectory, plus (when `revert`) a last call that may undo everything."""
    flaky = copy.deepcopy(oracle)
    flaky["description"] = "Oracle moves" + (
        ", then sometimes reverts its work." if revert else "."
    )
    if revert:
        last = max(i for i, turn in enumerate(flaky["turns"]) if turn.get("toolCalls"))
        flaky["turns"][last]["toolCalls"].append(
            {"name": "run_shell", "arguments": {"command": REVERT}}
        )
    return flaky


def git(workspace: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=capeval samples", "-c", "user.email=samples@capeval.invalid",
         "-c", "commit.gpgsign=false", *args],
        cwd=workspace, check=True, capture_output=True,
    )  # fmt: skip


def make_workspace(scratch: Path) -> Path:
    workspace = scratch / "workspace"
    source = REPO / "evals" / "capability"
    shutil.copytree(source / "fixtures", workspace / "evals" / "capability" / "fixtures")
    for case in CASES:
        target = workspace / "evals" / "capability" / "cases" / case
        shutil.copytree(source / "cases" / case, target)
        oracle = json.loads((target / "trajectories" / "oracle.json").read_text("utf-8"))
        (target / "trajectories" / "flaky.json").write_text(
            json.dumps(flaky_trajectory(oracle, case in FLAKY_CASES), indent=2) + "\n", "utf-8"
        )
    git(workspace, "init", "-q")
    return workspace


def run(workspace: Path, scratch: Path, spec: RunSpec) -> list[Path]:
    (workspace / "capeval.toml").write_text(CONFIG.format(trajectory=spec.dev_trajectory), "utf-8")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "--allow-empty", "-m", f"dev agent plays {spec.dev_trajectory}")
    jsonl = scratch / f"{spec.name}.jsonl"
    argv = [
        sys.executable, "-m", "capeval.cli", "run", "--root", str(workspace),
        "--matrix", spec.matrix, "--repeats", str(REPEATS), "--jsonl", str(jsonl), "--quiet",
    ]  # fmt: skip
    for case in CASES:
        argv += ["--case", case]
    outputs = [jsonl]
    if spec.v3_copy:
        outputs.append(scratch / f"{spec.name}.json")
        argv += ["--out", str(outputs[-1])]
    proc = subprocess.run(argv, cwd=workspace, capture_output=True, text=True)
    if proc.returncode not in (0, 1):  # 1: some repeat failed, as intended
        raise SystemExit(f"capeval run failed ({proc.returncode}):\n{proc.stderr}")
    expected = REPEATS * len(CASES) * len(spec.matrix.split(","))
    rows = [line for line in jsonl.read_text("utf-8").splitlines() if line.strip()]
    if len(rows) != expected:
        raise SystemExit(f"{jsonl.name}: {len(rows)} rows, expected {expected}")
    print(f"{spec.name}: {len(rows)} rows\n{proc.stdout}", file=sys.stderr)
    return outputs


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="capeval-samples-") as tmp:
        scratch = Path(tmp)
        workspace = make_workspace(scratch)
        produced = [path for spec in RUNS for path in run(workspace, scratch, spec)]
        SAMPLES.mkdir(parents=True, exist_ok=True)
        for old in [*SAMPLES.glob("*.jsonl"), *SAMPLES.glob("*.json")]:
            old.unlink()
        for path in produced:
            shutil.copy2(path, SAMPLES / path.name)
    total = sum(p.stat().st_size for p in SAMPLES.iterdir() if p.is_file())
    for path in sorted(SAMPLES.iterdir()):
        print(f"{path.relative_to(REPO)}  {path.stat().st_size:,} bytes")
    print(f"total {total:,} bytes")


if __name__ == "__main__":
    main()
