"""Helpers for tests that need a real sandbox: bubblewrap, or a Docker daemon and its image.

Called at the start of a test: where the tool cannot run, the test skips and
says why (tests/sandbox_host.py installs and starts what is missing; .ci/run
calls it). What was found is remembered for the session.
"""

from __future__ import annotations

import functools

import pytest

from tests import sandbox_host


@functools.lru_cache(maxsize=1)
def _bwrap_reason() -> str | None:
    return sandbox_host.bwrap_reason()


@functools.lru_cache(maxsize=1)
def _image() -> tuple[str | None, str | None]:
    reason = sandbox_host.docker_reason()
    if reason is not None:
        return None, reason
    try:
        return sandbox_host.image(), None
    except SystemExit as exc:
        return None, f"the test image cannot be built here: {exc}"


def require(backend: str) -> None:
    """Skip, saying why, unless `backend` (none, bwrap, docker) runs here."""
    if backend == "bwrap" and _bwrap_reason() is not None:
        pytest.skip(_bwrap_reason())
    if backend == "docker":
        docker_image()


def docker_image() -> str:
    """The offline test image on the daemon DOCKER_HOST names (built once, then kept)."""
    image, reason = _image()
    if image is None:
        pytest.skip(reason)
    return image
