"""Child of the waiting-at-scale benchmark: one triggerer-like asyncio event loop running N triggers.

Run by path (``python wait_child.py --impl ours|provider ...``) in the project's venv (``ours``:
``VertexJobTrigger`` and its shared poller) or in the anchor's (``provider``: the Google provider's
``CustomJobTrigger``, one Get per job per interval). Only the provider hook's client factory is
patched: the same ``JobServiceAsyncClient``, over an insecure channel to the emulator instead of a
credentialed one to Google. Stdlib only at module level, so either interpreter can run it.

It talks to the parent on stdout, one JSON object per line, in this order:
``{"phase": "base", "rss_kib"}`` after a warm-up trigger (jobs[0]) has polled; ``half`` once half of
the N others have polled too, ``steady`` once all have (RSS at each); ``window_start`` /
``window_end`` (the parent counts API calls at the emulator between them) with the loop's CPU time;
``{"phase": "done", "events"}`` once every trigger fired (the parent ends the jobs after ``window_end``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import resource
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any


def _say(**payload: Any) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cycles() -> int | None:
    """Poll cycles completed by our shared pollers in this loop (``None`` for the provider's triggers)."""
    poller = sys.modules.get("airflow_vertex_dist.triggers.poller")
    if poller is None:
        return None
    return int(sum(p.cycles for p in poller.active_pollers()))


def _ours(target: str, rest: str) -> Callable[[str, float], Any]:
    project, location = "unused", "unused"
    extra = {
        "project": project,
        "location": location,
        "api_endpoint": target,
        "emulator": True,
        "web_endpoint": rest,
    }
    os.environ["AIRFLOW_CONN_VERTEX_DIST_DEFAULT"] = json.dumps({"conn_type": "vertex_dist", "extra": extra})
    from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

    def make(name: str, interval: float) -> Any:
        return VertexJobTrigger(job_name=name, poll_interval=interval)

    return make


def _provider(target: str, rest: str) -> Callable[[str, float], Any]:
    from airflow.providers.google.cloud.hooks.vertex_ai.custom_job import CustomJobAsyncHook
    from airflow.providers.google.cloud.triggers.vertex_ai import CustomJobTrigger
    from airflow.providers.google.common.consts import CLIENT_INFO
    from google.cloud.aiplatform_v1 import JobServiceAsyncClient
    from google.cloud.aiplatform_v1.services.job_service.transports.grpc_asyncio import (
        JobServiceGrpcAsyncIOTransport,
    )
    from grpc import aio

    async def get_job_service_client(self: Any, region: str | None = None) -> Any:
        # The provider builds JobServiceAsyncClient(credentials=..., client_options=<region endpoint>):
        # same client, the emulator's address and no credentials instead.
        channel = aio.insecure_channel(target)
        return JobServiceAsyncClient(
            transport=JobServiceGrpcAsyncIOTransport(channel=channel), client_info=CLIENT_INFO
        )

    CustomJobAsyncHook.get_job_service_client = get_job_service_client

    def make(name: str, interval: float) -> Any:
        parts = name.split("/")  # projects/P/locations/L/customJobs/ID
        return CustomJobTrigger(
            project_id=parts[1],
            location=parts[3],
            custom_job_id=parts[5],
            poll_interval=interval,
        )

    return make


async def _first_event(trigger: Any) -> dict[str, Any]:
    events: AsyncIterator[Any] = trigger.run()
    async for event in events:
        payload: dict[str, Any] = dict(event.payload)
        return payload
    raise RuntimeError("the trigger ended without an event")


async def _main(args: argparse.Namespace, make: Callable[[str, float], Any]) -> None:
    names: list[str] = json.loads(Path(args.jobs_file).read_text())
    warm, waiting = names[0], names[1:]
    interval: float = args.interval
    fired: dict[str, tuple[float, str]] = {}

    async def wait(name: str) -> None:
        try:
            payload = await _first_event(make(name, interval))
            status = str(payload.get("status"))
        except Exception as exc:  # reported, not raised: the parent shows it
            status = f"exception: {exc!r}"[:200]
        fired[name] = (time.time(), status)

    tasks = [asyncio.create_task(wait(warm))]
    await asyncio.sleep(args.settle)
    gc.collect()
    _say(phase="base", rss_kib=_rss_kib())
    half = len(waiting) // 2
    tasks += [asyncio.create_task(wait(name)) for name in waiting[:half]]
    await asyncio.sleep(args.settle)
    gc.collect()
    _say(phase="half", rss_kib=_rss_kib(), jobs=half)
    tasks += [asyncio.create_task(wait(name)) for name in waiting[half:]]
    await asyncio.sleep(args.settle)
    gc.collect()
    _say(phase="steady", rss_kib=_rss_kib(), running=sum(1 for t in tasks if not t.done()))
    await asyncio.sleep(interval)
    cpu0 = _cpu_s()
    _say(phase="window_start", t=time.time(), cycles=_cycles())
    await asyncio.sleep(interval * args.window_intervals)
    _say(phase="window_end", t=time.time(), cpu_s=_cpu_s() - cpu0, cycles=_cycles())
    done, pending = await asyncio.wait(tasks, timeout=args.timeout)
    for task in pending:
        task.cancel()
    _say(phase="done", events={name: list(v) for name, v in fired.items()}, missing=len(pending))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impl", choices=("ours", "provider"), required=True)
    parser.add_argument("--target", required=True, help="the emulator's gRPC host:port")
    parser.add_argument("--rest", required=True, help="the emulator's REST base URL")
    parser.add_argument("--jobs-file", required=True)
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--settle", type=float, required=True)
    parser.add_argument("--window-intervals", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    # Both implementations log at INFO on every poll; the benchmark keeps warnings only.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    make = (_ours if args.impl == "ours" else _provider)(args.target, args.rest)
    asyncio.run(_main(args, make))


if __name__ == "__main__":
    main()
