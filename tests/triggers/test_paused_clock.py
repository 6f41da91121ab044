"""PausedClock: the PAUSED-grace clock shared by the trigger and the polling operators."""

from __future__ import annotations

import datetime

from airflow_vertex_dist.jobs.states import PausedClock, job_event

NAME = "projects/p/locations/us-central1/customJobs/1"


def _ago(seconds: float) -> str:
    when = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_not_paused_is_none_and_resets() -> None:
    clock = PausedClock()
    assert clock.paused_for({"name": NAME, "state": "JOB_STATE_RUNNING"}) is None
    first = clock.paused_for({"name": NAME, "state": "JOB_STATE_PAUSED", "updateTime": _ago(0)})
    assert first is not None and 0 <= first < 5
    assert clock.paused_for({"name": NAME, "state": "JOB_STATE_RUNNING"}) is None
    again = clock.paused_for({"name": NAME, "state": "JOB_STATE_PAUSED"})  # no updateTime: own clock
    assert again is not None and 0 <= again < 1


def test_a_job_paused_long_ago_counts_from_its_last_update() -> None:
    """A re-attaching retry (or a restarted triggerer) does not wait a whole new grace period."""
    job = {"name": NAME, "state": "JOB_STATE_PAUSED", "updateTime": _ago(600)}
    paused_for = PausedClock().paused_for(job)
    assert paused_for is not None and 600 <= paused_for < 660
    event = job_event(job, paused_for_s=paused_for, paused_grace=300)
    assert event is not None and event["status"] == "error"
    assert event["message"].startswith(f"job {NAME} stayed PAUSED for 6")
    assert job_event(job, paused_for_s=paused_for, paused_grace=3600) is None


def test_a_garbled_update_time_falls_back_to_the_own_clock() -> None:
    paused_for = PausedClock().paused_for({"name": NAME, "state": "JOB_STATE_PAUSED", "updateTime": "soon"})
    assert paused_for is not None and 0 <= paused_for < 1
