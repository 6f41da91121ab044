"""The checkpoint contract run for real (dag.test(), the emulator's Spot preemption, real replica
processes): a trainer on a SPOT rung writes checkpoints to AIP_CHECKPOINT_DIR through the stock Cloud
Storage client, is preempted once (the emulator restarts the job, which stays RUNNING), resumes from its
last checkpoint and succeeds. The task log has one line for the preemption: its time, the last
checkpoint in the directory and the time lost between them, read back from Cloud Storage; the ledger
counts that time, not the whole run since the start. In the worker and deferred alike."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG

from airflow_vertex_dist.common.rfc3339 import rfc3339_nanos
from airflow_vertex_dist.specs import CapacityLadder, Checkpoints, Rung
from vertex_emulator import Capacity, testing
from vertex_emulator.app import Emulator

from .harness import CONN_ENV, connection_env, dag_xcom, logged, poll, run_dag, ti_state
from .test_capacity import Training, spec, task_jobs

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("airflow_db")]

#: the first start trains a second, writes ckpt-1 and ckpt-2 and is preempted while it trains on; the
#: restart resumes after ckpt-2, writes ckpt-3 and ends
TRAINER = """
import os, sys, time
from google.cloud import storage
bucket, _, prefix = os.environ["AIP_CHECKPOINT_DIR"][len("gs://"):].partition("/")
client = storage.Client()
done = sorted(int(b.name.rsplit("-", 1)[1].split(".")[0]) for b in client.list_blobs(bucket, prefix=prefix))
def save(step):
    client.bucket(bucket).blob(f"{prefix}ckpt-{step}.json").upload_from_string("{}")
if done:
    print("resumed after step", done[-1]); save(done[-1] + 1); sys.exit(0)
time.sleep(1.0); save(1); time.sleep(0.2); save(2)
time.sleep(120)
"""

LINE = re.compile(
    r"Preemption of (\d+) at (\S+): last checkpoint gs://bkt/run/checkpoints/ckpt-2\.json written at "
    r"(\S+): (\d+) s lost since it"
)


@pytest.fixture
def spot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """An emulator whose Spot notice is 0.2 s, its Cloud Storage API where this process reads too."""
    with testing.running_emulator(tmp_path, capacity=Capacity(spot_notice_s=0.2)) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", str(em.config.storage_endpoint))
        (Path(em.config.gcs_root) / "bkt").mkdir(parents=True)
        yield em


def _preempt_after_ckpt_two(em: Emulator) -> None:
    ckpt = Path(em.config.gcs_root) / "bkt" / "run" / "checkpoints" / "ckpt-2.json"

    def running() -> str | None:
        jobs = [j for j in task_jobs(em) if j["state"] == "JOB_STATE_RUNNING"]
        return str(jobs[0]["name"]) if jobs and ckpt.exists() else None

    name = poll(running, timeout=120, what="the first start's second checkpoint")
    gpus = em.service.gpus
    assert gpus is not None
    gpus.preempt(name, "workerpool0-0")


@pytest.mark.parametrize("deferrable", [False, True], ids=["worker", "deferred"])
def test_a_preemption_is_logged_with_the_time_since_the_last_checkpoint(
    spot: Emulator, deferrable: bool, capfd: pytest.CaptureFixture[str]
) -> None:
    the_spec = spec(TRAINER, base_output_directory="gs://bkt/run", checkpoints=Checkpoints())
    ladder = CapacityLadder(rungs=(Rung(name="a100-spot", strategy="SPOT"),))
    with DAG(
        f"ckpt_{deferrable}", schedule=None, start_date=datetime(2024, 1, 1, tzinfo=timezone.utc)
    ) as dag:
        Training(task_id="train", spec=the_spec, capacity=ladder, deferrable=deferrable, poll_interval=0.2)
    preempter = threading.Thread(target=_preempt_after_ckpt_two, args=(spot,), daemon=True)
    preempter.start()
    dr = run_dag(dag)
    preempter.join(timeout=10)
    text = logged(capfd)
    assert ti_state(dr, "train") == "success", text[-3000:]
    [job] = task_jobs(spot)
    assert job["state"] == "JOB_STATE_SUCCEEDED"

    [found] = LINE.findall(text)
    job_id, preempted, written, lost = found
    assert job_id == job["name"].rsplit("/", 1)[1]
    # the times are the service's: the preemption's from its log line, the checkpoint's from Cloud Storage
    from google.cloud import storage

    blob = storage.Client(project="test-project").bucket("bkt").get_blob("run/checkpoints/ckpt-2.json")
    assert blob is not None and blob.updated is not None
    assert abs(rfc3339_nanos(written) - blob.updated.timestamp() * 1e9) < 2e6  # microseconds kept
    since_ckpt = (rfc3339_nanos(preempted) - rfc3339_nanos(written)) / 1e9
    since_start = (rfc3339_nanos(preempted) - rfc3339_nanos(job["startTime"])) / 1e9
    assert since_start > since_ckpt + 1.0  # the trainer's first second is not lost: it checkpointed since
    assert int(lost) == round(since_ckpt)

    [entry] = dag_xcom(dr, "train")["ledger"]["jobs"]
    assert (entry["preemptions"], entry["strategy"]) == (1, "SPOT")
    assert entry["preemption_basis"] == "the job's service log and its checkpoints"
    assert entry["preempted_seconds"] == pytest.approx(since_ckpt, abs=0.002)


def test_without_a_readable_directory_the_line_says_so(
    spot: Emulator, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the directory cannot be read (here: no Cloud Storage API named for the emulator), the time
    since the job started is lost, and the line says why; the ledger keeps the service log's bound."""
    monkeypatch.delenv("STORAGE_EMULATOR_HOST")
    the_spec = spec(TRAINER, base_output_directory="gs://bkt/run", checkpoints=Checkpoints())
    with DAG("ckpt_unread", schedule=None, start_date=datetime(2024, 1, 1, tzinfo=timezone.utc)) as dag:
        Training(
            task_id="train",
            spec=the_spec,
            capacity=[Rung(name="a100-spot", strategy="SPOT")],
            deferrable=False,
            poll_interval=0.2,
        )
    preempter = threading.Thread(target=_preempt_after_ckpt_two, args=(spot,), daemon=True)
    preempter.start()
    dr = run_dag(dag)
    preempter.join(timeout=10)
    text = logged(capfd)
    assert ti_state(dr, "train") == "success", text[-3000:]
    assert "Could not read the checkpoints in gs://bkt/run/checkpoints/: STORAGE_EMULATOR_HOST" in text
    said = re.search(r"the checkpoints in gs://bkt/run/checkpoints/ could not be read: (\d+) s lost since "
                     r"the job started at (\S+)", text)  # fmt: skip
    assert said, text[-3000:]
    entry: dict[str, Any] = dag_xcom(dr, "train")["ledger"]["jobs"][0]
    assert entry["preemption_basis"] == "the job's service log" and entry["preemptions"] == 1
    assert int(said[1]) == round(entry["preempted_seconds"])
