"""Shared fixtures: where the repository and the shared data live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from capeval.paperclip.derivative import DERIVATIVE_PATH, Row, load_derivative

# No per-example deadline: on a shared CI machine one example of a property
# test took 347 ms against Hypothesis's 200 ms default, failing a correct
# test on timing alone (timing belongs in benchmarks/, not in tests).
settings.register_profile("capeval", deadline=None)
settings.load_profile("capeval")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CAPEVAL_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set CAPEVAL_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def real_results(shared_dir: Path) -> Path:
    return shared_dir / "real-results"


@pytest.fixture(scope="session")
def agent_streams(shared_dir: Path) -> Path:
    return shared_dir / "agent-streams"


@pytest.fixture(scope="session")
def paperclip_derivative() -> Path:
    """The committed Paperclip derivative (106 rows, 16 groups)."""
    return REPO / DERIVATIVE_PATH


@pytest.fixture(scope="session")
def paperclip_rows(paperclip_derivative: Path) -> list[Row]:
    return load_derivative(paperclip_derivative)
