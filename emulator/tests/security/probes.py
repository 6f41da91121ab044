"""Helpers of the emulator's security probes: raw HTTP to its REST port, the security table's figures
(``probe_figures``), and the ratio test of the parser probes (``timing``)."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

from probe_figures import record
from timing import RATIO, SLACK_S, assert_linear, best_of

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

