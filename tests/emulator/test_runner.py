"""The runner with real replica processes: cluster wiring, states, failures, cancel, timeout, restart."""

from __future__ import annotations

import json
import os
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from airflow_vertex_dist.emulator.cluster import job_spec_as_dict
from airflow_vertex_dist.emulator.config import EmulatorConfig
from airflow_vertex_dist.emulator.runner import Runner
from airflow_vertex_dist.emulator.store import JobStore

TRAINERS = Path(__file__).parent / "trainers"
PARENT = "projects/p/locations/us-central1"
pytestmark = pytest.mark.slow


def wait_for(check: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[JobStore, EmulatorConfig, Runner]]:
    store = JobStore(tmp_path / "state" / "jobs.sqlite3")
    config = EmulatorConfig(
        state_dir=tmp_path / "state",
        gcs_root=tmp_path / "gcs",
        stop_grace_s=1.0,
        web_base_url="http://127.0.0.1:9",
    )
    runner = Runner(store, config)
    yield store, config, runner
    runner.close()
    store.close()


def pool(script: str, count: int = 1, *args: str, record: Path | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "imageUri": "local/trainer:1",
        "command": [sys.executable, str(TRAINERS / script)],
        "args": list(args),
    }
    if record is not None:
        container["env"] = [{"name": "RECORD_DIR", "value": str(record)}]
    return {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": str(count),
        "containerSpec": container,
    }


def create(store: JobStore, runner: Runner, spec: dict[str, Any], name: str = "job") -> str:
    job = store.insert("customJobs", PARENT, {"displayName": name, "jobSpec": spec})
    runner.submit(job["name"])
    return str(job["name"])


def finished(store: JobStore, name: str, timeout: float = 30.0) -> dict[str, Any]:
    terminal = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"}
    return dict(
        wait_for(lambda: (j := store.get(name))["state"] in terminal and j, timeout, f"{name} to end")
    )


def alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def in_groups(pgids: set[int]) -> list[int]:
    """Live processes (not zombies) of the given process groups."""
    out = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) in pgids and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    return out


def test_distributed_job_replicas_connect_and_see_the_documented_environment(
    env: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, config, runner = env
    # the emulator's own environment: none of it may reach a replica (Vertex AI would not set it)
    monkeypatch.setenv("AIRFLOW_CONN_VERTEX_DIST_DEFAULT", "canary-connection-secret")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "key.json"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    config.storage_endpoint = "http://127.0.0.1:7"
    rec = tmp_path / "rec"
    rec.mkdir()
    spec = {
        "workerPoolSpecs": [
            pool("cluster_trainer.py", 1, "--role-arg", record=rec),
            pool("cluster_trainer.py", 2, record=rec),
            pool("cluster_trainer.py", 1, record=rec),
            pool("cluster_trainer.py", 1, record=rec),
        ],
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/runs/a"},
        "enableWebAccess": True,
    }
    name = create(store, runner, spec)
    running = wait_for(lambda: (j := store.get(name))["state"] != "JOB_STATE_QUEUED" and j, what="scheduling")
    assert running["state"] in ("JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED")
    job = finished(store, name, timeout=120)  # five interpreters: slow on a loaded machine
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    assert "error" not in job and job["startTime"] <= job["endTime"]
    keys = ["workerpool0-0", "workerpool1-0", "workerpool1-1", "workerpool2-0", "workerpool3-0"]
    assert job["webAccessUris"] == {k: f"http://127.0.0.1:9/web/{name}/{k}" for k in keys}

    recs = {p.stem: json.loads(p.read_text()) for p in rec.glob("*.json")}
    assert sorted(recs) == keys
    # real TCP: the PS heard everyone, the chief heard the PS and both workers
    assert sorted(recs["workerpool2-0"]["heard"]) == [
        "workerpool0-0",
        "workerpool1-0",
        "workerpool1-1",
        "workerpool3-0",
    ]
    assert recs["workerpool0-0"]["replies"] == [
        "ack workerpool0-0 from workerpool2-0",
        "ack workerpool0-0 from workerpool1-0",
        "ack workerpool0-0 from workerpool1-1",
    ]
    assert recs["workerpool1-1"]["heard"] == ["workerpool0-0"]

    cluster = recs["workerpool0-0"]["CLUSTER_SPEC"]["cluster"]
    assert sorted(cluster) == ["workerpool0", "workerpool1", "workerpool2", "workerpool3"]
    assert [len(cluster[f"workerpool{i}"]) for i in range(4)] == [1, 2, 1, 1]
    addrs = [a for pool_addrs in cluster.values() for a in pool_addrs]
    assert len(set(addrs)) == 5 and all(a.startswith("127.0.0.1:") for a in addrs)
    job_dict = job_spec_as_dict(spec)
    for key, r in recs.items():
        pool_name, index = key.split("-")
        cs = r["CLUSTER_SPEC"]
        assert cs == {
            "cluster": cluster,
            "environment": "cloud",
            "task": {"type": pool_name, "index": int(index)},
            "job": job_dict,
        }
        tf = r["TF_CONFIG"]
        assert tf["cluster"] == {
            "chief": cluster["workerpool0"],
            "worker": cluster["workerpool1"],
            "ps": cluster["workerpool2"],
        }  # never the evaluator
        tf_type = {
            "workerpool0": "chief",
            "workerpool1": "worker",
            "workerpool2": "ps",
            "workerpool3": "evaluator",
        }
        assert tf["task"] == {
            "type": tf_type[pool_name],
            "index": int(index),
            "cloud": f"{name.split('/')[-1]}-{key}",
        }
        assert tf["environment"] == "cloud" and tf["job"] == job_dict
        assert r["env"]["AIP_MODEL_DIR"] == "gs://bkt/runs/a/model/"
        assert r["env"]["AIP_CHECKPOINT_DIR"] == "gs://bkt/runs/a/checkpoints/"
        assert r["env"]["AIP_TENSORBOARD_LOG_DIR"] == "gs://bkt/runs/a/logs/"
        assert r["env"]["CLOUD_ML_JOB_ID"] == name.split("/")[-1]
        assert r["env"]["STORAGE_EMULATOR_HOST"] == "http://127.0.0.1:7"
        assert "CLOUD_ML_TRIAL_ID" not in r["env"]
        torch_vars = {"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"}
        if pool_name in ("workerpool0", "workerpool1"):
            assert {k: r["env"][k] for k in torch_vars} == {
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": cluster["workerpool0"][0].rsplit(":", 1)[1],
                "WORLD_SIZE": "3",
                "RANK": "0" if pool_name == "workerpool0" else str(1 + int(index)),
            }
        else:
            assert not torch_vars & set(r["env"])
        service = {"CLUSTER_SPEC", "TF_CONFIG", "CLOUD_ML_JOB_ID", "CLOUD_ML_HP_METRIC_FILE"}
        service |= {"STORAGE_EMULATOR_HOST"} | {n for n in r["env"] if n.startswith("AIP_")} | torch_vars
        local = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LC_ALL"}
        local |= {"PYTHONUNBUFFERED", "RECORD_DIR", "LC_CTYPE"}  # the pool's env; Python sets LC_CTYPE
        assert set(r["env"]) <= service | local, set(r["env"]) - service - local
        assert r["env"]["LC_ALL"] == "C.UTF-8" and r["env"]["PATH"] == os.environ["PATH"]
    assert (tmp_path / "gcs" / "bkt" / "runs" / "a" / "model").is_dir()
    assert recs["workerpool0-0"]["argv"] == ["--role-arg"]

    # the parameter server never exits by itself: the primary's success stopped it
    ps = runner.replica_view(name, "workerpool2-0")
    assert ps is not None and ps["state"] == "STOPPED" and not alive([ps["pid"]])
    primary = runner.replica_view(name, "workerpool0-0")
    assert primary is not None and primary["state"] == "SUCCEEDED" and primary["exitCode"] == 0
    assert primary["logTail"] == ["workerpool0-0 done"]  # the replica's own output
    log_file = config.state_dir / "logs" / name.split("/")[-1] / "workerpool2-0.log"
    note, output = log_file.read_text().splitlines()
    assert "/gcs/ (Vertex AI's Cloud Storage FUSE mount) is not available locally" in note
    assert output == "workerpool2-0 done"


def _wheel(path: Path) -> Path:
    """A minimal pure-Python wheel of package ``trainerpkg`` (module ``trainerpkg.task``)."""
    whl = path / "trainerpkg-0.1-py3-none-any.whl"
    task = (
        "import json, os, sys\n"
        "out = {'argv': sys.argv[1:], 'tf': os.environ.get('TF_CONFIG'), 'cs': os.environ['CLUSTER_SPEC'],\n"
        "       'flag': os.environ.get('FLAG'), 'model_dir': os.environ.get('AIP_MODEL_DIR')}\n"
        "open(os.environ['RECORD_DIR'] + '/pkg.json', 'w').write(json.dumps(out))\n"
    )
    files = {
        "trainerpkg/__init__.py": "",
        "trainerpkg/task.py": task,
        "trainerpkg-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: trainerpkg\nVersion: 0.1\n",
        "trainerpkg-0.1.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{n},,\n" for n in files) + "trainerpkg-0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(whl, "w") as zf:
        for n, text in files.items():
            zf.writestr(n, text)
        zf.writestr("trainerpkg-0.1.dist-info/RECORD", record)
    return whl


def test_single_replica_python_package_from_gcs_has_no_tf_config(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    rec = tmp_path / "rec"
    rec.mkdir()
    bucket = tmp_path / "gcs" / "bkt" / "pkgs"
    bucket.mkdir(parents=True)
    whl = _wheel(bucket)
    spec = {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": "1",
                "pythonPackageSpec": {
                    "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest",
                    "packageUris": [f"gs://bkt/pkgs/{whl.name}"],
                    "pythonModule": "trainerpkg.task",
                    "args": ["--epochs=2"],
                    "env": [
                        {"name": "RECORD_DIR", "value": str(rec)},
                        {"name": "FLAG", "value": "job-$(CLOUD_ML_JOB_ID)"},
                    ],
                },
            }
        ]
    }
    name = create(store, runner, spec)
    job = finished(store, name, timeout=60)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    out = json.loads((rec / "pkg.json").read_text())
    assert out["argv"] == ["--epochs=2"]
    assert out["tf"] is None  # single replica: no TF_CONFIG
    assert json.loads(out["cs"])["cluster"] == {
        "workerpool0": [json.loads(out["cs"])["cluster"]["workerpool0"][0]]
    }
    assert out["flag"] == f"job-{name.split('/')[-1]}"
    assert out["model_dir"] is None  # no baseOutputDirectory, no AIP_* dirs


def _sdist(path: Path, setup_prelude: str = "") -> Path:
    """A setuptools sdist of package ``sdtrainer`` (module ``sdtrainer.task``), built by hand."""
    import io
    import tarfile

    sdist = path / "sdtrainer-0.1.tar.gz"
    files = {
        "setup.py": setup_prelude
        + "from setuptools import setup\nsetup(name='sdtrainer', version='0.1', packages=['sdtrainer'])\n",
        "PKG-INFO": "Metadata-Version: 2.1\nName: sdtrainer\nVersion: 0.1\n",
        "sdtrainer/__init__.py": "",
        "sdtrainer/task.py": "import sys\nprint('sdist trainer', *sys.argv[1:], flush=True)\n",
    }
    with tarfile.open(sdist, "w:gz") as tf:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"sdtrainer-0.1/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return sdist


def test_python_package_from_a_local_sdist(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    sdist = _sdist(tmp_path)
    spec = {
        "workerPoolSpecs": [
            {
                "replicaCount": "1",
                "pythonPackageSpec": {
                    "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-12.py310:latest",
                    "packageUris": [str(sdist)],
                    "pythonModule": "sdtrainer.task",
                    "args": ["--lr=0.1"],
                },
            }
        ]
    }
    name = create(store, runner, spec)
    job = finished(store, name, timeout=90)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    view = runner.replica_view(name, "workerpool0-0")
    assert view is not None and view["logTail"] == ["sdist trainer --lr=0.1"]


def test_cancel_while_packages_install(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    started = tmp_path / "pip-started"
    prelude = f"import os, time\nopen({str(started)!r}, 'w').write(str(os.getpgrp()))\ntime.sleep(60)\n"
    sdist = _sdist(tmp_path, prelude)
    spec = {
        "workerPoolSpecs": [
            {
                "replicaCount": "1",
                "pythonPackageSpec": {
                    "executorImageUri": "x",
                    "packageUris": [str(sdist)],
                    "pythonModule": "m",
                },
            }
        ]
    }
    name = create(store, runner, spec)
    wait_for(lambda: started.exists() and started.read_text(), what="pip to run setup.py")
    assert store.get(name)["state"] == "JOB_STATE_PENDING"  # packages install while PENDING
    pip_group = int(started.read_text())
    t0 = time.monotonic()
    runner.cancel(name)
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_CANCELLED" and time.monotonic() - t0 < 5
    assert "startTime" not in job
    wait_for(lambda: in_groups({pip_group}) == [], what="pip to be stopped")


def test_missing_package_and_unmapped_image_fail_clearly(env: Any) -> None:
    store, config, runner = env
    bad_pkg = {
        "workerPoolSpecs": [
            {
                "replicaCount": "1",
                "pythonPackageSpec": {
                    "executorImageUri": "x",
                    "packageUris": ["gs://bkt/nope.tar.gz"],
                    "pythonModule": "m",
                },
            }
        ]
    }
    job = finished(store, create(store, runner, bad_pkg))
    assert job["state"] == "JOB_STATE_FAILED"
    assert "jobSpec.workerPoolSpecs[0].pythonPackageSpec.packageUris[0]" in job["error"]["message"]
    assert "does not exist" in job["error"]["message"]
    unmapped = {"workerPoolSpecs": [{"replicaCount": "1", "containerSpec": {"imageUri": "gcr.io/p/img:1"}}]}
    job = finished(store, create(store, runner, unmapped))
    assert job["state"] == "JOB_STATE_FAILED" and job["error"]["code"] == 3
    assert "containerSpec: image 'gcr.io/p/img:1' gives no command" in job["error"]["message"]
    missing = {
        "workerPoolSpecs": [
            {"replicaCount": "1", "containerSpec": {"imageUri": "i", "command": ["/no/such"]}}
        ]
    }
    job = finished(store, create(store, runner, missing))
    assert job["state"] == "JOB_STATE_FAILED" and "non-zero status of 127" in job["error"]["message"]
    assert "emulator: cannot start '/no/such'" in job["error"]["message"]
    # the image map supplies the entrypoint; args follow it
    config.image_map["gcr.io/p/img:1"] = [sys.executable, str(TRAINERS / "behave.py")]
    mapped = {
        "workerPoolSpecs": [
            {"replicaCount": "1", "containerSpec": {"imageUri": "gcr.io/p/img:1", "args": ["--say", "hi"]}}
        ]
    }
    name = create(store, runner, mapped)
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    view = runner.replica_view(name, "workerpool0-0")
    assert view is not None and view["logTail"] == ["hi"]


def test_crashed_replica_fails_the_job_with_its_log_tail(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    spec = {
        "workerPoolSpecs": [
            pool("behave.py", 1, "--sleep", "30"),
            pool("behave.py", 1, "--say", "step 1", "--say", "loss=nan", "--say", "boom", "--exit", "3"),
        ]
    }
    name = create(store, runner, spec)
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_FAILED"
    assert job["error"]["code"] == 3
    msg = job["error"]["message"]
    assert msg.startswith("The replica workerpool1-0 exited with a non-zero status of 3.")
    assert msg.endswith("step 1\nloss=nan\nboom")
    primary = runner.replica_view(name, "workerpool0-0")
    assert primary is not None and primary["state"] == "STOPPED" and not alive([primary["pid"]])


def test_cancel_stops_every_process_tree(env: Any, tmp_path: Path) -> None:
    """Each replica forks a child and a daemon (fork, setsid, fork): cancel leaves none of them."""
    store, config, runner = env
    pids = tmp_path / "pids"
    args = ("--sleep", "60", "--child", "--daemon", "--pidfile", str(pids))
    spec = {"workerPoolSpecs": [pool("behave.py", 1, *args), pool("behave.py", 2, *args)]}
    name = create(store, runner, spec)
    lines = wait_for(
        lambda: pids.exists() and len(pids.read_text().splitlines()) == 9 and pids.read_text().splitlines()
    )
    wait_for(lambda: store.get(name)["state"] == "JOB_STATE_RUNNING", what="RUNNING")
    recorded = [tuple(map(int, line.split())) for line in lines]
    groups = {pgid for _, pgid in recorded}
    assert len(groups) == 6  # each replica's group, and each daemon left it for a session of its own
    assert len(alive([pid for pid, _ in recorded])) == 9
    runner.cancel(name)
    assert store.get(name)["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_CANCELLED"
    assert job["error"]["code"] == 1 and "cancelled" in job["error"]["message"]
    assert in_groups(groups) == []
    assert alive([pid for pid, _ in recorded]) == []


DAEMON_THEN_EXIT = """\
import os, sys, time
if os.fork() == 0:  # a daemon: fork, setsid, fork again, the middle process exits
    os.setsid()
    if os.fork() == 0:
        open(sys.argv[1], "a").write(f"{os.getpid()}\\n")
        time.sleep(60)
    os._exit(0)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
"""


def test_a_daemon_does_not_outlive_its_replica(env: Any, tmp_path: Path) -> None:
    """The primary exits 0 while its daemon still runs: the job succeeds and the daemon is already gone."""
    store, config, runner = env
    pids = tmp_path / "pids"
    primary = pool("behave.py")
    primary["containerSpec"].update(command=[sys.executable, "-c", DAEMON_THEN_EXIT], args=[str(pids)])
    name = create(store, runner, {"workerPoolSpecs": [primary]})
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    daemon = int(pids.read_text().split()[0])
    assert alive([daemon]) == []  # stopped before the replica's exit was reported


def test_timeout_fails_the_job_and_leaves_no_process(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    pids = tmp_path / "pids"
    spec = {
        "workerPoolSpecs": [
            pool("behave.py", 1, "--sleep", "60", "--child", "--pidfile", str(pids)),
            pool("behave.py", 1, "--sleep", "60", "--child", "--pidfile", str(pids)),
        ],
        "scheduling": {"timeout": "1.5s"},
    }
    t0 = time.monotonic()
    name = create(store, runner, spec)
    job = finished(store, name)
    assert 1.5 <= time.monotonic() - t0 < 15
    assert job["state"] == "JOB_STATE_FAILED" and job["error"]["code"] == 4
    assert "scheduling.timeout of 1.5s" in job["error"]["message"]
    recorded = [tuple(map(int, line.split())) for line in pids.read_text().splitlines()]
    assert len(recorded) == 4
    assert in_groups({pgid for _, pgid in recorded}) == []


def test_restart_job_on_worker_restart_restarts_on_platform_crash_only(env: Any, tmp_path: Path) -> None:
    store, config, runner = env
    # A worker killed by the platform (an injected crash) restarts the entire job, as the proto says.
    config.faults.crash_replicas = ["workerpool1-*"]
    config.faults.crash_after_s = 0.3
    spec = {
        "workerPoolSpecs": [
            pool("behave.py", 1, "--sleep", "1.5"),
            pool("behave.py", 1, "--sleep", "30"),
        ],
        "scheduling": {"restartJobOnWorkerRestart": True},
    }
    name = create(store, runner, spec)
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    worker = runner.replica_view(name, "workerpool1-0")
    primary = runner.replica_view(name, "workerpool0-0")
    assert worker is not None and primary is not None
    assert worker["restarts"] == 1 and primary["restarts"] == 1  # the entire job restarted once
    assert "---- emulator: restart 1 of workerpool1-0 ----" in worker["logTail"]
    # without the flag the same crash fails the job
    spec["scheduling"] = {}
    job = finished(store, create(store, runner, spec, name="no-flag"))
    assert job["state"] == "JOB_STATE_FAILED"
    assert "crashed (emulator fault injection)" in job["error"]["message"]
    # with no restart left, a crash fails the job and says so
    config.restart_limit = 0
    spec["scheduling"] = {"restartJobOnWorkerRestart": True}
    job = finished(store, create(store, runner, spec, name="no-restart-left"))
    assert job["state"] == "JOB_STATE_FAILED" and "already restarted 0 times" in job["error"]["message"]


def test_restart_job_on_worker_restart_does_not_restart_user_code_failures(env: Any) -> None:
    store, config, runner = env
    # Training code exiting non-zero is not a worker restart: the job fails at once, with no restart,
    # so a deterministic bug fails locally as it fails on Vertex AI.
    spec = {
        "workerPoolSpecs": [pool("behave.py", 1, "--exit", "5")],
        "scheduling": {"restartJobOnWorkerRestart": True},
    }
    name = create(store, runner, spec)
    job = finished(store, name)
    assert job["state"] == "JOB_STATE_FAILED" and "status of 5" in job["error"]["message"]
    assert "not when training code exits with an error" in job["error"]["message"]
    view = runner.replica_view(name, "workerpool0-0")
    assert view is not None and view["restarts"] == 0


def test_faults_delay_scheduling_and_crash_replicas(env: Any) -> None:
    store, config, runner = env
    config.faults.queued_s = 0.3
    config.faults.pending_s = 0.3
    config.faults.crash_replicas = ["workerpool1-*"]
    config.faults.crash_after_s = 0.2
    spec = {"workerPoolSpecs": [pool("behave.py", 1, "--sleep", "30"), pool("behave.py", 2, "--sleep", "30")]}
    name = create(store, runner, spec)
    seen = {store.get(name)["state"]}
    seen.add(wait_for(lambda: (s := store.get(name)["state"]) != "JOB_STATE_QUEUED" and s))
    job = finished(store, name)
    assert seen == {"JOB_STATE_QUEUED", "JOB_STATE_PENDING"}
    assert job["state"] == "JOB_STATE_FAILED"
    assert "exited with a non-zero status of 137" in job["error"]["message"]
    assert "fault injection" in job["error"]["message"]


def test_reduction_server_replicas_run_idle(env: Any) -> None:
    store, config, runner = env
    rs = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    spec = {
        "workerPoolSpecs": [
            pool("behave.py", 1, "--sleep", "30"),
            pool("behave.py", 1, "--sleep", "30"),
            {
                "machineSpec": {"machineType": "n1-highcpu-16"},
                "replicaCount": "2",
                "containerSpec": {"imageUri": rs},
            },
        ],
        "enableWebAccess": True,
    }
    name = create(store, runner, spec)
    view = wait_for(
        lambda: (v := runner.replica_view(name, "workerpool2-1")) and v["logTail"] and v,
        what="reducer placeholder output",
    )
    assert view["state"] == "RUNNING" and alive([view["pid"]])
    assert "performs no reduction" in view["logTail"][0]
    assert sorted(store.get(name)["webAccessUris"]) == [
        "workerpool0-0",
        "workerpool1-0",
        "workerpool2-0",
        "workerpool2-1",
    ]
    runner.cancel(name)
    assert finished(store, name)["state"] == "JOB_STATE_CANCELLED"
    assert not alive([view["pid"]])


def test_the_service_variables_win_over_the_pools_env(env: Any, tmp_path: Path) -> None:
    """docs/concepts/replica-environment.md: a pool's own env is applied first and the service's
    variables win over it; AIP_TENSORBOARD_RESOURCE_NAME is set when the job names a Tensorboard."""
    store, _, runner = env
    out = tmp_path / "env.json"
    code = f"import json, os; open({str(out)!r}, 'w').write(json.dumps(dict(os.environ)))"
    spec = {
        "workerPoolSpecs": [
            {
                "machineSpec": {"machineType": "n1-standard-4"},
                "replicaCount": "1",
                "containerSpec": {
                    "imageUri": "local/trainer:1",
                    "command": [sys.executable, "-c", code],
                    "env": [
                        {"name": "CLOUD_ML_JOB_ID", "value": "mine"},
                        {"name": "AIP_MODEL_DIR", "value": "/tmp/mine"},
                        {"name": "CLUSTER_SPEC", "value": "{}"},
                        {"name": "OWN", "value": "kept"},
                    ],
                },
            }
        ],
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/runs/b"},
        "tensorboard": "projects/p/locations/us-central1/tensorboards/7",
    }
    name = create(store, runner, spec)
    job = finished(store, name, timeout=90)
    assert job["state"] == "JOB_STATE_SUCCEEDED", job.get("error")
    seen = json.loads(out.read_text())
    assert seen["CLOUD_ML_JOB_ID"] == name.split("/")[-1]
    assert seen["AIP_MODEL_DIR"] == "gs://bkt/runs/b/model/"
    assert json.loads(seen["CLUSTER_SPEC"])["task"] == {"type": "workerpool0", "index": 0}
    assert seen["OWN"] == "kept"
    assert seen["AIP_TENSORBOARD_RESOURCE_NAME"] == "projects/p/locations/us-central1/tensorboards/7"


def _script_pool(code: str, count: int = 1) -> dict[str, Any]:
    return {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": str(count),
        "containerSpec": {"imageUri": "local/trainer:1", "command": [sys.executable, "-c", code]},
    }


def test_a_worker_exiting_0_ends_only_that_replica(env: Any, tmp_path: Path) -> None:
    """docs/emulator.md: success is the primary exiting 0; another replica exiting 0 just ends that
    replica (the job runs on until the primary ends)."""
    store, _, runner = env
    release = tmp_path / "release"
    primary = f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)"
    name = create(store, runner, {"workerPoolSpecs": [_script_pool(primary), _script_pool("pass")]})
    wait_for(
        lambda: (runner.replica_view(name, "workerpool1-0") or {}).get("exitCode") == 0,
        timeout=90,  # two interpreters to start: slow on a loaded machine
        what="the worker's exit 0",
    )
    assert store.get(name)["state"] == "JOB_STATE_RUNNING"
    assert (runner.replica_view(name, "workerpool0-0") or {}).get("exitCode") is None
    release.touch()
    assert finished(store, name, timeout=60)["state"] == "JOB_STATE_SUCCEEDED"


def test_a_replica_ended_by_a_signal_reports_128_plus_n(env: Any) -> None:
    """docs/emulator.md: a failed job's message gives the replica's exit status, 128 + n for signal n."""
    store, _, runner = env
    code = "import os, signal; os.kill(os.getpid(), signal.SIGUSR1)"
    name = create(store, runner, {"workerPoolSpecs": [_script_pool(code)]})
    job = finished(store, name, timeout=90)
    assert job["state"] == "JOB_STATE_FAILED" and job["error"]["code"] == 3
    assert f"exited with a non-zero status of {128 + 10}" in job["error"]["message"]
    assert "workerpool0-0" in job["error"]["message"]
