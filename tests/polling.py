"""Polling with a deadline, the one way the tests wait for a state (never a bare sleep).

``poll_until`` lives with the emulator's suite (emulator/tests/polling.py), which runs from the
emulator's own install without this one; the provider's tests load it from there.
"""

from __future__ import annotations

from tests.emulator_files import load

__all__ = ["poll_until"]

poll_until = load("polling").poll_until
