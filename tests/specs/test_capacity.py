"""The capacity ladder spec (``specs.capacity``): rungs applied to a spec and validated as a whole,
named errors, the region allow-list, prices from the catalog, the price ceiling, GPU counts."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_vertex_dist.specs import (
    Checkpoints,
    Container,
    DistributedTrainingJob,
    HyperparameterTuningJob,
    Machine,
    Metric,
    Study,
    WorkerPool,
)
from airflow_vertex_dist.specs.capacity import (
    CapacityLadder,
    LadderError,
    MachineOverride,
    PoolOverride,
    Rung,
    gpu_count,
    plan_ladder,
    spec_price_per_hour,
)
from airflow_vertex_dist.specs.errors import SpecValidationError
from airflow_vertex_dist.specs.parameters import IntegerParameter
from airflow_vertex_dist.specs.prices import price_per_hour

A100 = Machine(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)
L4 = MachineOverride(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)


def pool(machine: Machine = A100, replicas: int = 1) -> WorkerPool:
    return WorkerPool(machine=machine, replica_count=replicas, container=Container(image_uri="python:3.11"))


def spec(**extra: object) -> DistributedTrainingJob:
    return DistributedTrainingJob(
        display_name="train",
        primary=pool(),
        workers=pool(replicas=1),
        base_output_directory="gs://bucket/run",
        **extra,
    )


def test_each_rung_overrides_what_it_names_and_keeps_the_rest() -> None:
    ladder = CapacityLadder(
        regions=("us-east1",),
        rungs=(
            Rung(name="a100"),
            Rung(name="a100-spot", strategy="SPOT", accepts_restarts_from_zero=True),
            Rung(
                name="l4-east",
                region="us-east1",
                machine=L4,
                pools={"workers": PoolOverride(replica_count=3)},
            ),
        ),
    )
    plans = plan_ladder(spec(), ladder, location="us-central1")
    assert [p.name for p in plans] == ["a100", "a100-spot", "l4-east"]
    assert [p.number for p in plans] == [1, 2, 3]
    bodies = [p.spec.to_api(location=p.region or "us-central1") for p in plans]
    assert bodies[0] == spec().to_api(location="us-central1")  # an empty rung is the spec itself
    assert bodies[1]["jobSpec"]["scheduling"] == {"strategy": "SPOT"}
    third = bodies[2]["jobSpec"]["workerPoolSpecs"]
    assert third[0]["machineSpec"] == {
        "machineType": "g2-standard-8",
        "acceleratorType": "NVIDIA_L4",
        "acceleratorCount": 1,
    }
    assert third[1]["machineSpec"] == third[0]["machineSpec"] and third[1]["replicaCount"] == 3
    assert plans[2].region == "us-east1" and plans[2].spec.location == "us-east1"
    # resume: every rung writes under the same output directory, so AIP_CHECKPOINT_DIR is the same
    assert {b["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"] for b in bodies} == {"gs://bucket/run"}
    assert [p.gpus for p in plans] == [2, 2, 4]


def test_a_rung_that_makes_a_bad_spec_fails_naming_the_rung_and_the_rule() -> None:
    ladder = CapacityLadder(
        rungs=(Rung(), Rung(name="half", machine=MachineOverride(machine_type="g2-standard-8")))
    )
    with pytest.raises(LadderError) as info:
        plan_ladder(spec(), ladder, location="us-central1")
    text = str(info.value)
    assert text.startswith("capacity.rungs[1] (half): the rung makes an invalid spec:")
    assert "spec.primary.machine.accelerator_type: g2-standard-8 comes with 1 x NVIDIA_L4" in text


def test_a_pool_the_spec_does_not_have_is_named() -> None:
    ladder = CapacityLadder(rungs=(Rung(pools={"evaluators": PoolOverride(replica_count=2)}),))
    with pytest.raises(
        LadderError, match=r"capacity.rungs\[0\].pools.evaluators: the spec has no evaluators pool"
    ):
        plan_ladder(spec(), ladder, location="us-central1")


def test_flex_start_rules_apply_to_the_rung() -> None:
    """FLEX_START needs the same machine in every pool: a rung that makes pools differ is refused."""
    ladder = CapacityLadder(
        rungs=(
            Rung(
                strategy="FLEX_START",
                pools={"workers": PoolOverride(**L4.model_dump())},
                accepts_restarts_from_zero=True,
            ),
        )
    )
    with pytest.raises(LadderError, match="FLEX_START needs the same machine configuration in every pool"):
        plan_ladder(spec(), ladder, location="us-central1")
    ok = CapacityLadder(rungs=(Rung(strategy="FLEX_START", max_wait_duration=timedelta(hours=2)),))
    [plan] = plan_ladder(spec(checkpoints=Checkpoints()), ok, location="us-central1")
    assert plan.spec.to_api()["jobSpec"]["scheduling"] == {
        "strategy": "FLEX_START",
        "maxWaitDuration": "7200s",
    }


def test_a_strategy_change_drops_a_flex_start_wait() -> None:
    base = spec(scheduling={"strategy": "FLEX_START", "max_wait_duration": "3600s"})
    [plan] = plan_ladder(
        base,
        CapacityLadder(rungs=(Rung(strategy="SPOT", accepts_restarts_from_zero=True),)),
        location="us-central1",
    )
    assert plan.spec.to_api()["jobSpec"]["scheduling"] == {"strategy": "SPOT"}


def test_regions_come_from_an_explicit_allow_list() -> None:
    with pytest.raises(SpecValidationError, match=r"rungs\[0\].region: 'europe-west4' is not in regions"):
        CapacityLadder(rungs=(Rung(region="europe-west4"),))
    with pytest.raises(SpecValidationError, match="max_wait_duration: only applies to strategy FLEX_START"):
        Rung(strategy="SPOT", max_wait_duration=60)
    with pytest.raises(SpecValidationError, match="pending_limit: must be positive"):
        Rung(pending_limit=0)
    with pytest.raises(SpecValidationError, match="rungs: give 1 to 20 rungs"):
        CapacityLadder(rungs=())
    with pytest.raises(SpecValidationError, match="every rung's name must be different"):
        CapacityLadder(rungs=(Rung(name="a"), Rung(name="a")))


def test_prices_come_from_the_catalog() -> None:
    one = price_per_hour("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1, "us-central1")
    assert one is not None
    price, basis = spec_price_per_hour(spec(), "us-central1")
    assert price == pytest.approx(2 * one) and basis == "on-demand"
    spot, spot_basis = spec_price_per_hour(spec(scheduling={"strategy": "SPOT"}), "us-central1")
    assert spot == price and spot_basis.startswith("at most")  # no Spot price in the catalog: a bound
    flex, flex_basis = spec_price_per_hour(spec(scheduling={"strategy": "FLEX_START"}), "us-central1")
    assert flex is None and "flex-start" in flex_basis
    assert spec_price_per_hour(spec(), None) == (None, "no region")


def test_the_price_ceiling_refuses_a_rung_above_it_or_of_unknown_price() -> None:
    one = price_per_hour("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1, "us-central1") or 0.0
    fits = CapacityLadder(max_price_per_hour=2 * one + 0.01, rungs=(Rung(),))
    assert plan_ladder(spec(), fits, location="us-central1")[0].usd_per_hour == pytest.approx(2 * one)
    over = CapacityLadder(max_price_per_hour=2 * one - 0.01, rungs=(Rung(name="big"),))
    with pytest.raises(LadderError, match=r"capacity.rungs\[0\] \(big\): .* USD/hour \(on-demand\) is above"):
        plan_ladder(spec(), over, location="us-central1")
    unknown = CapacityLadder(
        max_price_per_hour=1000, rungs=(Rung(strategy="FLEX_START", accepts_restarts_from_zero=True),)
    )
    with pytest.raises(LadderError, match="an unknown price"):
        plan_ladder(spec(), unknown, location="us-central1")


def test_gpu_count_of_a_tuning_job_counts_its_parallel_trials() -> None:
    tuning = HyperparameterTuningJob(
        trial_job=spec(),
        study=Study(
            metrics=(Metric(metric_id="loss", goal="MINIMIZE"),),
            parameters=(IntegerParameter(parameter_id="x", min_value=1, max_value=3),),
        ),
        max_trial_count=6,
        parallel_trial_count=3,
    )
    assert gpu_count(spec()) == 2
    assert gpu_count(tuning) == 6
    [plan] = plan_ladder(tuning, CapacityLadder(rungs=(Rung(machine=L4),)), location="us-central1")
    assert plan.gpus == 6
    assert plan.spec.trial_job.primary.machine.machine_type == "g2-standard-8"


def test_a_spot_or_flex_start_rung_needs_checkpoints_or_accepts_restarts_from_zero() -> None:
    """The checkpoint contract: a rung whose job is preemptible, on a spec that does not say how its
    trainer checkpoints, is refused, named, with both ways out."""
    for strategy in ("SPOT", "FLEX_START"):
        ladder = CapacityLadder(rungs=(Rung(name="a100"), Rung(name="cheap", strategy=strategy)))
        with pytest.raises(LadderError) as caught:
            plan_ladder(spec(), ladder, location="us-central1")
        text = str(caught.value)
        assert text.startswith(f"capacity.rungs[1] (cheap): strategy {strategy} on a spec whose trainer")
        assert "(checkpoints unset)" in text and "accepts_restarts_from_zero=True" in text
        assert "checkpoints=Checkpoints()" in text
    ladder = CapacityLadder(rungs=(Rung(name="a100"), Rung(name="cheap", strategy="SPOT")))
    plans = plan_ladder(spec(checkpoints=Checkpoints()), ladder, location="us-central1")
    assert plans[1].spec.checkpoints == Checkpoints()
    assert "checkpoints" not in str(plans[1].spec.to_api())  # the contract is not sent to Vertex AI
    opted = CapacityLadder(rungs=(Rung(strategy="SPOT", accepts_restarts_from_zero=True),))
    assert len(plan_ladder(spec(), opted, location="us-central1")) == 1
    # a rung that keeps the spec's own SPOT strategy is a SPOT rung too
    with pytest.raises(LadderError, match=r"rungs\[0\]: strategy SPOT on a spec"):
        plan_ladder(
            spec(scheduling={"strategy": "SPOT"}), CapacityLadder(rungs=(Rung(),)), location="us-central1"
        )
    with pytest.raises(
        SpecValidationError, match="accepts_restarts_from_zero: only applies to a SPOT or FLEX"
    ):
        Rung(strategy="STANDARD", accepts_restarts_from_zero=True)


def test_a_tuning_spot_rung_reads_its_trial_jobs_checkpoints() -> None:
    tuning = HyperparameterTuningJob(
        trial_job=spec(),
        study=Study(
            metrics=(Metric(metric_id="loss", goal="MINIMIZE"),),
            parameters=(IntegerParameter(parameter_id="x", min_value=1, max_value=3),),
        ),
        max_trial_count=2,
    )
    ladder = CapacityLadder(rungs=(Rung(strategy="SPOT"),))
    with pytest.raises(LadderError, match=r"\(trial_job.checkpoints unset\)"):
        plan_ladder(tuning, ladder, location="us-central1")
    tuned = tuning.model_copy(update={"trial_job": spec(checkpoints=Checkpoints())})
    assert len(plan_ladder(tuned, ladder, location="us-central1")) == 1


def test_checkpoints_name_a_directory_or_need_the_output_directory() -> None:
    with pytest.raises(SpecValidationError, match="checkpoints: the default directory is AIP_CHECKPOINT_DIR"):
        DistributedTrainingJob(display_name="t", primary=pool(), checkpoints=Checkpoints())
    with pytest.raises(SpecValidationError, match="checkpoints.directory: must be a Cloud Storage URI"):
        Checkpoints(directory="/local/ckpt")
    mine = DistributedTrainingJob(
        display_name="t",
        primary=pool(),
        checkpoints=Checkpoints(directory="gs://b/ckpt", match_glob="ckpt-*"),
    )
    assert mine.checkpoints is not None and mine.checkpoints.match_glob == "ckpt-*"
    templated = Checkpoints(directory="gs://b/{{ ds }}/ckpt")  # judged once rendered
    assert templated.directory == "gs://b/{{ ds }}/ckpt"
