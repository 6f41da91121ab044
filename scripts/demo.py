"""``make demo`` (``python scripts/demo.py``): the weekly retraining DAG, run end to end on this machine.

1. starts the emulator in this process (loopback ports, a temporary state and ``gs://`` directory),
   with the example images mapped to the trainers of ``dags/trainers`` (real replica processes);
2. in a child Python process (its own ``AIRFLOW_HOME``, a fresh SQLite metadata DB, migrated),
   runs ``dags/retraining.py`` with ``dag.test()``: the week's data snapshot, then a CustomJob of a
   primary and two workers through the ``vertex_dist_default`` connection, which points at the
   emulator;
3. prints a summary: the DAG run, the job's pools, its replicas, its trials (none for a CustomJob),
   the model files and metrics;
4. stops the emulator and checks that no process it or the run started is left.

Everything is written under one directory (a new temporary one unless given), which stays for
inspection: the Airflow log of the run, the emulator's replica logs and the ``gs://`` files.
Lives in the checkout, not in the package: it runs the checkout's ``dags/`` folder.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

__all__ = ["DAG_FILE", "DAG_ID", "find_dags_dir", "live_children", "main", "run_demo"]

DAG_FILE = "retraining.py"
DAG_ID = "vertex_dist_retraining"
PROJECT = "demo-project"
LOCATION = "us-central1"
#: seconds the whole Airflow run may take before the demo gives up on it.
RUN_TIMEOUT_S = 600.0


def find_dags_dir() -> Path | None:
    """The ``dags/`` folder of the checkout this script is in, or None when it is not there."""
    here = Path(__file__).resolve().parent.parent / "dags"
    return here if (here / DAG_FILE).is_file() and (here / "trainers").is_dir() else None


def live_children(pid: int | None = None) -> list[int]:
    """Live (non-zombie) descendants of ``pid`` (default: this process), from ``/proc``."""
    root = os.getpid() if pid is None else pid
    parents: dict[int, int] = {}
    states: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
        parents[int(entry.name)] = int(fields.get("PPid", "0").strip() or 0)
        states[int(entry.name)] = fields.get("State", "?").strip()[:1]
    found: list[int] = []
    frontier = [root]
    while frontier:
        current = frontier.pop()
        for child, parent in parents.items():
            if parent == current and child not in found:
                found.append(child)
                frontier.append(child)
    return sorted(p for p in found if states.get(p) != "Z")


def _image_map(dags: Path) -> dict[str, list[str]]:
    """``trainers.local.image_map()`` of the checkout (loaded by path: standard library only)."""
    spec = importlib.util.spec_from_file_location(
        "_vertex_dist_demo_trainers_local", dags / "trainers" / "local.py"
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {dags / 'trainers' / 'local.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    mapping: dict[str, list[str]] = module.image_map(sys.executable)
    return mapping


def _connection(grpc_target: str, web: str) -> str:
    extra = {
        "project": PROJECT,
        "location": LOCATION,
        "api_endpoint": grpc_target,
        "emulator": True,
        "web_endpoint": web,
    }
    return json.dumps({"conn_type": "vertex_dist", "extra": extra})


# -- the child: Airflow ---------------------------------------------------------------------------


def _child(result_path: Path) -> int:
    """Migrate the metadata DB, load the DAG through a DagBag, run it with ``dag.test()``."""
    started = time.monotonic()
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.collection import update_dag_parsing_results_in_db
    from airflow.dag_processing.dagbag import BundleDagBag
    from airflow.models.xcom import XComModel
    from airflow.serialization.serialized_objects import LazyDeserializedDAG
    from airflow.utils import db
    from airflow.utils.session import create_session

    dags = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    print("demo: migrating the metadata DB", flush=True)
    db.initdb()
    DagBundlesManager().sync_bundles_to_db()  # type: ignore[no-untyped-call]
    migrated = time.monotonic()
    bag = BundleDagBag(dag_folder=dags / DAG_FILE, bundle_path=dags, safe_mode=True)
    if bag.import_errors or DAG_ID not in bag.dags:
        result_path.write_text(json.dumps({"error": f"cannot load {DAG_ID}: {bag.import_errors}"}))
        return 1
    dag: Any = bag.dags[DAG_ID]
    with create_session() as session:
        update_dag_parsing_results_in_db(
            "dags-folder", None, [LazyDeserializedDAG.from_dag(dag)], {}, None, set(), session=session
        )
    now = datetime.now(timezone.utc)
    print(f"demo: running {DAG_ID} with dag.test()", flush=True)
    dr = dag.test(logical_date=now, run_after=now)
    xcoms: dict[str, Any] = {}
    with create_session() as session:
        tis = {ti.task_id: str(ti.state) for ti in dr.get_task_instances(session=session)}
        for task_id in tis:
            row = session.execute(
                XComModel.get_many(
                    key="return_value", run_id=dr.run_id, dag_ids=dr.dag_id, task_ids=task_id, map_indexes=-1
                ).with_only_columns(XComModel.value)
            ).first()
            if row is not None:
                value = row[0]
                xcoms[task_id] = json.loads(value) if isinstance(value, str | bytes) else value
    result = {
        "run_id": dr.run_id,
        "state": str(dr.state),
        "data_interval": [dr.data_interval_start.isoformat(), dr.data_interval_end.isoformat()],
        "tasks": tis,
        "xcom": xcoms,
        "seconds": {"migrate": round(migrated - started, 1), "run": round(time.monotonic() - migrated, 1)},
    }
    result_path.write_text(json.dumps(result, default=str))
    return 0 if str(dr.state) == "success" else 1


# -- the parent: emulator and summary -------------------------------------------------------------


def _table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def _summary(out: TextIO, result: dict[str, Any], job: dict[str, Any] | None, em: Any, workdir: Path) -> None:
    from airflow_vertex_dist.specs import DistributedTrainingJob, pools_table

    def say(text: str = "") -> None:
        print(text, file=out)

    say(f"\n== DAG run {result['run_id']}: {result['state']}")
    start, end = result["data_interval"]
    say(f"data interval {start} -> {end}")
    say(_table([[t, s] for t, s in result["tasks"].items()], ["task", "state"]))
    if job is None:
        say("\n(no job was created)")
        return
    say(f"\n== Job {job['name']}: {job['state']}")
    say(
        f"display name {job.get('displayName')}; console {result['xcom'].get('train', {}).get('console_url')}"
    )
    say("\n-- pools")
    say(pools_table(DistributedTrainingJob.from_api(job)))

    job_id = str(job["name"]).rsplit("/", 1)[1]
    log_dir = em.config.state_dir / "logs" / job_id
    replicas_path = log_dir / "replicas.json"
    say("\n-- replicas (real processes on this machine)")
    if replicas_path.is_file():
        reps: dict[str, Any] = json.loads(replicas_path.read_text())
        rows = [
            [key, str(r.get("address")), str(r.get("pid")), str(r.get("state")), str(r.get("exitCode"))]
            for key, r in sorted(reps.items())
        ]
        say(_table(rows, ["replica", "address", "pid", "state", "exit code"]))
        say(f"logs: {log_dir}/<replica>.log")
    else:
        say("(no replica record)")

    say("\n-- trials")
    trials = job.get("trials") or []
    if not trials:
        say("none: a CustomJob has no trials (dags/backfill_tuning.py runs a tuning job per day)")
    else:
        say(_table([[str(t.get("id")), str(t.get("state"))] for t in trials], ["trial", "state"]))

    base = str(job["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"]).rstrip("/")
    model_uri = f"{base}/model/"
    bucket, _, obj = base[len("gs://") :].partition("/")
    local = Path(em.config.gcs_root, bucket, *obj.split("/"), "model")
    say(f"\n-- model: {model_uri}")
    say(f"   on this machine: {local}")
    files = sorted(p for p in local.rglob("*") if p.is_file()) if local.is_dir() else []
    say(_table([[p.relative_to(local).as_posix(), str(p.stat().st_size)] for p in files], ["file", "bytes"]))
    metrics_path = local / "metrics.json"
    if metrics_path.is_file():
        metrics = json.loads(metrics_path.read_text())
        keys = ("accuracy", "log_loss", "train_rows", "eval_rows", "steps", "seconds")
        say("metrics: " + ", ".join(f"{k}={metrics[k]}" for k in keys if k in metrics))
    say(f"\nEverything is kept under {workdir} (Airflow log: {workdir / 'airflow-run.log'})")


def run_demo(workdir: Path | str | None = None, *, out: TextIO | None = None) -> int:
    """Run the demo; 0 when the DAG run succeeded and nothing was left running."""
    from vertex_emulator.app import Emulator
    from vertex_emulator.core.config import EmulatorConfig

    stream = out or sys.stdout

    def say(text: str) -> None:
        print(text, file=stream, flush=True)

    dags = find_dags_dir()
    if dags is None:
        say("demo: needs a checkout of the project (its dags/ folder with dags/trainers): not found")
        return 2
    root = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="vertex-dist-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    config = EmulatorConfig(state_dir=root / "emulator", gcs_root=root / "gcs", image_map=_image_map(dags))
    emulator = Emulator(config)
    result: dict[str, Any] = {}
    job: dict[str, Any] | None = None
    code = 1
    try:
        emulator.start()
        say(f"demo: emulator up: gRPC {emulator.grpc_target}, web {emulator.rest_endpoint}")
        # a pristine Airflow: none of the caller's Airflow settings, connections or variables
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_", "AIRFLOW__"))}
        env.update(
            AIRFLOW_HOME=str(root / "airflow"),
            AIRFLOW__CORE__DAGS_FOLDER=str(dags),
            AIRFLOW__CORE__LOAD_EXAMPLES="False",
            AIRFLOW_CONN_VERTEX_DIST_DEFAULT=_connection(emulator.grpc_target, emulator.rest_endpoint),
            GCS_MOUNT_ROOT=str(config.gcs_root),
            VERTEX_DIST_EXAMPLES_POLL_INTERVAL="0.5",
        )
        result_path = root / "result.json"
        with (root / "airflow-run.log").open("w") as log:
            proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--child", str(result_path)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                if line.startswith("demo: "):
                    say(line.rstrip())
            proc.wait(timeout=RUN_TIMEOUT_S)
        if result_path.is_file():
            result = json.loads(result_path.read_text())
        if "error" in result or not result:
            say(f"demo: the Airflow run failed ({result.get('error', f'exit {proc.returncode}')}); "
                f"see {root / 'airflow-run.log'}")  # fmt: skip
        else:
            jobs = emulator.store.list("customJobs", f"projects/{PROJECT}/locations/{LOCATION}")
            job = jobs[0] if jobs else None
            _summary(stream, result, job, emulator, root)
            code = 0 if result.get("state") == "success" else 1
    finally:
        emulator.stop()
    left = live_children()
    say(f"\ndemo: emulator stopped; processes left running: {len(left)}" + (f" {left}" if left else ""))
    if result.get("seconds"):
        s = result["seconds"]
        total = time.monotonic() - started
        say(f"demo: {total:.0f}s in all (metadata DB {s['migrate']}s, DAG run {s['run']}s)")
    return code if not left else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/demo.py", description=__doc__)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--workdir", type=Path, default=None, help="keep everything here (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    if args.child is not None:
        return _child(args.child)
    return run_demo(args.workdir)


if __name__ == "__main__":
    sys.exit(main())
