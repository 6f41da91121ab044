"""The service's clock as the provider reads it (hooks/service_clock.py): the host's for Vertex AI and
for an emulator playing no scenario, an emulator's ``GET /emulator/clock`` pace while it plays one; the
last reading (or the host's clock) when the emulator cannot be read."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest

from airflow_vertex_dist.hooks import service_clock
from airflow_vertex_dist.hooks.connection import VertexConnection
from airflow_vertex_dist.hooks.service_clock import (
    HOST_TIME,
    MIN_POLL_S,
    ServiceTime,
    aread_service_time,
    read_service_time,
)
from vertex_emulator import testing
from vertex_emulator.scenario.loader import parse_scenario

NIGHT = 'version: 1\ncompression: 600\ntimeline:\n  - {at: "10:00", stockout_after_s: 7}\n'


def _emulator_conn(web: str) -> VertexConnection:
    extra = {"project": "p", "location": "us-central1", "emulator": True, "api_endpoint": "127.0.0.1:1"}
    return VertexConnection.from_extra({**extra, "web_endpoint": web})


@pytest.fixture(autouse=True)
def _no_readings_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service_clock, "_readings", {})


def test_vertex_ai_and_an_emulator_without_a_web_endpoint_keep_the_host_clock() -> None:
    google = VertexConnection.from_extra({"project": "p", "location": "us-central1"})
    assert read_service_time(google) is HOST_TIME
    grpc_only = VertexConnection.from_extra({"emulator": True, "api_endpoint": "127.0.0.1:1"})
    assert read_service_time(grpc_only) is HOST_TIME
    assert abs(HOST_TIME.now_ns() - time.time_ns()) < 1e9
    assert HOST_TIME.real_s(60) == 60 and HOST_TIME.poll_s(10) == 10


def test_a_played_scenario_sets_the_pace(tmp_path: Path) -> None:
    with testing.running_emulator(tmp_path, scenario=parse_scenario(NIGHT)) as em:
        pace = read_service_time(_emulator_conn(em.rest_endpoint))
        assert pace.compression == 600
        assert pace.real_s(3600) == 6 and pace.poll_s(60) == MIN_POLL_S and pace.poll_s(600) == 1
        # service time runs ahead at 600 s a second: a tenth of a second later it is a minute on
        before = pace.now_ns()
        time.sleep(0.1)  # the pace itself is what is measured here, not a state waited for
        assert 50e9 < pace.now_ns() - before < 200e9
        assert asyncio.run(aread_service_time(_emulator_conn(em.rest_endpoint))) is pace  # kept a second


def test_an_emulator_that_cannot_be_read_leaves_the_host_clock() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    pace = read_service_time(_emulator_conn(f"http://127.0.0.1:{port}"))
    assert pace.compression == 1 and abs(pace.now_ns() - time.time_ns()) < 1e9


def test_a_failed_read_goes_on_from_the_last_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "http://127.0.0.1:9/emulator/clock"
    last = ServiceTime(compression=100.0, read_ns=time.time_ns() + 10**12, read_at=time.monotonic() - 5)
    monkeypatch.setitem(service_clock._readings, url, last)
    pace = read_service_time(_emulator_conn("http://127.0.0.1:9"))
    assert pace.compression == 100 and abs(pace.now_ns() - last.now_ns()) < 1e9
