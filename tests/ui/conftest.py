"""Fixtures of the job view's tests: an emulator and the default connection pointing at it (the unit
tests), the real Airflow stack (the browser tests, marked ``stack``)."""

from __future__ import annotations

from tests.operators.fixtures import emulator, vertex_conn

__all__ = ["emulator", "vertex_conn"]
