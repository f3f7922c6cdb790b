"""Shared fixtures: where the repository and the shared data live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from capeval.paperclip.derivative import DERIVATIVE_PATH, Row, load_derivative

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
