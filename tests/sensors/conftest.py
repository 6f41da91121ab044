"""Fixtures of the sensor tests: the operator tests' (metadata DB, an emulator, the connection)."""

from __future__ import annotations

from operators.fixtures import airflow_db, emulator, vertex_conn

__all__ = ["airflow_db", "emulator", "vertex_conn"]
