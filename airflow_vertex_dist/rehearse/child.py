"""The Airflow side of a rehearsal: ``python -m airflow_vertex_dist.rehearse.child PLAN.json``.

One process per slice of the rehearsal's runs, each in an ``AIRFLOW_HOME`` of its own (a copy of one
migrated SQLite metadata DB: ``"migrate": true`` makes it, ``"save_db"`` keeps a copy of it as migrated
for later rehearsals (``db_cache``), and with ``start_date`` and ``end_date`` writes the logical dates of
the DAG's schedule between them to ``PLAN["result"]``). It loads the DAG file through Airflow's own
``DagBag``, stores the DAG as the DAG processor would, warms up (one throwaway run), says it is ready
(the file ``PLAN["ready"]``) and waits for a line on stdin: the parent plays the night then, so Airflow's
start-up is not hours of it. The line is a JSON object of environment variables that point the runs at
the emulator (the DAG's connection, Cloud Storage), which may have started after this process. Then it
runs each of its logical dates with ``dag.test()`` (the tasks in this process, deferred ones' triggers in
line) and writes after each run what it did to ``PLAN["result"]``: the run's state, its tasks' states,
their return values and capacity-ladder walks, and each task instance's ``airflow-run`` label, by which
the report finds the jobs it created."""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["main"]

_XCOM_KEYS = ("return_value", "vertex_ladder")


def _load(dag_file: Path, dag_id: str | None) -> Any:
    from airflow_vertex_dist._compat import dags_in_file, store_dag

    if str(dag_file.parent) not in sys.path:  # as the DAG processor puts a bundle's folder on the path
        sys.path.insert(0, str(dag_file.parent))
    dags, errors = dags_in_file(str(dag_file))
    if errors:
        raise SystemExit(f"{dag_file}: cannot be loaded: {errors}")
    if dag_id is None and len(dags) != 1:
        raise SystemExit(f"{dag_file}: defines {sorted(dags) or 'no DAG'}: name one with --dag-id")
    dag = dags.get(dag_id) if dag_id else next(iter(dags.values()))
    if dag is None:
        raise SystemExit(f"--dag-id {dag_id}: not in {dag_file} (it defines {sorted(dags)})")
    store_dag(dag)
    return dag


def _warm_up() -> None:
    """One throwaway run of a one-task DAG, and the Google clients imported: what Airflow does once per
    process (the in-process Execution API, the first task's start; about 6 s here) and the clients'
    import (about 3 s) happen before the night, not in its first hours (at 600 times, a real second is
    ten minutes of it)."""
    import importlib

    from airflow.sdk import DAG, task

    from airflow_vertex_dist._compat import store_dag
    from airflow_vertex_dist.hooks.off_loop import CLIENTS_MODULE

    importlib.import_module(CLIENTS_MODULE)
    with DAG("airflow_vertex_dist_rehearsal_warm_up", schedule=None) as dag:

        @task
        def warm_up() -> None:
            return None

        warm_up()
    store_dag(dag)
    dag.test()


def _run(dag: Any, logical_date: datetime) -> dict[str, Any]:
    from airflow_vertex_dist._compat import run_task_instances, xcom_rows
    from airflow_vertex_dist.hooks.labels import RUN_LABEL, run_labels

    dr = dag.test(logical_date=logical_date, run_after=logical_date)
    tasks = run_task_instances(dr)
    for task in tasks:
        task["run_label"] = run_labels(dr.dag_id, task["task_id"], dr.run_id, task["map_index"])[RUN_LABEL]
        found = (
            (
                key,
                xcom_rows(
                    key,
                    dag_id=dr.dag_id,
                    run_id=dr.run_id,
                    task_id=task["task_id"],
                    map_index=task["map_index"],
                    limit=1,
                ),
            )
            for key in _XCOM_KEYS
        )
        task["xcom"] = {key: rows[0]["value"] for key, rows in found if rows}
    return {
        "logical_date": logical_date.isoformat(),
        "run_id": dr.run_id,
        "state": str(dr.state),
        "tasks": sorted(tasks, key=lambda t: (t["task_id"], t["map_index"])),
    }


def main(argv: list[str]) -> int:
    from airflow_vertex_dist._compat import migrate_metadata_db, schedule_dates

    plan = json.loads(Path(argv[0]).read_text())
    if plan.get("migrate"):
        migrate_metadata_db()
        if plan.get("save_db"):  # kept for later rehearsals (db_cache) before any DAG is stored in it
            from airflow_vertex_dist.rehearse.db_cache import DB_NAME, save

            save(Path(os.environ["AIRFLOW_HOME"]) / DB_NAME, Path(plan["save_db"]))
        if "start_date" not in plan:
            return 0
    dag = _load(Path(plan["dag_file"]), plan.get("dag_id"))
    if "start_date" in plan:  # the range's dates, from the DAG's own schedule
        start, end = (datetime.fromisoformat(plan[k]) for k in ("start_date", "end_date"))
        dates = [d.isoformat() for d in schedule_dates(dag, start, end)]
        Path(plan["result"]).write_text(json.dumps({"dates": dates}))
        return 0
    _warm_up()
    Path(plan["ready"]).touch()
    go = sys.stdin.readline()
    if not go:  # the parent gave up before the night began
        return 1
    os.environ.update(json.loads(go))  # the emulator's connection: it may have started after this process
    result = Path(plan["result"])
    runs: list[dict[str, Any]] = []
    for text in plan["dates"]:
        runs.append(_run(dag, datetime.fromisoformat(text)))
        result.write_text(json.dumps({"dag_id": dag.dag_id, "runs": runs}, default=str))
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    if "dates" in json.loads(Path(sys.argv[1]).read_text()):
        # A slice of runs, each one's result written (its logs flushed here): it ends now, without
        # Airflow's exit handlers and threads, which took half a minute after the last run on a loaded
        # 2-core machine (its metadata DB is a copy no one reads again).
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
