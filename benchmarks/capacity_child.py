"""Child of the capacity benchmark: one training task's submissions, one at a time, as the parent asks.

``ours``: ``VertexTrainingOperator`` with a two-rung capacity ladder, run whole by ``dag.test()`` on a
migrated SQLite metadata DB (the Task SDK's in-process supervisor: a real task context, XCom, and a
deferred task's trigger run inline as the triggerer would run it), against the emulator in the parent.
Only ``execute`` is wrapped, to stamp the moment the task starts. ``provider``: what the Google
provider's ``CreateCustomJobOperator.execute`` does when not deferrable, ``CustomJobHook.create_custom_job``
then ``CustomJobHook.wait_for_custom_job``, with only the hook's client factory patched to reach the
emulator without credentials.

Stdlib only at module level. Protocol: the child says ``{"phase": "ready"}`` once set up, then reads one
JSON object a line on stdin (``{"run": i}``) and answers each with ``{"phase": "result", ...}``; end of
stdin ends it. Anything else printed (``dag.test()`` prints the task logs) goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TextIO

#: when each try's ``execute`` was entered (``ours``): the task's start, the clock's zero
_STARTS: list[float] = []


def _protocol() -> TextIO:
    """A stream on the original stdout for the protocol; fd 1 itself then points at stderr."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)
    return out


def _ours(args: argparse.Namespace, body: dict[str, Any]) -> Callable[[int], dict[str, Any]]:
    extra = {
        "project": args.project,
        "location": args.location,
        "api_endpoint": args.target,
        "emulator": True,
    }
    os.environ["AIRFLOW_CONN_VERTEX_DIST_DEFAULT"] = json.dumps({"conn_type": "vertex_dist", "extra": extra})
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.collection import update_dag_parsing_results_in_db
    from airflow.models.xcom import XComModel
    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import LazyDeserializedDAG
    from airflow.utils import db
    from airflow.utils.session import create_session

    from airflow_vertex_dist.operators.training import VertexTrainingOperator
    from airflow_vertex_dist.specs import CapacityLadder, DistributedTrainingJob

    db.resetdb()
    DagBundlesManager().sync_bundles_to_db()  # type: ignore[no-untyped-call]

    class TimedTraining(VertexTrainingOperator):
        def execute(self, context: Any) -> Any:
            _STARTS.append(time.time())
            return super().execute(context)

    spec = DistributedTrainingJob.model_validate(body["spec"])
    ladder = CapacityLadder.model_validate(body["ladder"])
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    with DAG("bench_capacity", schedule=None, start_date=start) as dag:
        TimedTraining(
            task_id="train",
            spec=spec,
            capacity=ladder,
            deferrable=args.deferrable,
            poll_interval=args.interval,
        )
    with create_session() as session:
        update_dag_parsing_results_in_db(
            "dags-folder", None, [LazyDeserializedDAG.from_dag(dag)], {}, None, set(), session=session
        )

    def submit(i: int) -> dict[str, Any]:
        del _STARTS[:]
        when = start + timedelta(days=i + 2)  # a new run each time: new run labels, no job to re-attach to
        called = time.time()
        dr = dag.test(logical_date=when, run_after=when)
        ended = time.time()
        with create_session() as session:
            [ti] = [t for t in dr.get_task_instances(session=session) if t.task_id == "train"]
            state = str(ti.state)
            row = session.execute(
                XComModel.get_many(
                    key="return_value", run_id=dr.run_id, dag_ids=dr.dag_id, task_ids="train", map_indexes=-1
                ).with_only_columns(XComModel.value)
            ).first()
        value = row[0] if row is not None else None
        if isinstance(value, str | bytes):
            value = json.loads(value)
        rung = value.get("rung") if isinstance(value, dict) else None
        return {
            "called": called,
            "started": _STARTS[0] if _STARTS else called,
            "ended": ended,
            "state": state,
            "rung": rung,
            "error": None if state == "success" else f"task {state}",
        }

    return submit


def _provider(args: argparse.Namespace, body: dict[str, Any]) -> Callable[[int], dict[str, Any]]:
    # The hook reads its connection when built; the credentials it names are never used (see below).
    os.environ["AIRFLOW_CONN_GOOGLE_CLOUD_DEFAULT"] = json.dumps({"conn_type": "google_cloud_platform"})
    import grpc
    from airflow.providers.google.cloud.hooks.vertex_ai.custom_job import CustomJobHook
    from airflow.providers.google.common.consts import CLIENT_INFO
    from google.cloud.aiplatform_v1 import CustomJob, JobServiceClient
    from google.cloud.aiplatform_v1.services.job_service.transports.grpc import JobServiceGrpcTransport

    def get_job_service_client(self: Any, region: str | None = None) -> Any:
        # The provider builds JobServiceClient(credentials=..., client_options=<region endpoint>).
        channel = grpc.insecure_channel(args.target)
        return JobServiceClient(transport=JobServiceGrpcTransport(channel=channel), client_info=CLIENT_INFO)

    CustomJobHook.get_job_service_client = get_job_service_client
    request = json.dumps(body["request"])

    def submit(i: int) -> dict[str, Any]:
        # CreateCustomJobOperator.execute, not deferrable: its hook creates the job, then waits on it.
        started = time.time()
        hook = CustomJobHook()
        error = None
        try:
            job = hook.create_custom_job(
                project_id=args.project, region=args.location, custom_job=CustomJob.from_json(request)
            )
            job_id = hook.extract_custom_job_id(custom_job_name=job.name)
            hook.wait_for_custom_job(
                project_id=args.project,
                region=args.location,
                custom_job_id=job_id,
                poll_interval=args.interval,  # typed int; it sleeps this long
            )
        except Exception as exc:  # the task fails with it: recorded, the parent reports it
            error = f"{type(exc).__name__}: {exc}"
        ended = time.time()
        return {
            "called": started,
            "started": started,
            "ended": ended,
            "state": "success" if error is None else "failed",
            "rung": None,
            "error": error,
        }

    return submit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impl", choices=("ours", "provider"), required=True)
    parser.add_argument("--target", required=True, help="the emulator's gRPC host:port")
    parser.add_argument("--project", required=True)
    parser.add_argument("--location", required=True, help="the connection's (first rung's) region")
    parser.add_argument("--body-file", required=True, help="JSON: spec and ladder (ours), request (provider)")
    parser.add_argument("--interval", type=float, required=True, help="poll interval, seconds")
    parser.add_argument("--deferrable", action="store_true", help="ours: wait in the (inline) triggerer")
    args = parser.parse_args()
    proto = _protocol()
    body = json.loads(Path(args.body_file).read_text())
    submit = (_ours if args.impl == "ours" else _provider)(args, body)
    proto.write(json.dumps({"phase": "ready"}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        i = int(json.loads(line)["run"])
        try:
            result = submit(i)
        except Exception as exc:  # a broken run is reported, and the next one still tried
            result = {"state": "broken", "error": f"{type(exc).__name__}: {exc}"[:2000]}
        proto.write(json.dumps({"phase": "result", "run": i, **result}) + "\n")


if __name__ == "__main__":
    main()
