"""The code stays ruff clean and its type hints hold: a regression fails the tests, not only `make lint`.

ruff runs in `make test`; mypy (over ten seconds without its cache) in the slow tier.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TREES = ["capeval", "tests", "benchmarks", "scripts", "notebooks"]


def _ruff() -> list[str]:
    try:
        import ruff  # noqa: F401  (the dev extra installs it)
    except ImportError:
        if shutil.which("ruff") is None:
            pytest.skip("ruff is not installed: install the dev extra (pip install -e '.[dev]')")
        return ["ruff"]
    return [sys.executable, "-m", "ruff"]


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(args: list[str]) -> None:
    trees = [t for t in TREES if (REPO / t).exists()]
    out = subprocess.run([*_ruff(), *args, *trees], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
def test_mypy_is_clean() -> None:
    # Type hints nobody checks drift into lies; mypy reads them as a reader would.
    try:
        import mypy  # noqa: F401  (the dev extra installs it)
    except ImportError:
        pytest.skip("mypy is not installed: install the dev extra (pip install -e '.[dev]')")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "capeval"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
