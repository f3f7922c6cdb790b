"""The committed Paperclip derivative as YAML, and drifted copies of it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml


@pytest.fixture(scope="session")
def doc(paperclip_derivative: Path) -> dict[str, Any]:
    """The derivative's YAML document; copy it before changing it."""
    return yaml.safe_load(paperclip_derivative.read_text(encoding="utf-8"))


@pytest.fixture
def drifted(tmp_path: Path, doc: dict[str, Any]) -> Callable[..., Path]:
    """`drifted(case_id, **fields)`: a copy of the derivative with one row's
    fields changed, written to tmp_path; its path."""

    def write(case_id: str, **fields: Any) -> Path:
        obj = copy.deepcopy(doc)
        next(r for r in obj["rows"] if r["id"] == case_id).update(fields)
        path = tmp_path / "drift.yaml"
        path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
        return path

    return write
