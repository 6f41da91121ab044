"""Helpers of the emulator probes: raw HTTP to its REST port, the security table's figures, and the
ratio test of the parser probes."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from stack.figures import Figures

from vertex_emulator import testing
from vertex_emulator.app import Emulator

__all__ = [
    "JOBS",
    "JSON",
    "PARENT",
    "RATIO",
    "SLACK_S",
    "TOKEN",
    "Http",
    "answer",
    "assert_linear",
    "best_of",
    "job_bytes",
    "job_count",
    "record",
]

PARENT = testing.PARENT
JOBS = f"/v1/{PARENT}/customJobs"
TOKEN = "s3cret-token-for-tests-0123456789"
JSON = {"Content-Type": "application/json"}
#: adversarial <= RATIO x benign + SLACK_S: generous, for a loaded 2-core machine.
RATIO = 5.0
SLACK_S = 0.05


def record(key: str, given: str, answer: str) -> None:
    """One row of the security table: the probe's input and what the emulator answered."""
    Figures.record("security_probes", key, {"input": given, "answer": answer})


class Http:
    """Raw HTTP/1.1 to the emulator's REST port: the headers a browser or curl would send."""

    def __init__(self, em: Emulator) -> None:
        url = urlsplit(em.rest_endpoint)
        self.host, self.port = str(url.hostname), int(url.port or 80)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> tuple[int, Any]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.putrequest(method, path, skip_host="Host" in (headers or {}), skip_accept_encoding=True)
            for key, value in (headers or {}).items():
                conn.putheader(key, value)
            if body is not None and "Content-Length" not in (headers or {}):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw.decode(errors="replace")


def answer(status: int, data: Any) -> str:
    code = data.get("error", {}).get("status", "") if isinstance(data, dict) else ""
    return f"{status} {code}".strip()


def job_bytes(name: str = "probe", **spec: Any) -> bytes:
    return json.dumps(testing.container_job(name, "pass", **spec)).encode()


def job_count(em: Emulator) -> int:
    return len(em.store.list("customJobs", PARENT))


def best_of(
    run: Callable[[], object], times: int = 3, clock: Callable[[], float] = time.perf_counter
) -> float:
    """The shortest of ``times`` runs, in seconds of ``clock`` (the run least disturbed by others)."""
    best = float("inf")
    for _ in range(times):
        started = clock()
        run()
        best = min(best, clock() - started)
    return best


def assert_linear(adversarial: Callable[[], object], benign: Callable[[], object], what: str) -> float:
    """Adversarial input costs at most ``RATIO`` times benign input of the same size (plus
    ``SLACK_S``); returns the adversarial time. Both run in this thread and are timed by its CPU
    clock (``time.thread_time``), which other processes on a loaded machine do not advance: a
    neighbour's burst during one of the runs cannot make a linear parser look quadratic."""
    bad, good = best_of(adversarial, clock=time.thread_time), best_of(benign, clock=time.thread_time)
    assert bad <= RATIO * good + SLACK_S, f"{what}: {bad:.3f} s against {good:.3f} s for benign input"
    return bad
