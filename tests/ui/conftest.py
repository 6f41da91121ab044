"""Fixtures of the job view's tests: an emulator and the default connection pointing at it (the unit
tests); the real Airflow stack with logins and Chromium driven by Playwright (the browser tests,
marked ``stack``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.operators.fixtures import emulator, vertex_conn

from .login_stack import LoginStack

if TYPE_CHECKING:
    from playwright.sync_api import Browser

__all__ = ["browser", "chromium_path", "emulator", "login_stack", "vertex_conn"]

DAGS = Path(__file__).parent / "dags"
#: Chromium's flags: headless, no sandbox (the tests may run as root), and nothing fetched from the
#: network on its own (QUIC, first-run pages, background networking, component updates, sync)
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


def _find_chromium() -> str | None:
    found = shutil.which("chromium") or "/usr/bin/chromium"
    return found if os.access(found, os.X_OK) else None


@pytest.fixture(scope="module")
def chromium_path() -> str:
    """Debian's ``chromium`` package, installed with apt-get when missing (as PostgreSQL is for the
    stack); never a browser downloaded by Playwright. Skips only when it is missing and cannot be
    installed here (not root, or no apt-get)."""
    from tests.stack.procs import apt_install

    found = _find_chromium()
    if found is None:
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            pytest.skip(
                "the browser tests need Debian's chromium package: it is not installed, and installing "
                "it needs root and apt-get (apt-get install chromium)"
            )
        try:
            apt_install("chromium")
        except subprocess.CalledProcessError as exc:
            pytest.fail(f"apt-get install chromium failed:\n{(exc.stderr or b'').decode(errors='replace')}")
        found = _find_chromium()
    assert found is not None, "apt-get installed chromium, but no chromium executable is on PATH"
    return found


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Browser]:
    """Chromium through Playwright (a fresh temporary profile: ``launch`` makes one per browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def login_stack(request: pytest.FixtureRequest) -> Iterator[LoginStack]:
    """The real stack with logins (``login_stack.py``), for one test module: started when its first
    test needs it, stopped after its last (with the stack suite's no-leftover check)."""
    st = LoginStack(DAGS, parallelism=8)
    st.start()
    try:
        yield st
    finally:
        left = st.stop()
        if request.session.testsfailed:  # keep the logs of a failed run
            print(f"\nstack logs kept in {st.root}")
        else:
            st.cleanup()
        assert left == [], f"processes left after teardown: {left}"
