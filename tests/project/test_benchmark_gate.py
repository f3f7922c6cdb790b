"""The gate benchmark's comparison gates do the gate's work: same exit code as capeval.

A speed ratio against a gate that decides something else would mean nothing.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from capeval.analysis.gatecheck import gate_files

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_gate", BENCH / "gate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _bench().generate(tmp_path_factory.mktemp("gate"), variants=2, cases=11, repeats=9)


def test_generated_files_have_the_asked_shape(small: dict[str, Path]) -> None:
    lines = small["base.jsonl"].read_text().splitlines()
    assert len(lines) == 2 * 11 * 9
    assert '"repeats": 9' in small["base.json"].read_text()[:300]


def test_pure_python_gates_agree_with_capeval(small: dict[str, Path]) -> None:
    bench = _bench()
    base, cand = small["base.jsonl"], small["cand.jsonl"]
    expected = gate_files(base, [cand], root=base.parent).exit_code
    assert expected in (1, 3)  # the generated candidate regresses or trips a bait: a real verdict
    assert bench.straightforward_gate(base, cand) == expected
    assert bench.streaming_gate(base, cand) == expected
    assert bench.reference_gate(base, cand) == expected
    assert gate_files(small["base.json"], [small["cand.json"]], root=base.parent).exit_code == (
        expected
    )


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_gate_agrees_with_capeval(small: dict[str, Path]) -> None:
    base, cand = small["base.jsonl"], small["cand.jsonl"]
    expected = gate_files(base, [cand], root=base.parent).exit_code
    done = subprocess.run(["node", str(BENCH / "gate_node.mjs"), str(base), str(cand)], check=False)
    assert done.returncode == expected


def test_pure_python_gates_agree_on_a_candidate_equal_to_its_baseline(
    small: dict[str, Path],
) -> None:
    bench = _bench()
    base = small["base.jsonl"]
    expected = gate_files(base, [base], root=base.parent).exit_code
    assert expected in (0, 3)
    assert bench.straightforward_gate(base, base) == expected
    assert bench.streaming_gate(base, base) == expected


@pytest.mark.slow
def test_measure_reports_every_contender_and_the_quiet_rounds(small: dict[str, Path]) -> None:
    """The timing loop itself, on small files (no settle pause): shapes, not speeds."""
    bench = _bench()
    bench.SETTLE_S = 0.0
    timings = bench.measure(bench.contenders(small, None), runs=2, slow_runs=1)
    probe = timings.pop("cpuProbe")
    assert timings["capeval-jsonl"]["runs"] == 2 and timings["python-streaming"]["runs"] == 1
    assert {t["exitCodes"][0] for t in timings.values()} == {
        timings["capeval-jsonl"]["exitCodes"][0]
    }
    assert "timesCapevalJsonl" in timings["python-straightforward"]
    assert 0 <= probe["quietRounds"] <= 2
    quiet = probe["capevalJsonlQuietMedianS"]
    assert (quiet is None) == (probe["quietRounds"] == 0)
    assert (
        quiet is None
        or timings["capeval-jsonl"]["wallMinS"] <= quiet <= timings["capeval-jsonl"]["wallMaxS"]
    )
