"""The trainers resuming from a checkpoint, in one process: the newest checkpoint, the epochs left, the
evaluator's stop, and a run without ``--resume`` training from the start."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import trainer_harness as h
from trainers import checkpoints, metrics, ps_trainer
from trainers.cluster import ClusterSpec

# -- resuming from a checkpoint -----------------------------------------------------------------


def _ckpt(directory: Path, step: int, epoch: int, weights: list[float], **extra: Any) -> None:
    (directory / f"ckpt-{step:08d}.json").write_text(
        json.dumps({"step": step, "epoch": epoch, "weights": weights, **extra})
    )


def test_the_newest_checkpoint_is_the_highest_step(tmp_path: Path) -> None:
    names = ["eval-00000004.json", "ckpt-00000010.json", "ckpt-00000004.json", "model.json",
             "ckpt-100000000.json", "ckpt-x.json", ".ckpt-00000012.json.tmp"]  # fmt: skip
    assert checkpoints.checkpoint_names(names) == [
        "ckpt-00000004.json", "ckpt-00000010.json", "ckpt-100000000.json",
    ]  # fmt: skip
    assert checkpoints.latest_checkpoint(None) is None
    assert checkpoints.latest_checkpoint(str(tmp_path / "none-yet")) is None
    _ckpt(tmp_path, 99999999, 2, [0.5, -1])  # 8 digits sort before 9 as text; by number it is older
    _ckpt(tmp_path, 100000000, 3, [0.25, 2])
    (tmp_path / "eval-200000000.json").write_text("{}")
    assert checkpoints.latest_checkpoint(str(tmp_path)) == checkpoints.Checkpoint(
        "ckpt-100000000.json", 3, 100000000, (0.25, 2.0)
    )
    _ckpt(tmp_path, 200000000, -1, [0.0])
    with pytest.raises(
        checkpoints.CheckpointError, match=r"ckpt-200000000.json: epoch must be a non-negative"
    ):
        checkpoints.latest_checkpoint(str(tmp_path))


def test_training_is_done_at_the_epochs_asked_for_or_later() -> None:
    assert not checkpoints.is_final(2, 4)
    assert checkpoints.is_final(4, 4) and checkpoints.is_final(6, 4)


def _train(
    tmp_path: Path, out: str, epochs: int, monkeypatch: pytest.MonkeyPatch, *, resume: bool = True
) -> dict[str, Any]:
    """A lone primary in this process (no CLUSTER_SPEC), checkpointing to ``out/checkpoints``."""
    monkeypatch.setattr(metrics, "_reporter", None)
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(tmp_path / out / f"hypertune-{epochs}"))
    args = ps_trainer.parse_args(
        [f"--epochs={epochs}", "--rows=300", "--seed=3", f"--model-dir={tmp_path / out / 'model'}",
         f"--checkpoint-dir={tmp_path / out / 'checkpoints'}", *(["--resume"] if resume else [])]
    )  # fmt: skip
    ps_trainer.run(args, ClusterSpec.single())
    result: dict[str, Any] = json.loads((tmp_path / out / "model" / "metrics.json").read_text())
    result["model"] = json.loads((tmp_path / out / "model" / "model.json").read_text())
    return result


def test_a_resumed_run_trains_only_the_missing_epochs_and_ends_where_a_fresh_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="trainers.ps_trainer")
    fresh = _train(tmp_path, "fresh", 4, monkeypatch)
    steps = fresh["steps"]
    per_epoch = steps // 4
    assert fresh["resumed_from"] is None and fresh["steps_run"] == steps
    assert [e["epoch"] for e in fresh["history"]] == [1, 2, 3, 4]

    short = _train(tmp_path, "run", 2, monkeypatch)  # an earlier, shorter run in the same directory
    assert short["steps"] == 2 * per_epoch
    resumed = _train(tmp_path, "run", 4, monkeypatch)
    at = f"ckpt-{2 * per_epoch:08d}.json"
    assert f"resuming from {at} (epoch 2, step {2 * per_epoch})" in caplog.text
    assert resumed["resumed_from"] == {"checkpoint": at, "epoch": 2, "step": 2 * per_epoch}
    assert [(e["epoch"], e["step"]) for e in resumed["history"]] == [(3, 3 * per_epoch), (4, steps)]
    assert resumed["steps"] == resumed["model"]["steps"] == steps and resumed["steps_run"] == 2 * per_epoch
    assert resumed["model"]["weights"] == fresh["model"]["weights"]
    assert resumed["model"]["bias"] == fresh["model"]["bias"]
    assert resumed["history"] == fresh["history"][2:]  # the same scores at the same steps
    ckpts = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert ckpts == [f"ckpt-{e * per_epoch:08d}.json" for e in (1, 2, 3, 4)]
    assert json.loads((tmp_path / "run" / "checkpoints" / at).read_text())["final"]  # the short run's end

    # at or past --epochs: nothing to train; the model is the newest checkpoint's, its metric reported
    done = _train(tmp_path, "run", 3, monkeypatch)
    assert done["resumed_from"]["epoch"] == 4 and done["history"] == [] and done["steps_run"] == 0
    assert done["steps"] == steps and done["model"]["weights"] == fresh["model"]["weights"]
    assert "training is done: ckpt-" in caplog.text
    [line] = h.metric_lines(tmp_path / "run" / "hypertune-3")
    assert line["global_step"] == str(steps) and float(line["accuracy"]) == done["accuracy"]


def test_epoch_seconds_paces_each_epoch_before_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--epoch-seconds: every epoch lasts at least that long, its checkpoint written at its end."""
    monkeypatch.setattr(metrics, "_reporter", None)
    monkeypatch.setenv("CLOUD_ML_HP_METRIC_FILE", str(tmp_path / "hypertune"))
    ckpts = tmp_path / "checkpoints"
    args = ps_trainer.parse_args(
        ["--epochs=2", "--rows=300", "--epoch-seconds=0.4", f"--model-dir={tmp_path / 'model'}",
         f"--checkpoint-dir={ckpts}"]
    )  # fmt: skip
    started = time.time_ns()
    ps_trainer.run(args, ClusterSpec.single())
    first, second = (p.stat().st_mtime_ns for p in sorted(ckpts.iterdir()))
    assert first - started >= 0.39e9 and second - first >= 0.39e9


def _evaluator(tmp_path: Path, epochs: int) -> dict[str, Any]:
    spec = ClusterSpec.parse(
        {
            "cluster": {"workerpool0": ["127.0.0.1:1"], "workerpool3": ["127.0.0.1:2"]},
            "task": {"type": "workerpool3", "index": 0},
        }
    )
    args = ps_trainer.parse_args(
        [f"--epochs={epochs}", "--rows=100", "--features=1", f"--checkpoint-dir={tmp_path}",
         "--eval-timeout=0.3", "--connect-timeout=0"]
    )  # fmt: skip
    return ps_trainer.run(args, spec)


def test_the_evaluator_stops_at_epochs_and_does_not_score_a_checkpoint_twice(tmp_path: Path) -> None:
    """An earlier run with --epochs 2 left its "final" checkpoint, scored; a run with --epochs 4 resumed."""
    _ckpt(tmp_path, 5, 1, [0.1, 0.0], final=False)
    _ckpt(tmp_path, 10, 2, [0.2, 0.0], final=True)
    for step in (5, 10):
        (tmp_path / f"eval-{step:08d}.json").write_text('{"scored": "before"}')
    with pytest.raises(TimeoutError, match=r"no final checkpoint in .* \(scored 0, 2 scored before\)"):
        _evaluator(tmp_path, 4)  # epoch 2 is not the end of a 4-epoch run: it waits on
    _ckpt(tmp_path, 15, 3, [0.3, 0.0], final=False)
    _ckpt(tmp_path, 20, 4, [0.4, 0.0], final=True)
    result = _evaluator(tmp_path, 4)
    assert result == {
        "role": "evaluator",
        "checkpoints": 2,
        "scored_before": 2,
        "final": "ckpt-00000020.json",
    }
    for step in (5, 10):
        assert (tmp_path / f"eval-{step:08d}.json").read_text() == '{"scored": "before"}'
    for step in (15, 20):
        score = json.loads((tmp_path / f"eval-{step:08d}.json").read_text())
        assert score["step"] == step and score["evaluator"] == "workerpool3-0"
    # a run with --epochs 2 in this directory is done: the evaluator finds everything scored and stops
    assert _evaluator(tmp_path, 2)["checkpoints"] == 0


def test_without_resume_a_run_trains_from_the_start_beside_old_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resuming is asked for (``--resume``): a cleared task, run again into the same directory without
    it, retrains every epoch rather than finishing from the last run's checkpoint."""
    _train(tmp_path, "run", 2, monkeypatch, resume=False)
    again = _train(tmp_path, "run", 4, monkeypatch, resume=False)
    assert again["resumed_from"] is None
    assert [e["epoch"] for e in again["history"]] == [1, 2, 3, 4]
    assert again["steps_run"] == again["steps"]
