"""Fixtures of the viewer's tests: the demo matrix run once, a real headless Chromium."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.view.runs import demo_matrix

# Debian's chromium (`.ci/run` installs it); Playwright's own browser
# download is not available here. CAPEVAL_CHROMIUM names another binary.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox",  # tests run as root in CI containers, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scripted demo matrix (sloppy and oracle trajectories of every demo case), run once."""
    return demo_matrix(tmp_path_factory.mktemp("demo"))


def chromium_path() -> str | None:
    named = os.environ.get("CAPEVAL_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    for candidate in CHROMIUM_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium")


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """A Playwright browser context on Debian's Chromium, headless, with a fresh profile."""
    sync_api = pytest.importorskip(
        "playwright.sync_api",
        reason="playwright is not installed: install the dev extra (pip install -e '.[dev]')",
    )
    executable = chromium_path()
    if executable is None:
        pytest.skip(
            "no Chromium found (looked for /usr/bin/chromium; `apt-get install chromium`, "
            "or set CAPEVAL_CHROMIUM)"
        )
    import tempfile

    with (
        sync_api.sync_playwright() as playwright,
        tempfile.TemporaryDirectory(prefix="capeval-view-profile-") as profile,
    ):
        context = playwright.chromium.launch_persistent_context(
            profile,  # a fresh --user-data-dir, removed afterwards
            executable_path=executable,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()
