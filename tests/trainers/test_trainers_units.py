"""The trainers' parts in one process: dataset files, the parameter-server protocol, the arguments and
roles, the metric file, shipping. Resuming from a checkpoint: `test_trainers_resume.py`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import trainer_harness as h
from trainers import metrics, ps_trainer
from trainers.cluster import ClusterSpec, ClusterSpecError
from trainers.data import DatasetError, read_dataset, split, synthesize, write_dataset
from trainers.ps import PsError, ShardClient, ShardServer, shard_bounds, wait_closed

# -- dataset ----------------------------------------------------------------------------------


def test_synthetic_data_is_seeded_and_learnable() -> None:
    a, b, c = synthesize(300, 4, seed=1), synthesize(300, 4, seed=1), synthesize(300, 4, seed=2)
    assert a == b and a != c
    assert a.columns == ("x0", "x1", "x2", "x3") and 0.2 < sum(a.labels) / len(a) < 0.8
    train, evaluation = split(a, 0.2)
    assert (len(train), len(evaluation)) == (240, 60) and train.features + evaluation.features == a.features
    assert train.shard(1, 3).labels == train.labels[1::3]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_written_datasets_read_back_exactly(tmp_path: Path, fmt: str) -> None:
    train, evaluation = split(synthesize(50, 3, seed=4))
    manifest = write_dataset(tmp_path, train, evaluation, fmt, seed=4)
    assert manifest["train_rows"] == 40 and manifest["eval_rows"] == 10 and manifest["seed"] == 4
    assert json.loads((tmp_path / "dataset.json").read_text()) == manifest
    assert read_dataset(tmp_path) == (train, evaluation)


def test_a_directory_of_plain_files_is_concatenated_and_split(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("f,label,g\n1,0,2\n3,1,4\n5,1,6\n")
    (tmp_path / "b.jsonl").write_text('{"f": 7, "label": 0, "g": 8}\n\n{"f": 9, "label": 1.0, "g": 10}\n')
    train, evaluation = read_dataset(tmp_path, eval_fraction=0.4)
    assert train.columns == ("f", "g")
    assert train.features == ((1.0, 2.0), (3.0, 4.0), (5.0, 6.0)) and evaluation.labels == (0, 1)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("train.csv", "", r"train.csv line 1: a header row is required"),
        ("train.csv", "a,b\n1,2\n", r"train.csv line 1: the header needs a 'label' column"),
        ("train.csv", "a,label\n1,2\n", r"train.csv line 2: column 'label' must be 0 or 1 \(got '2'\)"),
        ("train.csv", "a,label\n1,0\nx,1\n", r"train.csv line 3: column 'a' must be a number \(got 'x'\)"),
        ("train.csv", "a,label\nnan,1\n", r"train.csv line 2: column 'a' must be finite"),
        ("train.csv", "a,label\n1,0,3\n", r"train.csv line 2: 3 columns, the header has 2"),
        ("train.csv", "a,label\n", r"train.csv: no rows"),
        ("train.jsonl", '{"a": 1}\n', r"train.jsonl line 1: must be a JSON object with a 'label' key"),
        ("train.jsonl", "{oops\n", r"train.jsonl line 1: not valid JSON"),
        ("train.jsonl", '{"features": 3, "label": 1}\n', r"'features' must be a list of numbers"),
        ("train.jsonl", '{"a": 1, "label": 1}\n{"b": 1, "label": 0}\n', r"line 2: columns \['b'\] differ"),
        ("data.txt", "x", r"--data-dir: no .csv or .jsonl files in"),
    ],
)
def test_bad_dataset_files_name_the_file_line_and_rule(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(DatasetError, match=message):
        read_dataset(tmp_path)


def test_train_and_eval_files_must_agree_and_the_dir_must_exist(tmp_path: Path) -> None:
    (tmp_path / "train.csv").write_text("a,label\n1,0\n")
    (tmp_path / "eval.csv").write_text("b,label\n1,0\n")
    with pytest.raises(DatasetError, match=r"eval.csv: columns \['b'\] differ from train.csv's \['a'\]"):
        read_dataset(tmp_path)
    with pytest.raises(DatasetError, match="is not a directory"):
        read_dataset(tmp_path / "missing")
    with pytest.raises(DatasetError, match="eval_fraction: must be between 0 and 1"):
        split(synthesize(10, 2), 1.0)


# -- parameter server ---------------------------------------------------------------------------


def _address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_shard_bounds_cover_every_parameter_once() -> None:
    assert shard_bounds(9, 2) == [(0, 4), (4, 9)]
    assert shard_bounds(3, 1) == [(0, 3)]
    assert [hi - lo for lo, hi in shard_bounds(10, 3)] == [3, 3, 4]


def test_a_synchronous_step_applies_the_mean_of_every_trainers_gradient() -> None:
    server = ShardServer(_address(), trainers=2, timeout=10).start()
    try:
        addr = f"127.0.0.1:{server.port}"
        a, b = ShardClient(addr), ShardClient(addr)
        a.init([1.0, 2.0])
        assert b.pull() == [1.0, 2.0]
        results: dict[str, list[float]] = {}
        t = threading.Thread(target=lambda: results.__setitem__("b", b.step(1, 0, [3.0, 0.0], 0.5)))
        t.start()
        results["a"] = a.step(0, 0, [1.0, 4.0], 0.5)
        t.join(timeout=10)
        # values -= lr * mean: [1 - 0.5 * 2, 2 - 0.5 * 2]; both trainers get the same new values
        assert results == {"a": [0.0, 1.0], "b": [0.0, 1.0]}
        assert a.done() == {"ok": True, "version": 1, "applied": 1, "size": 2} and server.done.is_set()
        a.close()
        b.close()
    finally:
        server.stop(wait_for_peers=5)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"op": "fly"}, r"op: must be init, pull, step or done \(got 'fly'\)"),
        (
            {"op": "step", "rank": 2, "step": 0, "grad": [0.0], "lr": 1},
            r"step.rank: must be an integer in 0..1",
        ),
        ({"op": "step", "rank": 0, "step": -1, "grad": [0.0], "lr": 1}, r"step.step: must be a non-negative"),
        (
            {"op": "step", "rank": 0, "step": 0, "grad": ["x"], "lr": 1},
            r"step.grad: must be a list of numbers",
        ),
        ({"op": "step", "rank": 0, "step": 0, "grad": [0.0], "lr": 0}, r"step.lr: must be a positive number"),
        (
            {"op": "step", "rank": 0, "step": 0, "grad": [0.0, 1.0], "lr": 1},
            r"step.grad: the shard has 1 values",
        ),
        (
            {"op": "step", "rank": 0, "step": 3, "grad": [0.0], "lr": 1},
            r"this shard is at step 0 \(rank 0 sent 3\)",
        ),
        ({"op": "init", "values": [1.0, 2.0]}, r"init.values: the shard has 1 values \(got 2\)"),
        ({"op": "init", "values": [0.0], "step": -1}, r"init.step: must be a non-negative integer"),
    ],
)
def test_bad_requests_get_an_error_naming_the_field(request_: dict[str, Any], message: str) -> None:
    server = ShardServer(_address(), trainers=2, timeout=5).start()
    try:
        client = ShardClient(f"127.0.0.1:{server.port}")
        client.init([0.0])
        with pytest.raises(PsError, match=message):
            client.call(request_)
        assert client.pull() == [0.0]  # the connection is still usable
        client.close()
    finally:
        server.stop()


def test_waiting_for_peers_is_bounded() -> None:
    server = ShardServer(_address(), trainers=2, timeout=0.3).start()
    try:
        client = ShardClient(f"127.0.0.1:{server.port}")
        with pytest.raises(PsError, match=r"not initialized by rank 0 within 0.3s"):
            client.pull()
        client.init([0.0])
        with pytest.raises(PsError, match=r"ranks \[1\] sent no gradient for step 0 in 0.3s"):
            client.step(0, 0, [1.0], 0.1)
        client.close()
    finally:
        server.stop()


def test_clients_retry_until_the_server_is_up_and_give_up_at_the_deadline() -> None:
    addr = _address()
    late = ShardServer(addr, trainers=1, timeout=5)
    timer = threading.Timer(0.3, late.start)  # the server's replica starts after the trainer's
    timer.start()
    try:
        client = ShardClient(addr, connect_timeout=20)
        client.init([5.0])
        assert client.pull() == [5.0]
        client.close()
    finally:
        timer.join()
        late.stop()
    with pytest.raises(PsError, match=r"could not connect within 0.2s"):
        ShardClient(_address(), connect_timeout=0.2)


def test_a_parameter_server_replica_stops_when_the_primary_says_done() -> None:
    addr = _address()
    spec = ClusterSpec.parse(
        {
            "cluster": {"workerpool0": ["127.0.0.1:1"], "workerpool2": [addr]},
            "task": {"type": "workerpool2", "index": 0},
        }
    )
    result: dict[str, Any] = {}
    replica = threading.Thread(
        target=lambda: result.update(ps_trainer.run_parameter_server(spec, ps_trainer.parse_args([])))
    )
    replica.start()
    primary = ShardClient(addr, connect_timeout=20)
    primary.init([0.0, 0.0])
    assert primary.step(0, 0, [1.0, -1.0], 0.5) == [-0.5, 0.5]
    assert primary.done()["version"] == 1
    assert not wait_closed(addr, 0.1)  # still up while the primary is connected
    primary.close()
    assert wait_closed(addr, 20)
    replica.join(timeout=20)
    assert result == {"role": "parameter_server", "steps": 1, "applied": 1}


def test_a_shard_initialized_at_a_checkpoints_step_counts_on_from_it() -> None:
    server = ShardServer(_address(), trainers=1, timeout=5).start()
    try:
        client = ShardClient(f"127.0.0.1:{server.port}")
        client.init([1.0], step=38)
        with pytest.raises(PsError, match=r"this shard is at step 38 \(rank 0 sent 0\)"):
            client.step(0, 0, [1.0], 0.5)
        assert client.step(0, 38, [1.0], 0.5) == [0.5]
        assert client.done() == {"ok": True, "version": 39, "applied": 1, "size": 1}
        client.close()
    finally:
        server.stop()


# -- the trainer's arguments and roles ----------------------------------------------------------


def test_hyperparameters_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        ps_trainer.parse_args(["--epochs=0", "--learning_rate=-1", "--epoch-seconds=-1"])
    err = capsys.readouterr().err
    assert "--learning_rate: must be > 0 (got -1.0)" in err and "--epochs: must be >= 1 (got 0)" in err
    assert "--epoch-seconds: must be from 0 to 86400 (got -1.0)" in err
    args = ps_trainer.parse_args(["--learning-rate=0.2", "--learning_rate=0.3", "--metric-id=log_loss"])
    assert args.learning_rate == 0.3 and args.metric == "log_loss"  # a tuning trial's value comes last


def test_ddp_arguments_and_rendezvous_without_torch(capsys: pytest.CaptureFixture[str]) -> None:
    from trainers import ddp_trainer
    from trainers.cluster import DdpWorld

    args = ddp_trainer.parse_args(["--learning_rate=0.2", "--metric-id=loss"])
    assert args.bucket_cap_mb == 64 and args.backend == "auto" and args.metric == "accuracy"
    with pytest.raises(SystemExit):
        ddp_trainer.parse_args(["--bucket-cap-mb=0", "--hidden=0"])
    err = capsys.readouterr().err
    assert "--bucket-cap-mb: must be > 0 (got 0.0)" in err and "--hidden: must be >= 1 (got 0)" in err
    assert ddp_trainer.init_method(DdpWorld(0, 3, "10.0.0.1", 2222)) == "tcp://10.0.0.1:2222"
    assert ddp_trainer.init_method(DdpWorld(1, 3, "fd00::1", 2222)) == "tcp://[fd00::1]:2222"
    # importing the trainers loads only the standard library (a DAG file may import them)
    code = "import sys, trainers.ddp_trainer, trainers.local, trainers.ps_trainer; print(sorted(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={"PYTHONPATH": str(h.DAGS_DIR)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "'trainers.ddp_trainer'" in out and "torch" not in out and "hypertune" not in out


def test_the_ddp_world_comes_from_the_variables_vertex_sets() -> None:
    from trainers import ddp_trainer
    from trainers.cluster import ClusterSpecError, DdpWorld

    env = {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "2222", "WORLD_SIZE": "3", "RANK": "2"}
    assert ddp_trainer.env_world(env) == DdpWorld(2, 3, "10.0.0.1", 2222)
    with pytest.raises(ClusterSpecError, match="^MASTER_PORT, RANK: not set; Vertex AI sets"):
        ddp_trainer.env_world({"MASTER_ADDR": "h", "WORLD_SIZE": "3"})
    with pytest.raises(ClusterSpecError, match="must be integers"):
        ddp_trainer.env_world({**env, "RANK": "one"})


def test_a_bad_cluster_spec_stops_the_replica_with_the_field(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(
        "CLUSTER_SPEC", json.dumps({"cluster": {"workerpool0": ["a:1"]}, "task": {"type": "x"}})
    )
    assert ps_trainer.main([]) == 2
    assert "CLUSTER_SPEC.task.type: must be workerpool0..workerpool3 (got 'x')" in capsys.readouterr().err


def test_an_evaluator_needs_a_checkpoint_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = {"cluster": {"workerpool0": ["127.0.0.1:1"], "workerpool3": ["127.0.0.1:2"]}}
    monkeypatch.setenv("CLUSTER_SPEC", json.dumps({**spec, "task": {"type": "workerpool3", "index": 0}}))
    monkeypatch.delenv("AIP_CHECKPOINT_DIR", raising=False)
    with pytest.raises(ClusterSpecError, match="the evaluator needs AIP_CHECKPOINT_DIR"):
        ps_trainer.run(ps_trainer.parse_args([]), ClusterSpec.from_env())


# -- the metric file ----------------------------------------------------------------------------


def test_the_fallback_writer_writes_what_cloudml_hypertune_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hypertune

    def written(reporter_cls: Any, path: Path) -> list[dict[str, Any]]:
        monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(path))
        reporter = reporter_cls()
        for step in range(1, 104):  # past the library's 100-entry window
            reporter.report_hyperparameter_tuning_metric("accuracy", step / 200, global_step=step)
        reporter.report_hyperparameter_tuning_metric("", 0.5)
        return [{k: v for k, v in line.items() if k != "timestamp"} for line in h.metric_lines(path)]

    monkeypatch.setenv("CLOUD_ML_TRIAL_ID", "7")
    ours = written(metrics.MetricWriter, tmp_path / "ours" / "m")
    assert ours == written(hypertune.HyperTune, tmp_path / "lib" / "m")
    assert len(ours) == 100 and ours[-1] == {
        "trial": "7",
        "training/hptuning/metric": "0.5",
        "global_step": "0",
        "checkpoint_path": "",
    }
    line = (tmp_path / "ours" / "m").read_text().splitlines()[0]
    assert list(json.loads(line)) == sorted(json.loads(line))  # keys sorted, as the library writes them


# -- shipping -----------------------------------------------------------------------------------


def test_image_map_flags_parse_back_in_the_emulator_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shlex

    from trainers import local

    from vertex_emulator.cli.flags import _image_map

    flags = shlex.split(" ".join(local.image_map_flags()))
    assert flags[::2] == ["--image-map"] * len(local.image_map())
    assert dict(_image_map(value) for value in flags[1::2]) == local.image_map()
    ps_command = local.image_map()[local.PS_TRAINER_IMAGE]
    assert ps_command[0] == "env" and ps_command[1].startswith(f"PYTHONPATH={local.DAGS_DIR}")
    assert ps_command[-2:] == ["-m", "trainers.ps_trainer"]
    assert local.main(["sdist", str(tmp_path), "--version=1.2.3"]) == 0
    sdist = Path(capsys.readouterr().out.strip())
    assert sdist == tmp_path / "vertex_dist_example_trainers-1.2.3.tar.gz"

    import tarfile

    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    base = "vertex_dist_example_trainers-1.2.3"
    assert {f"{base}/pyproject.toml", f"{base}/PKG-INFO", f"{base}/trainers/ps_trainer.py"} <= set(names)
    assert f"{base}/trainers/ddp_trainer.py" in names and names == sorted(names)
