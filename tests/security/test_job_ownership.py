"""Issue 37, finding 3: ownership from an editable record.

The job tab and the "marked failed" listener trusted the ``vertex_job_owner`` XCom: one REST ``PATCH``
of that XCom on DAG A made A's tab show DAG B's job, and marking A failed then cancelled B's job. The
record also named the connection to use. Now the XCom only names a candidate: the job is read and
used only when its labels say it is this task instance's, and the connection is the task's own, from
its rendered template fields (written by its run, which no REST API call can change).

Both DAGs run for real (``dag.test()`` against the emulator, the metadata DB migrated); A's record is
changed as Airflow's REST API changes an XCom (``PATCH .../xcomEntries/{key}`` sets the row's value
through ``XComModel.serialize_value``).
"""

from __future__ import annotations

from typing import Any

import pytest
from airflow.sdk import DAG
from fastapi.testclient import TestClient

from airflow_vertex_dist import _compat
from airflow_vertex_dist.links import OWNER_XCOM_KEY
from airflow_vertex_dist.listeners import CANCELLER, owned_job
from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.ui import app as ui_app
from tests.operators.fixtures import airflow_db, emulator, vertex_conn  # noqa: F401 - fixtures
from tests.operators.harness import dag_xcom, poll, run_dag, ti_state
from tests.operators.test_training import jobs, spec
from tests.operators.test_user_actions import fire, orm_ti
from tests.stack.figures import Figures
from vertex_emulator.app import Emulator

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

B_LINE = "a line of dag B's job"


def _patch_xcom(dag_id: str, key: str, value: Any) -> None:
    """Set an XCom's value as the REST API's PATCH does (``update_xcom_entry``)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        row = session.scalars(select(XComModel).where(XComModel.dag_id == dag_id, XComModel.key == key)).one()
        row.value = XComModel.serialize_value(value)


def _two_dags(em: Emulator, a: str, b: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """DAG B's task leaves its job running (``wait_for_completion=False``); DAG A's task ran its own
    job to the end and recorded it owns it. Returns (A's job, B's job)."""
    with DAG(b, schedule=None) as dag_b:
        code = f"import time; print({B_LINE!r}, flush=True); time.sleep(300)"
        VertexTrainingOperator(
            task_id="train", spec=spec(code, name="job-of-dag-b"), wait_for_completion=False
        )
    assert ti_state(run_dag(dag_b), "train") == "success"
    job_b = poll(lambda: next(iter(jobs(em)), None), what="B's job")
    poll(lambda: em.store.get(job_b["name"])["state"] == "JOB_STATE_RUNNING", timeout=60, what="B's job runs")
    with DAG(a, schedule=None) as dag_a:
        VertexTrainingOperator(task_id="train", spec=spec("pass", name="job-of-dag-a"), poll_interval=0.3)
    dr_a = run_dag(dag_a)
    assert ti_state(dr_a, "train") == "success"
    record = dag_xcom(dr_a, "train", key=OWNER_XCOM_KEY)
    job_a = em.store.get(record["name"])
    return job_a, job_b


def test_an_edited_owner_record_neither_shows_nor_cancels_another_dags_job(
    vertex_conn: Emulator,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, job_b = _two_dags(vertex_conn, "owner_a", "owner_b")
    # the API user who may edit DAG A's XComs names DAG B's job, and a connection of their choosing
    _patch_xcom(
        "owner_a", OWNER_XCOM_KEY, {"name": job_b["name"], "conn_id": "theirs", "impersonation_chain": []}
    )
    _patch_xcom("owner_a", "vertex_job", {"name": job_b["name"], "console_url": "http://x/"})
    ti_a = orm_ti("owner_a")

    # the connection is the task's own, whatever the record says
    owned = owned_job(ti_a)
    assert owned is not None and owned.conn_id == "vertex_dist_default"  # today: "theirs"

    # A's tab: not B's job, nor its lines
    monkeypatch.setattr(_compat, "ui_auth_dependencies", lambda: (lambda: None, lambda: None))
    response = TestClient(ui_app.create_app()).get("/ti/owner_a/" + ti_a.run_id + "/train/-1")
    assert response.status_code == 409, response.text[:300]  # today: 200 with B's job
    assert "job-of-dag-b" not in response.text and B_LINE not in response.text
    assert "is not the job of task owner_a.train" in response.text
    # the "Vertex AI jobs" list: A's row shows nothing of B's job (its display name, its state)
    monkeypatch.setattr(_compat, "readable_dag_ids", lambda user: {"owner_a"})
    listing = TestClient(ui_app.create_app()).get("/jobs")
    assert listing.status_code == 200, listing.text[:300]
    assert "owner_a" in listing.text and "job-of-dag-b" not in listing.text

    # marking A failed by hand: B's job runs on
    fire("on_task_instance_failed", ti_a)
    assert CANCELLER.wait_idle(timeout=60)
    assert vertex_conn.store.get(job_b["name"])["state"] == "JOB_STATE_RUNNING"  # today: CANCELLED
    assert f"not cancelling: job {job_b['name']} is not the job of task owner_a.train" in caplog.text
    Figures.record(
        "security_probes",
        "owner_xcom_edit",
        {
            "input": "PATCH of DAG A's vertex_job_owner XCom to name DAG B's running job and another connection; open A's tab; mark A failed",  # noqa: E501 - the table's text
            "answer": "409, nothing of B's job shown; B's job left RUNNING, the refusal logged; A's own connection used (was: B's job and lines shown, B's job cancelled, the XCom's connection used)",  # noqa: E501 - the table's text
        },
    )


def test_the_record_of_the_tasks_own_job_still_works(
    vertex_conn: Emulator,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check lets through what is genuine: A's tab shows A's job, read with A's connection."""
    job_a, _ = _two_dags(vertex_conn, "own_a", "own_b")
    ti_a = orm_ti("own_a")
    monkeypatch.setattr(_compat, "ui_auth_dependencies", lambda: (lambda: None, lambda: None))
    response = TestClient(ui_app.create_app()).get("/ti/own_a/" + ti_a.run_id + "/train/-1")
    assert response.status_code == 200, response.text[:300]
    assert "job-of-dag-a" in response.text and "job-of-dag-b" not in response.text
