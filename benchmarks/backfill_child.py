"""Child of the backfill benchmark: R runs of one training task submitted at once from T threads, then
the same R again (every task retried), each submission as its own task would make it; ``--repeats``
such pairs, each on R runs of its own.

``ours``: ``VertexJobsHook.find_or_create`` with the run's labels (one hook per submission, as each
task process has its own), and ``first_try=True`` in the first wave, as the operator passes it on try
1 of a backfill run's task (the second wave is every task's retry: ``False``), with
``converge_in_wait=True`` as a deferrable operator passes it (its trigger converges: no List after the
Create). ``ours-worker``: the same without ``converge_in_wait``, as an operator that waits in its
worker (or does not wait) calls it: the List after the Create converges. ``provider``: the
Google provider's ``CustomJobHook.create_custom_job`` (what its ``CreateCustomJobOperator`` does on
every try), with only its client factory patched to reach the emulator without credentials. Stdlib
only at module level; prints one JSON object per line: ``wave_start`` / ``wave_end`` (the parent
counts API calls between them) per wave, then ``done``. After ``wave_start`` it waits for a line on
its stdin, which the parent writes once it has read the emulator's call counts: no call of the wave
can come before them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def _say(**payload: Any) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def _ours(
    target: str, project: str, location: str, body: dict[str, Any], converge_in_wait: bool = True
) -> Callable[[int, bool], tuple[str, bool]]:
    extra = {"project": project, "location": location, "api_endpoint": target, "emulator": True}
    os.environ["AIRFLOW_CONN_VERTEX_DIST_DEFAULT"] = json.dumps({"conn_type": "vertex_dist", "extra": extra})
    from airflow_vertex_dist.hooks.labels import run_labels
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook

    def submit(i: int, first_try: bool) -> tuple[str, bool]:
        labels = run_labels("bench_backfill", "train", f"backfill__2026-01-01T00:00:00+00:00__{i:04d}")
        with VertexJobsHook() as hook:
            job, created = hook.find_or_create(
                "customJobs", body, labels=labels, first_try=first_try, converge_in_wait=converge_in_wait
            )
        return str(job["name"]), created

    return submit


def _provider(
    target: str, project: str, location: str, body: dict[str, Any]
) -> Callable[[int, bool], tuple[str, bool]]:
    # The hook reads its connection when built; the credentials it names are never used (see below).
    os.environ["AIRFLOW_CONN_GOOGLE_CLOUD_DEFAULT"] = json.dumps({"conn_type": "google_cloud_platform"})
    import grpc
    from airflow.providers.google.cloud.hooks.vertex_ai.custom_job import CustomJobHook
    from airflow.providers.google.common.consts import CLIENT_INFO
    from google.cloud.aiplatform_v1 import CustomJob, JobServiceClient
    from google.cloud.aiplatform_v1.services.job_service.transports.grpc import JobServiceGrpcTransport

    def get_job_service_client(self: Any, region: str | None = None) -> Any:
        # The provider builds JobServiceClient(credentials=..., client_options=<region endpoint>).
        channel = grpc.insecure_channel(target)
        return JobServiceClient(transport=JobServiceGrpcTransport(channel=channel), client_info=CLIENT_INFO)

    CustomJobHook.get_job_service_client = get_job_service_client

    def submit(i: int, first_try: bool) -> tuple[str, bool]:  # the provider does the same on every try
        job_body = dict(body)
        job_body["labels"] = {**body.get("labels", {}), "airflow-run": f"r{i:04d}"}
        custom_job = CustomJob.from_json(json.dumps(job_body))
        job = CustomJobHook().create_custom_job(project_id=project, region=location, custom_job=custom_job)
        return str(job.name), True

    return submit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impl", choices=("ours", "ours-worker", "provider"), required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--location", required=True)
    parser.add_argument("--body-file", required=True)
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeats", type=int, default=1, help="pairs of waves (first tries, retries)")
    args = parser.parse_args()
    body = json.loads(Path(args.body_file).read_text())
    if args.impl == "provider":
        submit = _provider(args.target, args.project, args.location, body)
    else:
        submit = _ours(args.target, args.project, args.location, body, converge_in_wait=args.impl == "ours")
    warm_up = args.runs * args.repeats
    submit(warm_up, True)  # warm-up (imports, connection, first channel): one more run, not timed
    waves = []
    with ThreadPoolExecutor(max_workers=args.threads) as pool:
        for wave in range(2 * args.repeats):
            _say(phase="wave_start", wave=wave)
            sys.stdin.readline()  # the parent read the call counts
            start = time.perf_counter()
            first = [wave % 2 == 0] * args.runs
            runs = range((wave // 2) * args.runs, (wave // 2 + 1) * args.runs)
            outcomes = list(pool.map(submit, runs, first))
            elapsed = time.perf_counter() - start
            _say(phase="wave_end", wave=wave)
            waves.append({"wall_s": elapsed, "created": sum(1 for _, c in outcomes if c)})
    _say(phase="done", waves=waves)


if __name__ == "__main__":
    main()
