"""CLUSTER_SPEC -> role, rank, world size, master address and output paths (pure, no processes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trainer_harness  # noqa: F401  (puts dags/ on sys.path)
from trainers import gcs
from trainers.cluster import (
    ClusterSpec,
    ClusterSpecError,
    ddp_world,
    split_address,
)

REDUCER = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"


def spec_text(
    pool: int, index: int, *, workers: int = 2, pool2: int = 2, evaluators: int = 1, **task: Any
) -> str:
    cluster: dict[str, list[str]] = {"workerpool0": ["10.0.0.1:2222"]}
    if workers:
        cluster["workerpool1"] = [f"10.0.1.{i}:2222" for i in range(workers)]
    if pool2:
        cluster["workerpool2"] = [f"10.0.2.{i}:2222" for i in range(pool2)]
    if evaluators:
        cluster["workerpool3"] = [f"10.0.3.{i}:2222" for i in range(evaluators)]
    return json.dumps(
        {
            "cluster": cluster,
            "environment": "cloud",
            "task": {"type": f"workerpool{pool}", "index": index, **task},
            "job": {
                "worker_pool_specs": [{}, {}, {}],
                "base_output_directory": {"output_uri_prefix": "gs://b/run"},
            },
        }
    )


@pytest.mark.parametrize(
    ("pool", "index", "role", "rank"),
    [
        (0, 0, "primary", 0),
        (1, 0, "worker", 1),
        (1, 1, "worker", 2),
        (2, 1, "parameter_server", None),
        (3, 0, "evaluator", None),
    ],
)
def test_roles_and_trainer_ranks(pool: int, index: int, role: str, rank: int | None) -> None:
    spec = ClusterSpec.parse(spec_text(pool, index))
    assert (spec.role, spec.trainer_rank, spec.key) == (role, rank, f"workerpool{pool}-{index}")
    assert spec.trainers == ("10.0.0.1:2222", "10.0.1.0:2222", "10.0.1.1:2222")
    assert spec.parameter_servers == ("10.0.2.0:2222", "10.0.2.1:2222")
    assert spec.address == spec.addresses(pool)[index]
    assert spec.base_output_uri == "gs://b/run"
    assert spec.trial is None


def test_ddp_world_primary_is_rank_zero_and_master() -> None:
    for index in range(2):
        world = ddp_world(ClusterSpec.parse(spec_text(1, index, pool2=0, evaluators=0)))
        assert (world.rank, world.world_size, world.master_addr, world.master_port) == (
            1 + index,
            3,
            "10.0.0.1",
            2222,
        )
    assert ddp_world(ClusterSpec.parse(spec_text(0, 0, workers=0, pool2=0, evaluators=0))).world_size == 1


def test_reducers_are_not_part_of_the_ddp_world() -> None:
    raw = json.loads(spec_text(0, 0, workers=2, pool2=10, evaluators=0))
    raw["job"]["worker_pool_specs"] = [{}, {}, {"container_spec": {"image_uri": REDUCER}}]
    spec = ClusterSpec.parse(raw)
    assert spec.pool2_is_reduction_server and spec.parameter_servers == ()
    assert ddp_world(spec).world_size == 3
    raw["task"] = {"type": "workerpool2", "index": 3}
    with pytest.raises(
        ClusterSpecError, match=r"workerpool2-3 \(parameter_server\) is not part of the DDP world"
    ):
        ddp_world(ClusterSpec.parse(raw))
    with pytest.raises(ClusterSpecError, match="workerpool3-0 .* not part of the DDP world"):
        ddp_world(ClusterSpec.parse(spec_text(3, 0)))


def test_trial_and_camel_case_job_and_job_as_a_json_string() -> None:
    raw = json.loads(spec_text(0, 0, trial="3"))
    raw["job"] = json.dumps({"baseOutputDirectory": {"outputUriPrefix": "gs://b/study/3"}})
    spec = ClusterSpec.parse(raw)
    assert spec.trial == "3" and spec.base_output_uri == "gs://b/study/3"


def test_without_cluster_spec_the_primary_runs_alone_on_a_free_loopback_port() -> None:
    spec = ClusterSpec.from_env({})
    assert spec.role == "primary" and spec.trainers == (spec.address,)
    host, port = split_address(spec.address)
    assert host == "127.0.0.1" and port > 0


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: "not json", r"CLUSTER_SPEC: not valid JSON"),
        (lambda r: [], r"CLUSTER_SPEC: must be a JSON object \(got list\)"),
        (lambda r: {**r, "cluster": None}, r"CLUSTER_SPEC.cluster: required"),
        (
            lambda r: {**r, "cluster": {**r["cluster"], "chief": ["a:1"]}},
            r"CLUSTER_SPEC.cluster.chief: pool names",
        ),
        (
            lambda r: {**r, "cluster": {**r["cluster"], "workerpool1": "a:1"}},
            r"cluster.workerpool1: must be a list",
        ),
        (
            lambda r: {**r, "cluster": {**r["cluster"], "workerpool1": ["a"]}},
            r"workerpool1\[0\]: must be 'host:port'",
        ),
        (
            lambda r: {**r, "cluster": {**r["cluster"], "workerpool2": ["a:x"]}},
            r"workerpool2\[0\]: the port must be",
        ),
        (lambda r: {**r, "cluster": {**r["cluster"], "workerpool2": ["a:0"]}}, r"port must be in 1..65535"),
        (
            lambda r: {**r, "cluster": {"workerpool0": ["a:1", "b:1"]}},
            r"workerpool0: the primary pool must have",
        ),
        (lambda r: {**r, "task": None}, r"CLUSTER_SPEC.task: required"),
        (
            lambda r: {**r, "task": {"type": "chief", "index": 0}},
            r"CLUSTER_SPEC.task.type: must be workerpool0",
        ),
        (
            lambda r: {**r, "task": {"type": "workerpool1", "index": "0"}},
            r"CLUSTER_SPEC.task.index: must be an int",
        ),
        (
            lambda r: {**r, "task": {"type": "workerpool1", "index": 2}},
            r"task.index: 2 is out of range for workerpool1",
        ),
    ],
)
def test_bad_cluster_specs_name_the_field_and_the_rule(mutate: Any, message: str) -> None:
    raw = mutate(json.loads(spec_text(1, 0)))
    with pytest.raises(ClusterSpecError, match=message):
        ClusterSpec.parse(raw if isinstance(raw, str) else json.dumps(raw))


def test_ipv6_addresses() -> None:
    assert split_address("[::1]:8470") == ("::1", 8470)


def test_files_at_local_paths_and_under_a_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GCS_MOUNT_ROOT", raising=False)
    local = str(tmp_path / "out")
    gcs.write_json(gcs.join(local, "m.json"), {"a": 1})
    assert json.loads(gcs.read_text(f"{local}/m.json")) == {"a": 1} and gcs.exists(f"{local}/m.json")
    assert gcs.list_dir(local) == ["m.json"] and gcs.list_dir(str(tmp_path / "none")) == []
    assert gcs.fetch_dir(local, tmp_path / "unused") == Path(local)
    # outside a job (an Airflow task), GCS_MOUNT_ROOT stands for gs://
    monkeypatch.setenv("GCS_MOUNT_ROOT", str(tmp_path / "mnt"))
    gcs.write_bytes("gs://bkt/a/b.bin", b"x")
    assert (tmp_path / "mnt" / "bkt" / "a" / "b.bin").read_bytes() == b"x"
    with pytest.raises(gcs.GcsError, match="needs a bucket"):
        gcs.read_text("gs:///x")
    with pytest.raises(gcs.GcsError, match="'..'"):
        gcs.read_text("gs://bkt/a/../../etc/passwd")


def test_gs_uris_go_through_google_cloud_storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a replica (no GCS_MOUNT_ROOT), gs:// is the Cloud Storage API: here the emulator's."""
    from vertex_emulator.cloud_storage.api import StorageServer

    root = tmp_path / "gcs"
    (root / "bkt").mkdir(parents=True)
    server = StorageServer(root)
    server.start()
    monkeypatch.delenv("GCS_MOUNT_ROOT", raising=False)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.endpoint)
    gcs._client.cache_clear()
    try:
        gcs.write_json("gs://bkt/run/model/metrics.json", {"accuracy": 0.9})
        gcs.write_bytes("gs://bkt/run/model/model.pt", b"\x00\x01")
        gcs.write_bytes("gs://bkt/run/model/sub/x", b"")
        assert json.loads((root / "bkt" / "run" / "model" / "metrics.json").read_text()) == {"accuracy": 0.9}
        assert gcs.list_dir("gs://bkt/run/model/") == ["metrics.json", "model.pt"]
        assert gcs.exists("gs://bkt/run/model/model.pt") and not gcs.exists("gs://bkt/run/model/nope")
        got = gcs.fetch_dir("gs://bkt/run/model", tmp_path / "copy")
        assert sorted(p.name for p in got.iterdir()) == ["metrics.json", "model.pt"]
        assert (got / "model.pt").read_bytes() == b"\x00\x01"
    finally:
        gcs._client.cache_clear()
        server.stop()
