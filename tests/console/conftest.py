"""A real headless Chromium (Debian's ``chromium``) driven by Playwright; never a download."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "console"
README_PICTURE = ROOT / "docs" / "console.png"
UPDATE_PICTURE_ENV = "AMV_UPDATE_SCREENSHOT"
"""Set to 1 to let the console test rewrite ``docs/console.png``, the README's picture."""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(
            "Debian's chromium is not installed (/usr/bin/chromium); scripts/test-env.sh "
            "installs it with apt where apt is available"
        )
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (git-ignored), cleared once per run of the last run's pictures."""
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    return ARTIFACTS


def save_readme_picture(page: Any, artifacts: Path) -> Path:
    """Take the README's picture of the console from ``page``.

    It always goes to the test artifacts, and to ``docs/console.png`` only with
    ``AMV_UPDATE_SCREENSHOT=1``: a test run (in CI, from a clean clone) never
    changes a file git tracks, and the committed picture changes only when
    someone asks for it.
    """
    shot = artifacts / "console.png"
    page.screenshot(path=str(shot))
    if os.environ.get(UPDATE_PICTURE_ENV) == "1":
        shutil.copyfile(shot, README_PICTURE)
    return shot


def page_errors(page: Any) -> list[str]:
    """The uncaught script errors of ``page`` from now on: a list that grows as they
    happen, for the test to find empty at the end."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors
