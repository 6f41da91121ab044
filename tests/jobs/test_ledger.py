"""The cost ledger (``airflow_vertex_dist.jobs.ledger``): one entry per job dict as the v1 API returns
it, and its sums per rung, per task and per DAG run.

Example tests pin each figure on hand-written jobs (catalog prices, SPOT as an upper bound, FLEX_START
unknown, a stockout that never ran, preemptions read from service log lines, a tuning job's trials);
property tests check the sums: totals are the sum of the entries, in any grouping, and an unknown figure
is never summed as zero."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_vertex_dist.common.rfc3339 import format_rfc3339
from airflow_vertex_dist.jobs.ledger import (
    AT_MOST,
    ON_DEMAND,
    by_rung,
    by_task,
    job_strategy,
    job_usd_per_hour,
    ledger_entry,
    ledger_totals,
    preemption_times,
    task_ledger,
)
from airflow_vertex_dist.specs.prices import price_per_hour

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
L4 = {"machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1}
N1 = {"machineType": "n1-standard-4"}
L4_HOUR = price_per_hour("g2-standard-8", "NVIDIA_L4", 1, "us-central1")
N1_HOUR = price_per_hour("n1-standard-4", None, 0, "us-central1")


def at(seconds: float) -> str:
    return format_rfc3339(T0 + timedelta(seconds=seconds))


def job(
    *,
    strategy: str | None = None,
    pools: list[dict[str, Any]] | None = None,
    created: float | None = 0,
    started: float | None = 600,
    ended: float | None = 600 + 7200,
    state: str = "JOB_STATE_SUCCEEDED",
    error: str | None = None,
    run: str = "rabc",
    region: str = "us-central1",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "workerPoolSpecs": pools
        if pools is not None
        else [{"machineSpec": L4, "replicaCount": "1"}, {"machineSpec": L4, "replicaCount": "2"}]
    }
    if strategy is not None:
        spec["scheduling"] = {"strategy": strategy}
    out: dict[str, Any] = {
        "name": f"projects/p/locations/{region}/customJobs/7",
        "state": state,
        "labels": {
            "airflow-dag": "nightly",
            "airflow-task": "train",
            "airflow-run": run,
            "airflow-rung": "r1",
        },
        "jobSpec": spec,
    }
    for key, value in (("createTime", created), ("startTime", started), ("endTime", ended)):
        if value is not None:
            out[key] = at(value)
    if error is not None:
        out["error"] = {"code": 8, "message": error}
    return out


def test_a_standard_job_hours_gpus_and_dollars_from_the_catalog() -> None:
    assert L4_HOUR is not None
    entry = ledger_entry(job(), "l4")
    assert entry["rung"] == "l4" and entry["strategy"] == "STANDARD"
    assert (entry["dag"], entry["task"], entry["run"]) == ("nightly", "train", "rabc")
    assert (entry["accelerator_type"], entry["accelerators"], entry["replicas"]) == ("NVIDIA_L4", 3, 3)
    assert entry["queued_seconds"] == 600.0 and entry["run_seconds"] == 7200.0
    assert entry["gpu_hours"] == 6.0  # 3 L4 x 2 hours
    assert entry["usd"] == pytest.approx(3 * L4_HOUR * 2, abs=1e-5)
    assert entry["usd_basis"] == ON_DEMAND
    assert (entry["preempted_seconds"], entry["preemptions"]) == (0.0, 0)
    json.dumps(entry)  # XCom: JSON only


def test_spot_is_priced_on_demand_as_an_upper_bound_and_flex_start_is_unknown() -> None:
    spot = ledger_entry(job(strategy="SPOT"), preemptions=[])
    assert spot["usd"] == ledger_entry(job())["usd"] and spot["usd_basis"] == AT_MOST
    flex = ledger_entry(job(strategy="FLEX_START"), preemptions=[])
    assert flex["usd"] is None and "flex-start" in flex["usd_basis"]
    assert flex["gpu_hours"] == 6.0  # the hours are known; only the price is not
    assert job_strategy(job(strategy="ON_DEMAND")) == job_strategy(job(strategy="STRATEGY_UNSPECIFIED"))
    assert job_strategy(job(strategy="ON_DEMAND")) == "STANDARD"


def test_a_job_that_never_ran_costs_nothing_at_any_price() -> None:
    stockout = job(strategy="FLEX_START", started=None, ended=95, state="JOB_STATE_FAILED", error="no")
    entry = ledger_entry(stockout)
    assert (entry["gpu_hours"], entry["usd"], entry["usd_basis"]) == (0.0, 0.0, "never ran")
    assert (entry["queued_seconds"], entry["run_seconds"]) == (95.0, 0.0)
    assert (entry["preempted_seconds"], entry["preemptions"]) == (0.0, 0)


def test_a_job_known_by_name_only_is_all_unknown() -> None:
    entry = ledger_entry({"name": "projects/p/locations/us-central1/customJobs/5"}, "a100")
    assert (entry["gpu_hours"], entry["usd"], entry["run_seconds"], entry["preempted_seconds"]) == (None,) * 4
    assert entry["preemption_basis"] == "the job was not read" and entry["rung"] == "a100"
    assert ledger_totals([entry, ledger_entry(job())])["usd"] is None  # never a partial sum


def test_a_job_that_has_not_ended_has_no_figures_yet() -> None:
    entry = ledger_entry(job(ended=None, state="JOB_STATE_RUNNING"))
    assert (entry["gpu_hours"], entry["usd"], entry["run_seconds"]) == (None, None, None)
    assert entry["queued_seconds"] == 600.0


def test_an_unpriced_machine_is_unknown_never_free() -> None:
    t4 = [{"machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4"}}]
    assert price_per_hour("n1-standard-8", "NVIDIA_TESLA_T4", 1, "us-central1") is None
    entry = ledger_entry(job(pools=[{**t4[0], "replicaCount": 1}]))
    assert entry["usd"] is None and entry["usd_basis"].startswith("no price for n1-standard-8")
    assert job_usd_per_hour({"name": "nowhere"}) == (None, "no region")


def test_preemptions_lose_the_run_since_the_start_or_the_previous_one() -> None:
    spot = job(strategy="SPOT")
    # preempted 30 min after it started, restarted, preempted again 20 min later, then ran to the end
    entry = ledger_entry(spot, preemptions=[at(600 + 1800), at(600 + 3000)])
    assert (entry["preempted_seconds"], entry["preemptions"]) == (3000.0, 2)
    assert entry["preemption_basis"] == "the job's service log"
    unread = ledger_entry(spot)
    assert unread["preempted_seconds"] is None and unread["preemptions"] is None
    assert "not read" in unread["preemption_basis"]


def test_checkpoints_sharpen_the_time_lost_to_each_preemption() -> None:
    spot = job(strategy="SPOT")  # started at 600
    # checkpoints every 10 minutes of run; preempted at 30 + 5 and at 55 minutes of run; the restart
    # after the first resumed from the 30-minute checkpoint and wrote the next at 50 minutes
    written = [at(600 + 600 * k) for k in (1, 2, 3)] + [at(600 + 3000)]
    entry = ledger_entry(spot, preemptions=[at(600 + 2100), at(600 + 3300)], checkpoints=written)
    assert (entry["preempted_seconds"], entry["preemptions"]) == (300.0 + 300.0, 2)
    assert entry["preemption_basis"] == "the job's service log and its checkpoints"
    # no checkpoint since the restart: the run since the previous preemption is lost, never less
    early = ledger_entry(spot, preemptions=[at(600 + 2100), at(600 + 2400)], checkpoints=written[:3])
    assert early["preemptions"] == 2 and early["preempted_seconds"] == 300.0 + 300.0
    none_yet = ledger_entry(spot, preemptions=[at(600 + 500)], checkpoints=written)
    assert none_yet["preempted_seconds"] == 500.0  # no checkpoint yet: since the job started
    assert (
        ledger_entry(spot, preemptions=[], checkpoints=written)["preemption_basis"] == "the job's service log"
    )


def test_preemption_losses_say_what_each_is_counted_from() -> None:
    from airflow_vertex_dist.jobs.checkpoint_loss import preemption_losses

    s = 1_000_000_000
    losses = preemption_losses(0, [50 * s, 20 * s, 70 * s], [10 * s, 15 * s, 60 * s])
    assert [(x.since, x.since_ns // s, x.lost_s) for x in losses] == [
        ("checkpoint", 15, 5.0),
        ("previous preemption", 20, 30.0),  # the 15 s checkpoint is older than the restart at 20 s
        ("checkpoint", 60, 10.0),
    ]
    assert [x.checkpoint_ns // s if x.checkpoint_ns else None for x in losses] == [15, 15, 60]
    [first] = preemption_losses(5 * s, [8 * s], None)
    assert (first.since, first.lost_s, first.checkpoint_ns) == ("job start", 3.0, None)
    assert preemption_losses(5 * s, [4 * s], []) == []  # before the start: not this run's


def test_the_service_lines_that_name_a_preemption_once_each() -> None:
    said = "The replica workerpool0-0 was preempted: ... The job was already restarted 6 times, the limit."
    failed = job(strategy="SPOT", state="JOB_STATE_FAILED", error=said)
    lines = [
        (at(900), "Job is running."),
        (
            at(1500),
            "The replica workerpool0-0 was preempted: Compute Engine reclaimed its Spot VM (STOCKOUT).",
        ),
        (
            at(1200),
            "The replica workerpool1-0 was preempted: Compute Engine reclaimed its Spot VM (STOCKOUT).",
        ),
        (at(1500), said),  # the job's own error, said again as it fails: the same preemption
    ]
    assert preemption_times(lines, failed) == [at(1200), at(1500)]


def test_a_spot_job_failed_by_a_preemption_its_log_does_not_name_counts_one_at_its_end() -> None:
    failed = job(strategy="SPOT", ended=600 + 100, state="JOB_STATE_FAILED", error="STOCKOUT")
    entry = ledger_entry(failed, preemptions=[])
    assert (entry["preempted_seconds"], entry["preemptions"]) == (100.0, 1)
    assert "error names a preemption" in entry["preemption_basis"]


def test_a_tuning_job_is_counted_per_trial() -> None:
    tuning = {
        "name": "projects/p/locations/us-central1/hyperparameterTuningJobs/3",
        "state": "JOB_STATE_SUCCEEDED",
        "createTime": at(0),
        "startTime": at(10),
        "endTime": at(10 + 3600),
        "parallelTrialCount": 2,
        "trialJobSpec": {"workerPoolSpecs": [{"machineSpec": N1, "replicaCount": 1}]},
        "trials": [
            {"id": "1", "startTime": at(10), "endTime": at(10 + 1800)},
            {"id": "2", "startTime": at(10), "endTime": at(10 + 3600)},
            {"id": "3", "endTime": at(20)},  # never started: no hours
        ],
    }
    assert N1_HOUR is not None
    entry = ledger_entry(tuning)
    assert entry["kind"] == "hyperparameterTuningJobs" and entry["accelerators"] == 0
    assert entry["gpu_hours"] == 0.0  # a CPU trial: no accelerator-hours
    assert entry["usd"] == pytest.approx(N1_HOUR * 1.5, abs=1e-5)  # 0.5 h + 1 h of one trial's price
    assert job_usd_per_hour(tuning) == (pytest.approx(2 * N1_HOUR), ON_DEMAND)  # 2 trials at once
    assert entry["preempted_seconds"] == 0.0  # STANDARD
    running = {**tuning, "trials": [*tuning["trials"], {"id": "4", "startTime": at(20)}]}
    assert ledger_entry(running)["usd"] is None


def test_a_ladder_task_by_rung_and_its_totals() -> None:
    left = ledger_entry(job(started=None, ended=60, state="JOB_STATE_FAILED", error="stockout"), "a100")
    ran = ledger_entry(job(), "l4")
    ledger = task_ledger([left, ran])
    assert [r["rung"] for r in ledger["by_rung"]] == ["a100", "l4"]
    assert ledger["by_rung"][0]["totals"]["usd"] == 0.0
    totals = ledger["totals"]
    assert totals["jobs"] == 2 and totals["queued_seconds"] == 660.0 and totals["run_seconds"] == 7200.0
    assert totals["usd"] == ran["usd"] and totals["usd_basis"] == "exact (on-demand)"
    spot = ledger_entry(job(strategy="SPOT"), "spot", preemptions=[])
    assert ledger_totals([ran, spot])["usd_basis"].startswith("at most")
    json.dumps(ledger)


# -- properties ---------------------------------------------------------------------------------

SECONDS = st.integers(min_value=0, max_value=10 * 24 * 3600)
STRATEGIES = st.sampled_from([None, "STANDARD", "SPOT", "FLEX_START"])


@st.composite
def entries(draw: st.DrawFn) -> dict[str, Any]:
    queued, ran = draw(SECONDS), draw(SECONDS)
    started = draw(st.booleans())
    ended = draw(st.booleans())
    one = job(
        strategy=draw(STRATEGIES),
        started=queued if started else None,
        ended=(queued + ran if started else queued) if ended else None,
        run=draw(st.sampled_from(["ra", "rb", "rc"])),
        state="JOB_STATE_SUCCEEDED" if ended else "JOB_STATE_RUNNING",
    )
    spans = draw(st.lists(st.integers(min_value=0, max_value=max(ran, 0)), max_size=3))
    preemptions = draw(st.one_of(st.none(), st.just([at(queued + s) for s in sorted(spans)])))
    rung = draw(st.sampled_from([None, "a100", "l4"]))
    return dict(ledger_entry(one, rung, preemptions=preemptions))


FIELDS = ("gpu_hours", "usd", "queued_seconds", "run_seconds", "preempted_seconds")


@given(st.lists(entries(), max_size=8))
def test_totals_are_the_sums_and_unknown_is_never_zero(items: list[Any]) -> None:
    totals = ledger_totals(items)
    assert totals["jobs"] == len(items)
    for field in FIELDS:
        values = [e[field] for e in items]
        if any(v is None for v in values):
            assert totals[field] is None  # type: ignore[literal-required]
        else:
            assert totals[field] == pytest.approx(sum(values), abs=1e-3)  # type: ignore[literal-required]


@given(st.lists(entries(), max_size=8))
def test_every_grouping_adds_up_to_the_same_totals(items: list[Any]) -> None:
    whole = ledger_totals(items)
    for groups in ([r["totals"] for r in by_rung(items)], list(by_task(items).values())):
        assert sum(g["jobs"] for g in groups) == whole["jobs"]
        for field in FIELDS:
            parts = [g[field] for g in groups]  # type: ignore[literal-required]
            if whole[field] is None:  # type: ignore[literal-required]
                assert any(p is None for p in parts)
            else:
                assert sum(parts) == pytest.approx(whole[field], abs=1e-3)  # type: ignore[literal-required]


@given(entries())
def test_an_entry_is_consistent(entry: Any) -> None:
    json.dumps(entry)
    if entry["run_seconds"] is not None and entry["gpu_hours"] is not None:
        assert entry["gpu_hours"] == pytest.approx(
            entry["accelerators"] * entry["run_seconds"] / 3600, abs=1e-5
        )
    if entry["preempted_seconds"] is not None and entry["run_seconds"] is not None:
        assert 0 <= entry["preempted_seconds"] <= entry["run_seconds"] + 1e-6
    if entry["strategy"] == "STANDARD":
        assert entry["preemptions"] == 0
    if entry["usd"] is not None and entry["usd_basis"] == AT_MOST:
        assert entry["strategy"] == "SPOT"
