"""The host's ceilings on replicas (``vertex_emulator.capacity.host``): a job with more replicas than the
emulator can ever run is refused at Create with RESOURCE_EXHAUSTED naming the ceiling and its flag; a job
that fits the ceiling but not the room left waits QUEUED, says why in its ``service`` log, and starts when
the running job ends; a tuning job's trials share the same room.

The emulator here runs at most 2 replicas at once (``--max-replica-processes 2``) and 3 per job
(``--max-job-replicas 3``), so a few ``python -c`` replicas fill it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions
from logging_support import job_filter, logging_client, text_of
from polling import poll_until
from probes import JSON, PARENT, Http, answer, record

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.capacity.host import HostCeilings, Room
from vertex_emulator.cli import parse_config
from vertex_emulator.core.config import EmulatorConfig
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.jobservice.service import job_to_proto
from vertex_emulator.runtime.cluster import replica_env, replicas_of
from vertex_emulator.runtime.runner import Runner

DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with testing.running_emulator(
        tmp_path_factory.mktemp("replica-ceilings"), max_replica_processes=2, max_job_replicas=3
    ) as em:
        yield em


def hold_until(path: Path) -> str:
    """Replica code that runs until ``path`` exists (at most a minute), then exits 0."""
    return (
        "import os, time\n"
        "end = time.time() + 60\n"
        f"while not os.path.exists({str(path)!r}) and time.time() < end:\n"
        "    time.sleep(0.02)\n"
    )


def job(name: str, code: str = "pass", *, workers: int = 0, **spec: Any) -> Any:
    from google.cloud.aiplatform_v1 import CustomJob

    return CustomJob.from_json(json.dumps(testing.container_job(name, code, workers=workers, **spec)))


def service_lines(em: Emulator, name: str) -> list[str]:
    client = logging_client(em, grpc=True)
    where = job_filter(name.rsplit("/", 1)[-1], 'resource.labels.task_name="service"')
    return [text_of(entry) for entry in client.list_entries(filter_=where)]


# -- Create: a job that can never run here --------------------------------------------------------


@pytest.mark.parametrize(
    ("workers", "flag"),
    [(2, "--max-replica-processes"), (3, "--max-job-replicas")],
    ids=["over-processes", "over-job-replicas"],
)
def test_a_job_over_the_ceiling_is_refused_at_create_naming_the_ceiling(
    small: Emulator, workers: int, flag: str
) -> None:
    client = testing.grpc_client(small)
    with pytest.raises(exceptions.ResourceExhausted) as info:
        client.create_custom_job(parent=PARENT, custom_job=job("too-big", workers=workers))
    text = str(info.value.message)
    assert text.startswith(f"job_spec.worker_pool_specs: the job has {1 + workers} replicas"), text
    assert flag in text and "Vertex AI documents no such limit" in text
    web = Http(small)
    body = json.dumps(testing.container_job("too-big", workers=workers)).encode()
    status, data = web.request("POST", f"/v1/{PARENT}/customJobs", body, JSON)
    assert (status, data["error"]["status"]) == (429, "RESOURCE_EXHAUSTED"), data
    assert flag in data["error"]["message"]
    assert not small.store.list("customJobs", PARENT) or all(
        j["displayName"] != "too-big" for j in small.store.list("customJobs", PARENT)
    )


def test_a_tuning_job_whose_trials_cannot_fit_is_refused_at_create(small: Emulator) -> None:
    from google.cloud.aiplatform_v1 import HyperparameterTuningJob

    body = testing.tuning_job("too-big-trials")
    body["trialJobSpec"] = testing.container_job("t", workers=2)["jobSpec"]
    client = testing.grpc_client(small)
    with pytest.raises(exceptions.ResourceExhausted) as info:
        client.create_hyperparameter_tuning_job(
            parent=PARENT, hyperparameter_tuning_job=HyperparameterTuningJob.from_json(json.dumps(body))
        )
    text = str(info.value.message)
    assert text.startswith("trial_job_spec.worker_pool_specs: each trial of the tuning job has 3 replicas")
    assert "--max-replica-processes" in text


def test_two_billion_replicas_are_refused_at_once_with_the_default_ceilings(
    emulator: Emulator, web: Http
) -> None:
    spec = testing.container_job("huge", workers=1)
    spec["jobSpec"]["workerPoolSpecs"][1]["replicaCount"] = str(2**31 - 1)
    status, data = web.request("POST", f"/v1/{PARENT}/customJobs", json.dumps(spec).encode(), JSON)
    assert (status, data["error"]["status"]) == (429, "RESOURCE_EXHAUSTED"), data
    assert (
        "2147483648 replicas" in data["error"]["message"]
        and "--max-job-replicas 64" in data["error"]["message"]
    )
    record(
        "replica_ceiling_create",
        "Create over REST with a worker pool of replicaCount 2,147,483,647",
        f"{answer(status, data)} naming job_spec.worker_pool_specs and --max-job-replicas (was: accepted; "
        "40 replicas made 80 processes)",
    )


# -- the room left: a job waits QUEUED, then runs -------------------------------------------------


def test_a_job_beyond_the_room_left_waits_queued_says_why_and_runs_when_room_frees(
    small: Emulator, tmp_path: Path
) -> None:
    client = testing.grpc_client(small)
    release = tmp_path / "release"
    first = client.create_custom_job(parent=PARENT, custom_job=job("fills", hold_until(release), workers=1))
    testing.wait_for_state(client, first.name, ["JOB_STATE_RUNNING"], timeout=DEADLINE_S)
    second = client.create_custom_job(parent=PARENT, custom_job=job("waits"))
    third = client.create_custom_job(parent=PARENT, custom_job=job("cancelled-while-waiting"))

    def line() -> list[str]:
        waiting = [w["job"] for w in small.service.stats()["replicas"]["waiting"]]
        return waiting if sorted(waiting) == sorted([second.name, third.name]) else []

    # the line's order is the order the two jobs' threads reached it, not always their creation order
    order = poll_until(line, timeout=DEADLINE_S, interval=0.05, what="both jobs in line for room")
    assert client.get_custom_job(name=second.name).state.name == "JOB_STATE_QUEUED"
    for name, ahead in zip(order, ["0 jobs wait", "1 job waits"], strict=True):
        reason = poll_until(
            lambda name=name: [t for t in service_lines(small, name) if t.startswith("Waiting for room")],
            timeout=DEADLINE_S,
            interval=0.05,
            what="the reason in the service log",
        )
        assert service_lines(small, name)[0] == "Waiting for job to be provisioned."
        assert reason == [
            "Waiting for room to run 1 replicas: this emulator runs at most 2 replicas at once "
            f"(--max-replica-processes); 2 are running and {ahead} ahead of this one. It starts when "
            "running jobs end."
        ]
    # a job cancelled while it waits ends CANCELLED and leaves the line
    client.cancel_custom_job(name=third.name)
    testing.wait_for_state(client, third.name, ["JOB_STATE_CANCELLED"], timeout=DEADLINE_S)
    assert client.get_custom_job(name=second.name).state.name == "JOB_STATE_QUEUED"
    release.touch()
    done = testing.wait_for_state(client, second.name, ["JOB_STATE_SUCCEEDED"], timeout=DEADLINE_S)
    assert client.get_custom_job(name=first.name).state.name == "JOB_STATE_SUCCEEDED"
    assert done.start_time.timestamp() >= client.get_custom_job(name=first.name).end_time.timestamp()
    assert small.service.stats()["replicas"] == {
        "ceiling": 2,
        "running": 0,
        "waiting": [],
        "max_job_replicas": 3,
    }


TRIAL = """
import json, os, sys, time
import hypertune
start = time.time()
time.sleep(0.3)
x = next(a for a in sys.argv if a.startswith("--x=")).split("=")[1]
with open(os.path.join({out!r}, x + ".json"), "w") as fh:
    json.dump([start, time.time()], fh)
hypertune.HyperTune().report_hyperparameter_tuning_metric(
    hyperparameter_metric_tag="score", metric_value=float(x), global_step=1)
"""


def test_a_tuning_jobs_parallel_trials_share_the_ceiling(small: Emulator, tmp_path: Path) -> None:
    from google.cloud.aiplatform_v1 import HyperparameterTuningJob

    out = tmp_path / "trials"
    out.mkdir()
    body = testing.tuning_job("parallel", TRIAL.format(out=str(out)), max_trials=5, parallel=5)
    client = testing.grpc_client(small)
    tuning = client.create_hyperparameter_tuning_job(
        parent=PARENT, hyperparameter_tuning_job=HyperparameterTuningJob.from_json(json.dumps(body))
    )
    done = testing.wait_for_state(client, tuning.name, ["JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"], 120)
    assert done.state.name == "JOB_STATE_SUCCEEDED", done.error.message
    spans = [json.loads(path.read_text()) for path in out.glob("*.json")]
    assert len(spans) == 5
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running, most = 0, 0
    for _, step in edges:
        running += step
        most = max(most, running)
    assert most <= 2, spans  # parallelTrialCount 5, ceiling 2 one-replica trials


# -- the pieces -----------------------------------------------------------------------------------


def test_the_room_serves_jobs_first_come_first_served() -> None:
    room = Room(3)
    woken: list[str] = []
    assert room.acquire("a", 2, lambda: woken.append("a"))
    assert not room.acquire("big", 2, lambda: woken.append("big"))  # 1 left: waits
    assert not room.acquire("small", 1, lambda: woken.append("small"))  # fits, but "big" is first
    assert room.snapshot()["waiting"] == [{"job": "big", "replicas": 2}, {"job": "small", "replicas": 1}]
    room.release("a")
    assert woken == ["big", "small"]
    assert not room.acquire("small", 1, lambda: None)
    assert room.acquire("big", 2, lambda: None) and room.acquire("small", 1, lambda: None)
    assert room.snapshot() == {"ceiling": 3, "running": 3, "waiting": []}
    with pytest.raises(ValueError, match="at least 1"):
        Room(0)


def test_the_ceilings_are_flags_and_config() -> None:
    config = parse_config(["--state-dir", "s", "--max-replica-processes", "8", "--max-job-replicas", "4"])
    assert (config.max_replica_processes, config.max_job_replicas) == (8, 4)
    defaults = parse_config(["--state-dir", "s"])
    assert (defaults.max_replica_processes, defaults.max_job_replicas) == (64, 64)
    for flag in ("--max-replica-processes", "--max-job-replicas"):
        with pytest.raises(SystemExit):
            parse_config(["--state-dir", "s", flag, "0"])
    assert HostCeilings(8, 4).parallel_trials(100, 3) == 2


def test_a_stored_job_over_a_lowered_ceiling_fails_instead_of_waiting_for_ever(tmp_path: Path) -> None:
    """A job stored by an emulator with a higher ceiling (and run again after a restart)."""
    store = JobStore(tmp_path / "state" / "jobs.sqlite3")
    config = EmulatorConfig(
        state_dir=tmp_path / "state", gcs_root=tmp_path / "gcs", max_replica_processes=2, stop_grace_s=1.0
    )
    runner = Runner(store, config)
    try:
        body = testing.container_job("stored-big", workers=2)
        name = str(store.insert("customJobs", PARENT, body)["name"])
        runner.submit(name)
        job = poll_until(
            lambda: (j := store.get(name))["state"] == "JOB_STATE_FAILED" and j,
            timeout=DEADLINE_S,
            interval=0.05,
            what="the job to fail",
        )
    finally:
        runner.close()
        store.close()
    assert job["error"]["code"] == 8
    assert "3 replicas" in job["error"]["message"] and "--max-replica-processes" in job["error"]["message"]


# -- what the ceilings bound: the replicas' environment and a job's Get ----------------------------


def _env_bytes(replicas: int) -> tuple[int, int]:
    """(every replica's service variables together, the largest one's), in bytes, for a job of one
    primary and ``replicas - 1`` workers."""
    spec = testing.container_job("env", workers=replicas - 1)["jobSpec"]
    reps = replicas_of(spec)
    addresses = {rep.key: f"127.0.0.1:{40000 + i}" for i, rep in enumerate(reps)}
    sizes = []
    for rep in reps:
        env = replica_env(
            job_id="1",
            job_spec=spec,
            replicas=reps,
            replica=rep,
            addresses=addresses,
            job=spec,
            gcs_root=Path("/nonexistent"),
            metric_file=Path("/m"),
        )
        sizes.append(sum(len(k) + len(v) + 2 for k, v in env.items()))
    return sum(sizes), max(sizes)


def _get_bytes(replicas: int) -> int:
    """The serialized CustomJob a Get returns for a RUNNING job with web access and ``replicas``."""
    from google.cloud.aiplatform_v1 import CustomJob

    body = testing.container_job("get", workers=replicas - 1, enableWebAccess=True)
    keys = ["workerpool0-0", *(f"workerpool1-{i}" for i in range(replicas - 1))]
    name = f"{PARENT}/customJobs/1234567890123456789"
    body.update(
        name=name,
        state="JOB_STATE_RUNNING",
        webAccessUris={key: f"http://127.0.0.1:8780/web/{name}/{key}" for key in keys},
    )
    return len(CustomJob.serialize(job_to_proto("customJobs", body)))


def test_the_ceilings_bound_the_replica_environment_and_a_jobs_get() -> None:
    """The largest job Create admits with the default ceilings: its replicas' environment (quadratic in
    its replicas) and its Get (a web access URI per replica) stay small."""
    largest_job = HostCeilings().job_ceiling
    assert largest_job == 64
    total, largest = _env_bytes(largest_job)
    assert largest < 16 * 1024 and total < 1 * 2**20
    get_64 = _get_bytes(largest_job)
    assert get_64 < 32 * 1024
    record(
        "replica_ceiling_env",
        "the service variables of every replica of the largest job the default ceilings allow (64)",
        f"{total / 2**20:.2f} MiB in all, {largest / 1024:.1f} KiB the largest replica's (was: 5,001 "
        "replicas accepted, about 909 MiB)",
    )
    record(
        "replica_ceiling_get",
        "Get of a RUNNING 64-replica job with web access (the default ceiling's largest)",
        f"{get_64 / 1024:.1f} KiB (was: a 100,000-replica job's Get was 14 MiB)",
    )
