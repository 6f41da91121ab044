"""Polling with a deadline, the one way the tests wait for a state (never a bare sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["poll_until"]


def poll_until(check: Callable[[], Any], *, timeout: float, interval: float = 0.5, what: str = "") -> Any:
    """Call `check` until it returns something truthy and return that; TimeoutError naming `what`
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"not reached within {timeout:g}s: {what or check}")
        time.sleep(interval)
