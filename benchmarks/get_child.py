"""Child of the emulator benchmark: K sequential Gets of one CustomJob through a hook's sync client.

``ours``: ``VertexJobsHook.get_job`` (returns the v1 JSON dict). ``provider``: the Google provider's
``CustomJobHook.get_custom_job`` (returns the proto), its client factory patched to reach the emulator
without credentials. Prints ``{"latencies_s": [...]}``. Stdlib only at module level.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any


def _ours(target: str, name: str) -> Callable[[], Any]:
    parts = name.split("/")
    extra = {"project": parts[1], "location": parts[3], "api_endpoint": target, "emulator": True}
    os.environ["AIRFLOW_CONN_VERTEX_DIST_DEFAULT"] = json.dumps({"conn_type": "vertex_dist", "extra": extra})
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

    hook = VertexJobsHook()
    return lambda: hook.get_job(name)


def _provider(target: str, name: str) -> Callable[[], Any]:
    # The hook reads its connection when built; the credentials it names are never used (see below).
    os.environ["AIRFLOW_CONN_GOOGLE_CLOUD_DEFAULT"] = json.dumps({"conn_type": "google_cloud_platform"})
    import grpc
    from airflow.providers.google.cloud.hooks.vertex_ai.custom_job import CustomJobHook
    from airflow.providers.google.common.consts import CLIENT_INFO
    from google.cloud.aiplatform_v1 import JobServiceClient
    from google.cloud.aiplatform_v1.services.job_service.transports.grpc import JobServiceGrpcTransport

    def get_job_service_client(self: Any, region: str | None = None) -> Any:
        # As the provider does: a new client (and channel) on every call; the emulator's address and
        # no credentials in place of the regional endpoint and the connection's credentials.
        channel = grpc.insecure_channel(target)
        return JobServiceClient(transport=JobServiceGrpcTransport(channel=channel), client_info=CLIENT_INFO)

    CustomJobHook.get_job_service_client = get_job_service_client
    hook = CustomJobHook()
    parts = name.split("/")
    return lambda: hook.get_custom_job(project_id=parts[1], region=parts[3], custom_job=parts[5])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impl", choices=("ours", "provider"), required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--count", type=int, required=True)
    args = parser.parse_args()
    get = (_ours if args.impl == "ours" else _provider)(args.target, args.name)
    for _ in range(5):  # warm-up
        get()
    latencies = []
    for _ in range(args.count):
        start = time.perf_counter()
        get()
        latencies.append(time.perf_counter() - start)
    sys.stdout.write(json.dumps({"latencies_s": latencies}) + "\n")


if __name__ == "__main__":
    main()
