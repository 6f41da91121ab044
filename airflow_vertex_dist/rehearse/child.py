"""The Airflow side of a rehearsal: ``python -m airflow_vertex_dist.rehearse.child PLAN.json``.

One process per slice of the rehearsal's runs, each in an ``AIRFLOW_HOME`` of its own (a copy of one
migrated SQLite metadata DB: ``"migrate": true`` makes it). It loads the DAG file through Airflow's own
``DagBag``, stores the DAG as the DAG processor would, says it is ready (the file ``PLAN["ready"]``)
and waits for a line on stdin (the parent plays the night then: Airflow's start-up is not hours of it), then runs each of its
logical dates with ``dag.test()`` -- the tasks in this process, deferred ones' triggers in line -- and
writes after each run what it did to ``PLAN["result"]``: the run's state, its tasks' states, their
return values and capacity-ladder walks, and each task instance's ``airflow-run`` label, by which the
report finds the jobs it created.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["logical_dates", "main"]

_XCOM_KEYS = ("return_value", "vertex_ladder")


def _migrate() -> None:
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.utils import db

    db.initdb()
    DagBundlesManager().sync_bundles_to_db()  # type: ignore[no-untyped-call]


def _load(dag_file: Path, dag_id: str | None) -> Any:
    from airflow.dag_processing.dagbag import BundleDagBag

    bag = BundleDagBag(dag_folder=dag_file, bundle_path=dag_file.parent, safe_mode=False)
    if bag.import_errors:
        raise SystemExit(f"{dag_file}: cannot be loaded: {bag.import_errors}")
    if dag_id is None and len(bag.dags) != 1:
        raise SystemExit(f"{dag_file}: defines {sorted(bag.dags) or 'no DAG'}: name one with --dag-id")
    dag = bag.dags.get(dag_id) if dag_id else next(iter(bag.dags.values()))
    if dag is None:
        raise SystemExit(f"--dag-id {dag_id}: not in {dag_file} (it defines {sorted(bag.dags)})")
    _register(dag)
    return dag


def _warm_up() -> None:
    """One throwaway run of a one-task DAG, and the Google clients imported: what Airflow does once per
    process (the in-process Execution API, the first task's start; about 6 s here) and the clients'
    import (about 3 s) happen before the night, not in its first hours (at 600 times, a real second is
    ten minutes of it)."""
    import importlib

    from airflow.sdk import DAG, task

    from airflow_vertex_dist.hooks.off_loop import CLIENTS_MODULE

    importlib.import_module(CLIENTS_MODULE)
    with DAG("airflow_vertex_dist_rehearsal_warm_up", schedule=None) as dag:

        @task
        def warm_up() -> None:
            return None

        warm_up()
    _register(dag)
    dag.test()


def _register(dag: Any) -> None:
    from airflow.dag_processing.collection import update_dag_parsing_results_in_db
    from airflow.serialization.serialized_objects import LazyDeserializedDAG
    from airflow.utils.session import create_session

    with create_session() as session:
        update_dag_parsing_results_in_db(
            "dags-folder", None, [LazyDeserializedDAG.from_dag(dag)], {}, None, set(), session=session
        )


def logical_dates(dag: Any, start: datetime, end: datetime, limit: int = 1000) -> list[datetime]:
    """The logical dates of ``dag``'s schedule from ``start`` to ``end`` (both included), as a backfill
    of that range creates them (its timetable, catchup on)."""
    from airflow.timetables.base import TimeRestriction

    restriction = TimeRestriction(earliest=start, latest=end, catchup=True)
    found: list[datetime] = []
    last = None
    while len(found) < limit:
        info = dag.timetable.next_dagrun_info(last_automated_data_interval=last, restriction=restriction)
        if info is None or info.logical_date is None:
            break
        found.append(info.logical_date)
        last = info.data_interval
    return found


def _xcoms(session: Any, dr: Any, task_id: str, map_index: int) -> dict[str, Any]:
    from airflow.models.xcom import XComModel

    out: dict[str, Any] = {}
    for key in _XCOM_KEYS:
        query = XComModel.get_many(
            key=key, run_id=dr.run_id, dag_ids=dr.dag_id, task_ids=task_id, map_indexes=map_index
        )
        row = session.execute(query.with_only_columns(XComModel.value)).first()
        if row is not None:
            out[key] = json.loads(row[0]) if isinstance(row[0], str | bytes) else row[0]
    return out


def _run(dag: Any, logical_date: datetime) -> dict[str, Any]:
    from airflow.utils.session import create_session

    from airflow_vertex_dist.hooks.labels import RUN_LABEL, run_labels

    dr = dag.test(logical_date=logical_date, run_after=logical_date)
    tasks: list[dict[str, Any]] = []
    with create_session() as session:
        for ti in dr.get_task_instances(session=session):
            label = run_labels(dr.dag_id, ti.task_id, dr.run_id, ti.map_index)[RUN_LABEL]
            tasks.append(
                {
                    "task_id": ti.task_id,
                    "map_index": ti.map_index,
                    "state": str(ti.state),
                    "try_number": ti.try_number,
                    "run_label": label,
                    "xcom": _xcoms(session, dr, ti.task_id, ti.map_index),
                }
            )
    return {
        "logical_date": logical_date.isoformat(),
        "run_id": dr.run_id,
        "state": str(dr.state),
        "tasks": sorted(tasks, key=lambda t: (t["task_id"], t["map_index"])),
    }


def main(argv: list[str]) -> int:
    plan = json.loads(Path(argv[0]).read_text())
    if plan.get("migrate"):
        _migrate()
        return 0
    dag = _load(Path(plan["dag_file"]), plan.get("dag_id"))
    if plan.get("dates") is None:  # the range's dates, from the DAG's own schedule
        start, end = (datetime.fromisoformat(plan[k]) for k in ("start_date", "end_date"))
        dates = [d.isoformat() for d in logical_dates(dag, start, end)]
        Path(plan["result"]).write_text(json.dumps({"dates": dates}))
        return 0
    _warm_up()
    Path(plan["ready"]).touch()
    if not sys.stdin.readline():  # the parent gave up before the night began
        return 1
    result = Path(plan["result"])
    runs: list[dict[str, Any]] = []
    for text in plan["dates"]:
        runs.append(_run(dag, datetime.fromisoformat(text)))
        result.write_text(json.dumps({"dag_id": dag.dag_id, "runs": runs}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
