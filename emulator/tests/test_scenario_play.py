"""Playing a scenario: each event applied at its time and reverted at ``until``, through the capacity
and fault settings' own update paths, on a clock a test moves (no sleeps); then end to end through the
real gRPC JobService on the real clock, compressed: a Create stocks out, a later one runs, read from the
jobs' states (polls with deadlines); and ``/emulator/scenario`` (GET, PUT, schema)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from capacity_support import A100, admin, client_for, gpu_job, wait_until
from google.cloud.aiplatform_v1 import CustomJob

from vertex_emulator.capacity.ledger import GpuCapacity
from vertex_emulator.capacity.settings import capacity_to_json
from vertex_emulator.core.config import Capacity, Faults
from vertex_emulator.core.faults import faults_to_json
from vertex_emulator.scenario.loader import parse_scenario
from vertex_emulator.scenario.player import ScenarioClock, ScenarioPlayer
from vertex_emulator.testing import PARENT, running_emulator, wait_for_state

ROOT = Path(__file__).resolve().parents[2]
STOCKOUT = (
    "Resources are insufficient in region: us-central1. "
    "Try a different region or use a different accelerator."
)


class _Time:
    """A monotonic source a test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _player(text: str, capacity: Capacity | None = None, faults: Faults | None = None) -> tuple[Any, ...]:
    scenario = parse_scenario(text)
    time = _Time()
    gpus = GpuCapacity(capacity or Capacity(), faults or Faults())
    player = ScenarioPlayer(
        scenario, gpus, gpus.faults or Faults(), clock=ScenarioClock(scenario.compression, time)
    )
    player.clock.start()
    return player, gpus, time


def test_events_apply_at_their_time_and_revert_at_until() -> None:
    text = f"""version: 1
compression: 60
timeline:
  - at: "01:00"
    until: "04:00"
    stock: {{region: us-central1, accelerator: {A100}, count: 0}}
  - at: 0
    stock: {{region: us-central1, accelerator: NVIDIA_L4, count: 4}}
  - at: "02:00"
    until: "03:00"
    spot_preemptions_per_hour: 3
  - at: "04:00"
    quota: {{region: us-central1, accelerator: {A100}, count: 8}}
"""
    capacity = Capacity(stock={"europe-west4": {A100: 1}}, stockout_after_s=5)
    player, gpus, time = _player(text, capacity)
    assert player.step() == 1  # time 0: the L4 stock
    assert capacity.stock == {"europe-west4": {A100: 1}, "us-central1": {"NVIDIA_L4": 4}}
    time.now += 59.9  # 59.9 real seconds: 59 min 54 s of scenario
    assert player.step() == 0
    time.now += 0.1
    assert player.step() == 1
    assert capacity.stock["us-central1"] == {"NVIDIA_L4": 4, A100: 0}
    time.now += 60
    assert player.step() == 1 and capacity.spot_preemptions_per_hour == 3
    time.now += 60
    assert player.step() == 1 and capacity.spot_preemptions_per_hour == 0
    time.now += 60  # 04:00: the stockout ends (the A100 entry gone again: unlimited), the quota starts
    assert player.step() == 2
    assert capacity.stock == {"europe-west4": {A100: 1}, "us-central1": {"NVIDIA_L4": 4}}
    assert capacity.quota == {"us-central1": {A100: 8}}
    status = player.status()
    assert status["done"] and status["steps_left"] == 0 and status["time_s"] == 4 * 3600
    assert [(p["event"], p["action"], p["at_s"]) for p in status["played"]] == [
        (1, "apply", 0),
        (0, "apply", 3600),
        (2, "apply", 7200),
        (2, "revert", 10800),
        (0, "revert", 14400),
        (3, "apply", 14400),
    ]
    assert status["played"][1]["detail"] == f"us-central1 {A100}: 0"
    assert capacity_to_json(capacity)["stockout_after_s"] == 5  # nothing else touched


def test_faults_and_delays_change_only_the_keys_given_and_revert() -> None:
    text = """version: 1
timeline:
  - at: 10
    until: 20
    api_faults: {error_rate: {GetCustomJob: 0.5}, error_codes: [UNAVAILABLE, RESOURCE_EXHAUSTED]}
  - at: 15
    delays: {provisioning_s: 30}
"""
    faults = Faults(latency_s=0.25, queued_s=1)
    player, _, time = _player(text, faults=faults)
    before = faults_to_json(faults)
    time.now += 15
    assert player.step() == 2
    assert faults.error_rate == {"GetCustomJob": 0.5}
    assert faults.error_codes == ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
    assert (faults.latency_s, faults.queued_s, faults.provisioning_s) == (0.25, 1, 30)
    time.now += 5
    assert player.step() == 1
    assert faults_to_json(faults) == {**before, "provisioning_s": 30}


def test_a_refused_change_is_told_not_fatal() -> None:
    text = "version: 1\ntimeline:\n  - at: 0\n    preempt: {display_name: 'train-*'}\n"
    player, gpus, _ = _player(text)
    calls: list[str] = []
    gpus.register_spot(
        "projects/p/locations/us-central1/customJobs/1", lambda replica: calls.append(replica) or False
    )
    player.step()
    played = player.status()["played"][0]
    assert played["kind"] == "preempt" and calls == []  # no store: the job's display name is ""
    assert played["detail"] == "preempted workerpool0-0 of 0 job(s): -"


def _docs_scenario() -> str:
    section = (ROOT / "docs" / "emulator.md").read_text().split("## Scenarios\n", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    return block[1]


def _create(client: Any, name: str) -> Any:
    body = gpu_job(name)
    return client.create_custom_job(parent=PARENT, custom_job=CustomJob.from_json(json.dumps(body)))


def test_a_stockout_then_stock_compressed_through_the_job_service(tmp_path: Path) -> None:
    """docs/emulator.md's example: no A100 from +0 to +20 s, then 2, played ten times faster."""
    scenario = parse_scenario(_docs_scenario())
    with running_emulator(tmp_path, scenario=scenario) as em, client_for(em, "grpc") as client:
        early = _create(client, "during-the-stockout")
        failed = wait_for_state(client, early.name, ["JOB_STATE_FAILED"])
        assert (failed.error.code, failed.error.message) == (8, STOCKOUT)
        # scenario time 20 s comes 2 real seconds after the start: the stock is 2 from then on
        wait_until("the stock of 2", lambda: admin(em, "GET", "/emulator/scenario")[1]["done"], timeout=20)
        status = admin(em, "GET", "/emulator/scenario")[1]
        assert status["playing"] and status["compression"] == 10 and status["time_s"] >= 20
        assert [(p["event"], p["action"]) for p in status["played"]] == [
            (0, "apply"), (1, "apply"), (1, "revert"), (2, "apply")
        ]  # fmt: skip
        assert em.config.capacity.stock == {"us-central1": {A100: 2}}
        late = _create(client, "after-the-stockout")
        assert wait_for_state(client, late.name, ["JOB_STATE_SUCCEEDED"]).error.code == 0


def test_the_admin_api_plays_another_scenario_and_serves_the_schema(tmp_path: Path) -> None:
    with running_emulator(tmp_path) as em:
        assert admin(em, "GET", "/emulator/scenario") == (200, {"playing": False})
        status, schema = admin(em, "GET", "/emulator/scenario/schema")
        assert status == 200 and schema["title"] == "Scenario" and "timeline" in schema["properties"]
        body = {"version": 1, "timeline": [{"at": 0, "stockout_after_s": 7}]}
        status, played = admin(em, "PUT", "/emulator/scenario", body)
        assert status == 200 and played["playing"] and played["events"] == 1
        wait_until("the event", lambda: em.config.capacity.stockout_after_s == 7)
        status, error = admin(em, "PUT", "/emulator/scenario", {"version": 1, "timeline": [{"at": -1}]})
        assert status == 400
        assert "body:5: timeline[0].at: must be from 0 to" in error["error"]["message"]


def test_the_clock_says_the_service_time_and_its_pace(tmp_path: Path) -> None:
    """``GET /emulator/clock``: the machine's time at compression 1; while a scenario plays 600 times
    faster, a time that runs ahead of the machine's (as the jobs' times do) at that pace."""
    import time

    with running_emulator(tmp_path) as em:
        status, plain = admin(em, "GET", "/emulator/clock")
        assert status == 200 and plain["compression"] == 1
        assert abs(plain["now_ns"] - time.time_ns()) < 5e9
        assert plain["now"].endswith("Z") and plain["now"][:4].isdigit()
        night = {"version": 1, "compression": 600, "timeline": [{"at": "+10h", "stockout_after_s": 7}]}
        assert admin(em, "PUT", "/emulator/scenario", night)[0] == 200
        first = admin(em, "GET", "/emulator/clock")[1]
        wait_until("service time 60 s ahead", lambda: admin(em, "GET", "/emulator/clock")[1]["now_ns"]
                   - time.time_ns() > 60e9)  # fmt: skip
        assert first["compression"] == 600
