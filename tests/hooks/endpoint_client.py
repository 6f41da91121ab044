"""Run in a process of its own by ``test_endpoint_tls.py``: the hooks, as a task would use them, against
the ``vertex_dist_default`` connection of the environment.

A process of its own because gRPC reads the roots it trusts (``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``) once
per process. Creates a CustomJob (``argv[1]``, its JSON body), gets it (sync and asyncio hooks), lists
it, reads replica logs from Cloud Logging, and prints
``{"name", "state", "async_state", "listed", "log_lines"}``.
"""

from __future__ import annotations

import asyncio
import json
import sys

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.logs import VertexLogsHook
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook, VertexJobsHook

POLICY = RetryPolicy(initial_s=0.1, maximum_s=0.5, deadline_s=20.0, rpc_timeout_s=10.0)


async def _async_state(name: str) -> str:
    async with VertexJobsAsyncHook(retry_policy=POLICY) as hook:
        return str((await hook.get_job(name))["state"])


def main() -> None:
    body = json.loads(sys.argv[1])
    with VertexJobsHook(retry_policy=POLICY) as hook:
        job = hook.create_custom_job(body)
        name = job["name"]
        state = hook.get_job(name)["state"]
        found = hook.list_jobs("customJobs", filter=f'display_name="{body["displayName"]}"')
        listed = [j["name"] for j in found]
    async_state = asyncio.run(_async_state(name))
    logs = VertexLogsHook(retry_policy=POLICY)
    try:
        # a job id with no lines: the read is the call under test (its endpoint, credentials and quota
        # project), not the entries' payloads
        lines = logs.read_lines(["0"], max_pages=1)
    finally:
        logs.close()
    result = {"name": name, "state": state, "async_state": async_state, "listed": listed}
    print(json.dumps({**result, "log_lines": len(lines)}))


if __name__ == "__main__":
    main()
