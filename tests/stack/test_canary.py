"""A canary secret never leaks: task logs, XCom, rendered templates, trigger rows, the emulator's log.

The canary is in two places: the connection's key JSON (``keyfile_dict``: the hook ignores credentials
when the connection points at the emulator, but Airflow still loads the connection into the task) and
the job's env, from a Variable whose name marks it sensitive (``avd_api_secret``) under an env name
that marks it sensitive (``TRAINING_API_TOKEN``).

What "never appears" means here: the job body sent to the JobService carries the env value, as Vertex
needs it (the emulator's store has it, as Vertex's would); everything *Airflow* shows or stores about
the task -- its log, its XComs, its rendered template fields, the trigger's kwargs in the metadata DB --
and the emulator's own process log never contain the value. Airflow's secrets masker redacts it in the
log and rendered fields because the Variable's and the env variable's names are sensitive.

The replica prints the value, and two tasks run the job: ``train`` defers (its replica lines are
written by the triggerer, whose masker never read the Variable) and ``train_here`` waits in its
worker; both logs show the printed line, masked.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from .conftest import CANARY
from .figures import Figures
from .stack import AirflowStack

pytestmark = [pytest.mark.stack, pytest.mark.timeout(1200)]

CODE = (
    "import os, time; assert os.environ['TRAINING_API_TOKEN']; print('token present'); "
    "print('token=' + os.environ['TRAINING_API_TOKEN']); time.sleep(6)"
)
TASKS = ("train", "train_here")


def trigger_kwargs(stack: AirflowStack) -> list[str]:
    import psycopg2

    conn = psycopg2.connect(host="127.0.0.1", port=stack.pg_port, user="airflow", dbname="postgres")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT classpath, kwargs FROM trigger")
            return [f"{classpath} {kwargs}" for classpath, kwargs in cur.fetchall()]
    finally:
        conn.close()


def test_canary_never_leaks(stack: AirflowStack) -> None:
    dag_id = "stack_secret"
    run_id = stack.trigger(dag_id, {"code": CODE})
    stack.wait_task_state(dag_id, run_id, "train", {"deferred"}, timeout=180)
    rows = trigger_kwargs(stack)
    assert rows, "no trigger row while the task is deferred"
    assert stack.wait_run(dag_id, run_id, timeout=300) == "success"

    run = quote(run_id, safe="")
    rendered_by_task, xcom_values, api_logs = [], [], {}
    for task in TASKS:
        ti = stack.task_instance(dag_id, run_id, task)
        base = f"/api/v2/dags/{dag_id}/dagRuns/{run}/taskInstances/{task}"
        rendered_by_task.append(stack.api("GET", base)["rendered_fields"])
        xcoms = stack.api("GET", f"{base}/xcomEntries")
        xcom_values += [
            stack.api("GET", f"{base}/xcomEntries/{entry['key']}") for entry in xcoms["xcom_entries"]
        ]
        api_logs[task] = "\n".join(
            stack.task_log(dag_id, run_id, task, n) for n in range(1, int(ti["try_number"]) + 1)
        )
    rendered = json.dumps(rendered_by_task)
    log_files = [
        p.read_text(errors="replace") for p in (stack.log_folder / f"dag_id={dag_id}").rglob("*.log")
    ]
    emulator_log = (stack.root / "emulator.log").read_text(errors="replace")
    places = {
        "trigger kwargs": "\n".join(rows),
        "rendered fields": rendered,
        "xcom": json.dumps(xcom_values),
        "task log (API)": "\n".join(api_logs.values()),
        "task log (files)": "\n".join(log_files),
        "emulator log": emulator_log,
    }
    leaks = sorted(where for where, text in places.items() if CANARY in text)
    Figures.record("security", "canary_places_checked", sorted(places))
    Figures.record("security", "canary_leaks", leaks)
    assert leaks == []
    # the checks looked at real content: the job ran with the value, the task logged its job
    assert "TRAINING_API_TOKEN" in rendered and "***" in rendered
    assert all("Job page:" in text for text in api_logs.values())
    # the replica printed the value; each task's log shows its line masked, deferred or not
    for task, text in api_logs.items():
        assert "token=***" in text, task
    assert "VertexJobTrigger" in places["trigger kwargs"]
    assert not any(word in places["trigger kwargs"] for word in ("keyfile", "private_key", "credentials"))
    jobs = [j for j in stack.emulator_jobs() if j["labels"].get("airflow-dag") == dag_id]
    assert len(jobs) == len(TASKS)
    for job in jobs:
        env = job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
        assert env == [{"name": "TRAINING_API_TOKEN", "value": CANARY}]  # the job itself legitimately has it
    replica_logs = "".join(p.read_text(errors="replace") for p in Path(stack.emulator_state).rglob("*.log"))
    assert "token present" in replica_logs
