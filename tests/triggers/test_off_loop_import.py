"""The first trigger of a triggerer process imports the Google clients in a worker thread, not on the loop.

A fresh interpreter (nothing of Google's imported yet, as in a triggerer that just started) runs a
``VertexJobTrigger`` to its event against the emulator, and then the asyncio hook's calls, with an
import spy on ``sys.meta_path``: every module of ``google.*``, ``grpc`` or ``proto`` imported while the
spy's thread runs an event loop is an import on the loop.
"""

from __future__ import annotations

import json
import subprocess
import sys

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.labels import run_labels
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
from vertex_emulator import testing
from vertex_emulator.app import Emulator

PROBE = """
import asyncio, importlib.abc, json, sys, threading

HEAVY = ("google", "grpc", "proto")
on_loop, off_loop = [], []


class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            try:
                asyncio.get_running_loop()
                on_loop.append(name)
            except RuntimeError:
                off_loop.append(name)
        return None


sys.meta_path.insert(0, Spy())
from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook
from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

before = sorted(m for m in sys.modules if m.startswith("google.cloud.") or m == "grpc")


async def main(name):
    events = []
    async for event in VertexJobTrigger(job_name=name, poll_interval=0.1).run():
        events.append(event.payload["status"])
        break
    async with VertexJobsAsyncHook() as hook:
        await hook.get_job_or_none(name + "0")
        await hook.list_jobs("customJobs", filter='labels.nothing="here"')
        await hook.cancel_unless_ended(name)
    return events


events = asyncio.run(main(sys.argv[1]))
print(json.dumps({"before": before, "events": events, "on_loop": on_loop, "off_loop": off_loop}))
"""


def test_first_trigger_imports_the_clients_off_the_event_loop(em: Emulator) -> None:
    labels = run_labels("off_loop", "train", "manual__1", -1)
    hook = VertexJobsHook(retry_policy=RetryPolicy(initial_s=0.01, maximum_s=0.05, deadline_s=20.0))
    try:
        job = hook.create_custom_job(testing.container_job("off-loop", "print('done')", labels=labels))
    finally:
        hook.close()
    name = str(job["name"])
    testing.wait_for_state(em, name, ["JOB_STATE_SUCCEEDED"], 60.0)

    proc = subprocess.run(
        [sys.executable, "-c", PROBE, name], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["before"] == []  # nothing of the clients was loaded before the loop ran
    assert seen["events"] == ["success"]
    # The probe saw the clients being imported (in a worker thread) ...
    assert "google.cloud.aiplatform_v1" in seen["off_loop"]
    assert "grpc" in seen["off_loop"]
    # ... and nothing of Google's, grpc or proto-plus on the event loop's thread.
    assert seen["on_loop"] == []
