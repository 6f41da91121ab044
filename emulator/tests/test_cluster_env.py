"""Unit tests of the per-replica environment (CLUSTER_SPEC, TF_CONFIG, AIP_*, CLOUD_ML_*)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vertex_emulator.core.gcs import join_uri, to_local_path
from vertex_emulator.runtime.cluster import (
    cluster_map,
    expand_env,
    is_reduction_server,
    job_spec_as_dict,
    local_env,
    replica_env,
    replicas_of,
)


def _pool(n: int, image: str = "trainer:1") -> dict[str, object]:
    return {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": str(n),
        "containerSpec": {"imageUri": image, "command": ["python"]},
    }


def _env(spec: dict[str, object], key: str, tmp_path: Path, trial: str | None = None) -> dict[str, str]:
    reps = replicas_of(spec)
    addresses = {r.key: f"127.0.0.1:{20000 + i}" for i, r in enumerate(reps)}
    rep = next(r for r in reps if r.key == key)
    return replica_env(
        job_id="123",
        job_spec=spec,
        replicas=reps,
        replica=rep,
        addresses=addresses,
        job=job_spec_as_dict(spec),
        gcs_root=tmp_path / "gcs",
        metric_file=tmp_path / "m",
        trial=trial,
    )


def test_primary_plus_ps_skips_empty_pool_and_tf_config_has_no_evaluator(tmp_path: Path) -> None:
    spec = {"workerPoolSpecs": [_pool(1), {}, _pool(1), _pool(1)]}
    env = _env(spec, "workerpool3-0", tmp_path)
    cs = json.loads(env["CLUSTER_SPEC"])
    assert cs["cluster"] == {
        "workerpool0": ["127.0.0.1:20000"],
        "workerpool2": ["127.0.0.1:20001"],
        "workerpool3": ["127.0.0.1:20002"],
    }
    assert cs["environment"] == "cloud"
    assert cs["task"] == {"type": "workerpool3", "index": 0}
    assert cs["job"]["worker_pool_specs"][1] == {}
    assert cs["job"]["worker_pool_specs"][0]["replica_count"] == "1"
    tf = json.loads(env["TF_CONFIG"])
    assert tf["cluster"] == {"chief": ["127.0.0.1:20000"], "ps": ["127.0.0.1:20001"]}
    assert tf["task"] == {"type": "evaluator", "index": 0, "cloud": "123-workerpool3-0"}
    assert tf["environment"] == "cloud"
    assert "AIP_MODEL_DIR" not in env and "CLOUD_ML_TRIAL_ID" not in env


def test_single_replica_has_no_tf_config(tmp_path: Path) -> None:
    env = _env({"workerPoolSpecs": [_pool(1)]}, "workerpool0-0", tmp_path)
    assert "TF_CONFIG" not in env
    assert json.loads(env["CLUSTER_SPEC"])["cluster"] == {"workerpool0": ["127.0.0.1:20000"]}
    assert env["CLOUD_ML_JOB_ID"] == "123"


def test_trial_and_output_dirs(tmp_path: Path) -> None:
    spec = {
        "workerPoolSpecs": [_pool(1), _pool(2)],
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/out/7"},
    }
    env = _env(spec, "workerpool1-1", tmp_path, trial="7")
    assert json.loads(env["CLUSTER_SPEC"])["task"] == {"type": "workerpool1", "index": 1, "trial": "7"}
    tf = json.loads(env["TF_CONFIG"])
    assert tf["task"]["type"] == "worker" and tf["task"]["trial"] == "7" and tf["task"]["index"] == 1
    assert tf["cluster"]["worker"] == ["127.0.0.1:20001", "127.0.0.1:20002"]
    assert env["CLOUD_ML_TRIAL_ID"] == "7"
    # the gs:// URIs Vertex AI gives (trainer code reaches them through STORAGE_EMULATOR_HOST)
    assert env["AIP_MODEL_DIR"] == "gs://bkt/out/7/model/"
    assert env["AIP_CHECKPOINT_DIR"] == "gs://bkt/out/7/checkpoints/"
    assert env["AIP_TENSORBOARD_LOG_DIR"] == "gs://bkt/out/7/logs/"
    with pytest.raises(ValueError, match=r"outputUriPrefix: '\.\.'"):
        _env({**spec, "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/../x"}}, "workerpool0-0", tmp_path)


def test_pytorch_variables_follow_ai_platform(tmp_path: Path) -> None:
    """MASTER_ADDR/PORT = the primary's address, WORLD_SIZE = pools 0 and 1, RANK 0 then workers 1..n."""
    rs = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    spec = {"workerPoolSpecs": [_pool(1), _pool(3), _pool(2, rs), _pool(1)]}
    got = {
        key: {k: env.get(k) for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")}
        for key in ("workerpool0-0", "workerpool1-0", "workerpool1-2", "workerpool2-0", "workerpool3-0")
        for env in [_env(spec, key, tmp_path)]
    }
    world = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "20000", "WORLD_SIZE": "4"}
    assert got["workerpool0-0"] == {**world, "RANK": "0"}
    assert got["workerpool1-0"] == {**world, "RANK": "1"}
    assert got["workerpool1-2"] == {**world, "RANK": "3"}
    none = dict.fromkeys(world.keys() | {"RANK"})
    assert got["workerpool2-0"] == none and got["workerpool3-0"] == none


def test_local_env_keeps_only_what_a_process_needs() -> None:
    emulator_env = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LC_ALL": "C.UTF-8",
        "AIRFLOW_CONN_X": "secret",
        "GOOGLE_APPLICATION_CREDENTIALS": "/k.json",
        "PYTHONPATH": "/src",
        "MARKER": "m",
    }
    assert local_env(emulator_env) == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LC_ALL": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
    }
    assert local_env(emulator_env, ["MARKER", "ABSENT"])["MARKER"] == "m"


def test_reduction_server_is_not_a_parameter_server(tmp_path: Path) -> None:
    rs = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    assert is_reduction_server({"containerSpec": {"imageUri": rs}})
    assert is_reduction_server({"containerSpec": {"imageUri": rs.replace("us-", "europe-")}})
    assert not is_reduction_server({"containerSpec": {"imageUri": "gcr.io/p/ps:1"}})
    spec = {"workerPoolSpecs": [_pool(1), _pool(1), _pool(2, rs)]}
    env = _env(spec, "workerpool1-0", tmp_path)
    assert set(json.loads(env["TF_CONFIG"])["cluster"]) == {"chief", "worker"}
    assert len(json.loads(env["CLUSTER_SPEC"])["cluster"]["workerpool2"]) == 2
    assert "TF_CONFIG" not in _env(spec, "workerpool2-1", tmp_path)


def test_bad_layouts_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"workerPoolSpecs\[0\]"):
        replicas_of({"workerPoolSpecs": [{}, _pool(1)]})
    with pytest.raises(ValueError, match=r"workerPoolSpecs\[1\].replicaCount"):
        replicas_of({"workerPoolSpecs": [_pool(1), {**_pool(1), "replicaCount": "x"}]})
    keys = [r.key for r in replicas_of({"workerPoolSpecs": [_pool(1), _pool(0), _pool(2)]})]
    assert keys == ["workerpool0-0", "workerpool2-0", "workerpool2-1"]
    assert cluster_map(replicas_of({"workerPoolSpecs": [_pool(1)]}), {"workerpool0-0": "h:1"}) == {
        "workerpool0": ["h:1"]
    }


def test_env_expansion() -> None:
    out = expand_env(
        [{"name": "A", "value": "x"}, {"name": "B", "value": "$(A)-$(CLOUD_ML_JOB_ID)-$$(A)-$(NOPE)"}],
        {"CLOUD_ML_JOB_ID": "9"},
        field="env",
    )
    assert out == {"A": "x", "B": "x-9-$(A)-$(NOPE)"}
    with pytest.raises(ValueError, match=r"env\[0\].name"):
        expand_env([{"name": "1x", "value": ""}], {}, field="env")


def test_gcs_mapping(tmp_path: Path) -> None:
    assert to_local_path("gs://b/a/c.whl", tmp_path) == tmp_path / "b" / "a" / "c.whl"
    assert to_local_path("/x/y", tmp_path) == Path("/x/y")
    with pytest.raises(ValueError, match="pkg: '..'"):
        to_local_path("gs://b/../etc", tmp_path, field="pkg")
    with pytest.raises(ValueError, match="needs a bucket"):
        to_local_path("gs:///a", tmp_path)
    assert join_uri("gs://b/o/", "model", trailing_slash=True) == "gs://b/o/model/"
