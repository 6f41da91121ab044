"""The service's own waits on the scenario clock (core/clock.py) and job outcomes by rule
(``job_outcome``, runtime/replica_played.py): a ten-minute stockout fails in about a real second at
x600, its times ten scenario minutes apart; a job played for "2 h" at x3600 fails with the rule's exit
status without a replica process, while a job the rule does not match runs its code. Real clocks,
polls with deadlines (no sleeping for state)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from capacity_support import A100, client_for, gpu_job
from google.cloud.aiplatform_v1 import CustomJob

from vertex_emulator import testing
from vertex_emulator.core.clock import ServiceClock
from vertex_emulator.core.timefmt import parse_rfc3339
from vertex_emulator.runtime.log_records import records_path
from vertex_emulator.scenario.loader import parse_scenario
from vertex_emulator.testing import PARENT, running_emulator, wait_for_state


class _Time:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _seconds(job: Any, start: str, end: str) -> float:
    return (parse_rfc3339(job[end]) - parse_rfc3339(job[start])).total_seconds()


def test_the_service_clock_reads_the_machine_until_paced_and_never_goes_back() -> None:
    mono, wall = _Time(), [1_700_000_000_000_000_000]
    clock = ServiceClock(mono, lambda: wall[0])
    assert (clock.monotonic(), clock.time_ns(), clock.compression) == (1000.0, wall[0], 1.0)
    clock.set_compression(600)
    mono.now += 1.0  # a real second: ten service minutes
    assert clock.monotonic() == 1600.0 and clock.time_ns() == wall[0] + 599 * 10**9
    assert clock.real_s(600) == 1.0
    clock.set_compression(1)  # the scenario ends: time goes on from there, at the real pace
    mono.now += 2.0
    assert clock.monotonic() == 1602.0 and clock.time_ns() == wall[0] + 599 * 10**9
    with pytest.raises(ValueError, match="positive"):
        clock.set_compression(0)


def test_a_ten_minute_stockout_fails_in_about_a_real_second_at_x600(tmp_path: Path) -> None:
    scenario = parse_scenario(f"""version: 1
compression: 600
timeline:
  - at: 0
    stockout_after_s: 600
  - at: 0
    stock: {{region: us-central1, accelerator: {A100}, count: 0}}
""")
    with running_emulator(tmp_path, scenario=scenario) as em, client_for(em, "grpc") as client:
        began = time.monotonic()
        job = client.create_custom_job(
            parent=PARENT, custom_job=CustomJob.from_json(json.dumps(gpu_job("waits-ten-minutes")))
        )
        wait_for_state(client, job.name, ["JOB_STATE_PENDING", "JOB_STATE_FAILED"], timeout=10)
        failed = wait_for_state(em, job.name, ["JOB_STATE_FAILED"], timeout=10)
        real = time.monotonic() - began
        assert failed["error"]["code"] == 8
        assert 0.9 < real < 5.0, real  # 600 scenario seconds: one real second, and some overhead
        # the API's times are scenario times: ten scenario minutes (plus the overhead, x600) apart
        assert 600 <= _seconds(failed, "createTime", "endTime") < 600 + 3 * 600


def _job(name: str, marker: Path, labels: dict[str, str]) -> CustomJob:
    body = testing.container_job(name, f"open({str(marker)!r}, 'w').close()", labels=labels)
    return CustomJob.from_json(json.dumps(body))


def test_a_job_outcome_plays_a_matching_job_and_runs_the_others(tmp_path: Path) -> None:
    scenario = parse_scenario("""version: 1
compression: 3600
timeline:
  - at: 0
    job_outcome:
      display_name: "train-*"
      labels: {team: nlp}
      after: "+2h"
      exit_status: 137
      log_lines: ["epoch 1 of 3", "CUDA out of memory"]
      first: 1
""")
    marks = {name: tmp_path / f"{name}.ran" for name in ("train-a", "train-b", "eval-a")}
    with running_emulator(tmp_path / "em", scenario=scenario) as em, client_for(em, "grpc") as client:
        began = time.monotonic()
        names = {
            name: client.create_custom_job(parent=PARENT, custom_job=_job(name, mark, {"team": "nlp"})).name
            for name, mark in marks.items()
        }
        played = wait_for_state(em, names["train-a"], ["JOB_STATE_FAILED"], timeout=20)
        assert time.monotonic() - began < 15  # two scenario hours: two real seconds, and overhead
        assert _seconds(played, "startTime", "endTime") >= 7200
        message = played["error"]["message"]
        assert played["error"]["code"] == 3
        assert message.startswith(
            "The replica workerpool0-0 exited with a non-zero status of 137. "
            "Termination reason: killed by SIGKILL."
        )
        assert message.endswith("Last log lines:\nepoch 1 of 3\nCUDA out of memory")
        # no replica process: its code never ran, and the runtime's record has no pid
        assert not marks["train-a"].exists()
        log_dir = Path(em.config.state_dir) / "logs" / names["train-a"].rsplit("/", 1)[-1]
        record = json.loads((log_dir / "replicas.json").read_text())["workerpool0-0"]
        assert (record["pid"], record["exitCode"], record["state"]) == (None, 137, "FAILED")
        lines = records_path(log_dir, "workerpool0-0").read_text().splitlines()
        assert [json.loads(line)["m"] for line in lines] == ["epoch 1 of 3", "CUDA out of memory"]
        # the rule's first job only (train-b), and a name it does not match (eval-a): their code runs
        for name in ("train-b", "eval-a"):
            wait_for_state(em, names[name], ["JOB_STATE_SUCCEEDED"], timeout=30)
            assert marks[name].exists()


def test_a_succeeded_outcome_and_the_rules_of_the_kind(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must not be 0"):
        parse_scenario("version: 1\ntimeline:\n  - at: 0\n    job_outcome: {exit_status: 0}\n")
    with pytest.raises(ValueError, match="SUCCEEDED outcome takes no message"):
        parse_scenario("version: 1\ntimeline:\n  - at: 0\n    job_outcome: {state: SUCCEEDED, message: x}\n")
    scenario = parse_scenario("""version: 1
compression: 100
timeline:
  - at: 0
    job_outcome: {display_name: "shape-*", state: SUCCEEDED, after: 60}
""")
    mark = tmp_path / "ran"
    with running_emulator(tmp_path / "em", scenario=scenario) as em, client_for(em, "grpc") as client:
        name = client.create_custom_job(parent=PARENT, custom_job=_job("shape-1", mark, {})).name
        done = wait_for_state(em, name, ["JOB_STATE_SUCCEEDED"], timeout=20)
        assert _seconds(done, "startTime", "endTime") >= 60 and not mark.exists()
        # a played job runs no code: an image the emulator could not run (no command, no image map
        # entry) plays as well; the same job not played fails at once naming the missing entry
        body = json.loads(CustomJob.to_json(_job("shape-2", mark, {})))
        body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"] = {"imageUri": "example.com/ml/trainer:1"}
        unmapped = CustomJob.from_json(json.dumps(body))
        name = client.create_custom_job(parent=PARENT, custom_job=unmapped).name
        assert wait_for_state(em, name, ["JOB_STATE_SUCCEEDED"], timeout=20)["state"] == "JOB_STATE_SUCCEEDED"
        body["displayName"] = "not-played"
        name = client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body))).name
        failed = wait_for_state(em, name, ["JOB_STATE_FAILED"], timeout=20)
        assert "no image map entry" in failed["error"]["message"]


def test_delays_timeouts_and_flex_start_waits_are_scenario_seconds(tmp_path: Path) -> None:
    scenario = parse_scenario(f"""version: 1
compression: 3600
timeline:
  - at: 0
    delays: {{queued_s: 1800}}
  - at: 0
    flex_start_stock: {{region: us-central1, accelerator: {A100}, count: 0}}
""")
    with running_emulator(tmp_path, scenario=scenario) as em, client_for(em, "grpc") as client:
        began = time.monotonic()
        slow = testing.container_job(
            "runs-too-long", "import time; time.sleep(60)", scheduling={"timeout": "3600s"}
        )
        flex = gpu_job("waits-for-flex", strategy="FLEX_START", max_wait="7200s")
        names = [
            client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body))).name
            for body in (slow, flex)
        ]
        timed_out = wait_for_state(em, names[0], ["JOB_STATE_FAILED"], timeout=20)
        assert (
            timed_out["error"]["code"] == 4 and "scheduling.timeout of 3600s" in timed_out["error"]["message"]
        )
        assert _seconds(timed_out, "createTime", "startTime") >= 1800
        assert _seconds(timed_out, "startTime", "endTime") >= 3600
        gave_up = wait_for_state(em, names[1], ["JOB_STATE_FAILED"], timeout=20)
        assert "max_wait_duration (7200s)" in gave_up["error"]["message"]
        assert _seconds(gave_up, "createTime", "endTime") >= 1800 + 7200
        assert time.monotonic() - began < 15  # 3 h 30 min of waits: seconds of real time
