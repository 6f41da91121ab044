"""Fixtures of the operator tests: metadata DB, an emulator, the connection pointing at it."""

from __future__ import annotations

from .fixtures import airflow_db, emulator, supervisor_channel, vertex_conn

__all__ = ["airflow_db", "emulator", "supervisor_channel", "vertex_conn"]
