"""The runner with real replica processes: cluster wiring, the replicas' environment, Python
packages, and clear failures of a bad package or image."""

from __future__ import annotations

import json
import os
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from runner_support import (
    TRAINERS,
    alive,
    create,
    finished,
    in_groups,
    make_sdist,
    pool,
    wait_for,
)

from vertex_emulator.core.gcs import GCS_MOUNTED_NOTE, GCS_NOTE
from vertex_emulator.runtime.cluster import job_spec_as_dict
from vertex_emulator.runtime.replica_gcs import gcs_mount_problem

pytestmark = pytest.mark.slow


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
        assert r["env"]["CLOUD_ML_PROJECT_ID"] == name.split("/")[1]
        assert r["env"]["CLOUD_ML_REGION"] == name.split("/")[3]
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
        service |= {"CLOUD_ML_PROJECT_ID", "CLOUD_ML_REGION"}
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
    assert note == (GCS_NOTE if gcs_mount_problem(config.gcs_root) else GCS_MOUNTED_NOTE)  # /gcs/ or why not
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
    code = "import sys\nprint('sdist trainer', *sys.argv[1:], flush=True)\n"
    return make_sdist(path, "sdtrainer", code, setup_prelude)


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
    # the cancel stopped pip: its setup.py sleeps 60 s (a liveness bound, loose for a loaded host)
    assert job["state"] == "JOB_STATE_CANCELLED" and time.monotonic() - t0 < 30
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
