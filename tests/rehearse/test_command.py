"""``airflow-vertex-dist rehearse``: what it refuses before it starts anything (exit 2, the flag and the
rule named), a scenario refused by the emulator's own rules with the file's line, and the report's
pure parts (the most GPUs held at once; the text and the picture of a report)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from airflow_vertex_dist.cli import main
from airflow_vertex_dist.rehearse.render import report_text, timeline_svg
from airflow_vertex_dist.rehearse.report import peak_gpus

HERE = Path(__file__).resolve().parent
DAG = str(HERE / "dags" / "nightly.py")
NIGHT = str(HERE / "night.yaml")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["missing.py", "--scenario", NIGHT, "--logical-date", "2026-01-05"], "missing.py: no such DAG file"),
        (
            [DAG, "--scenario", "none.yaml", "--logical-date", "2026-01-05"],
            "--scenario none.yaml: no such file",
        ),
        ([DAG, "--scenario", NIGHT], "give --logical-date (repeatable) or --start-date and --end-date"),
        ([DAG, "--scenario", NIGHT, "--start-date", "2026-01-05"], "--start-date and --end-date: give both"),
        (
            [DAG, "--scenario", NIGHT, "--logical-date", "2026-01-05", "--parallel", "0"],
            "--parallel: must be from 1",
        ),
        (
            [DAG, "--scenario", NIGHT, "--logical-date", "2026-01-05", "--bucket", "Bad/Name"],
            "--bucket Bad/Name",
        ),
    ],
)
def test_bad_arguments_are_refused_before_anything_starts(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rehearse", *args]) == 2
    assert said in capsys.readouterr().err


def test_a_bad_date_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["rehearse", DAG, "--scenario", NIGHT, "--logical-date", "Monday"])
    assert "not a date: 'Monday'" in capsys.readouterr().err


def test_a_scenario_that_breaks_a_rule_is_refused_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "night.yaml"
    bad.write_text("version: 1\ntimeline:\n  - at: 0\n    stock: {region: us-central1, count: -1}\n")
    out = tmp_path / "out"
    assert (
        main(["rehearse", DAG, "--scenario", str(bad), "--logical-date", "2026-01-05", "--out", str(out)])
        == 2
    )
    assert "--scenario: night.yaml:4: timeline[0].stock." in capsys.readouterr().err
    assert not out.exists()  # nothing was started


def test_the_most_gpus_held_counts_an_end_before_a_create_at_one_time() -> None:
    row: dict[str, Any] = {"region": "us-central1", "accelerator_type": "NVIDIA_L4", "strategy": "STANDARD"}
    rows = [
        {**row, "accelerators": 2, "created_s": 0.0, "ended_s": 100.0},
        {**row, "accelerators": 2, "created_s": 100.0, "ended_s": 200.0},  # takes over as the first ends
        {**row, "accelerators": 1, "created_s": 150.0, "ended_s": None},  # still held
        {**row, "accelerators": 4, "created_s": 10.0, "ended_s": 20.0, "strategy": "SPOT"},
        {**row, "accelerator_type": None, "accelerators": 0, "created_s": 0.0, "ended_s": 1.0},
    ]
    assert peak_gpus(rows) == [
        {"region": "us-central1", "accelerator": "NVIDIA_L4", "preemptible": False, "gpus": 3, "at_s": 150.0},
        {"region": "us-central1", "accelerator": "NVIDIA_L4", "preemptible": True, "gpus": 4, "at_s": 10.0},
    ]


def _totals(jobs: int, gpu_hours: float | None, usd: float | None) -> dict[str, Any]:
    return {
        "jobs": jobs,
        "gpu_hours": gpu_hours,
        "usd": usd,
        "usd_basis": "exact (on-demand)",
        "queued_seconds": 60.0,
    }


def test_the_text_and_the_picture_of_a_report() -> None:
    job = {"task": "train", "rung": "l4", "state": "JOB_STATE_SUCCEEDED", "job": "p/l/customJobs/7"}
    failed = {**job, "rung": "a100", "state": "JOB_STATE_CANCELLED", "job": "p/l/customJobs/6"}
    report = {
        "scenario": {"file": "night.yaml", "compression": 600},
        "real_seconds": 12.0,
        "night_seconds": 7200.0,
        "runs": [
            {
                "logical_date": "2026-01-05T00:00:00+00:00",
                "state": "success",
                "totals": _totals(2, 1.5, 2.25),
                "seconds_to_model": 5400.0,
                "rungs_tried": [
                    {"task": "train", "rung": "a100", "outcome": "stockout", "reason": "stayed PENDING"}
                ],
                "by_rung": [
                    {"rung": "a100", "totals": _totals(1, 0.0, 0.0)},
                    {"rung": "l4", "totals": _totals(1, 1.5, 2.25)},
                ],
                "jobs": [
                    {**failed, "created_s": 0.0, "started_s": None, "ended_s": 3600.0},
                    {**job, "created_s": 3600.0, "started_s": 3700.0, "ended_s": 7200.0},
                ],
            }
        ],
        "peaks": [
            {
                "region": "us-central1",
                "accelerator": "NVIDIA_L4",
                "preemptible": False,
                "gpus": 1,
                "quota": 8,
                "quota_in_use": 1,
                "at_s": 3600.0,
            }
        ],
        "totals": _totals(2, 1.5, 2.25),
    }
    text = report_text(report)
    assert "2.00 h of the night in 12 s" in text and "1.50 h" in text and "$2.25" in text
    assert "a100  stockout  stayed PENDING" in text
    assert "us-central1  NVIDIA_L4    on demand  1      1.00 h  1       8" in text
    svg = ET.fromstring(timeline_svg(report, width=1000))
    ns = "{http://www.w3.org/2000/svg}"
    bars = list(svg.iter(f"{ns}g"))
    assert [b.find(f"{ns}title").text for b in bars] == [  # type: ignore[union-attr]
        "train on a100: CANCELLED, 6",
        "train on l4: SUCCEEDED, 7",
    ]
    # the cancelled job: queued only, outlined red; the one that ran: queued 100 s, then run
    assert [r.get("stroke") for r in bars[0].iter(f"{ns}rect")] == [None, "#c62828"]
    queued, ran = list(bars[1].iter(f"{ns}rect"))
    assert float(ran.get("width") or 0) > 30 * float(queued.get("width") or 0) > 0


def test_the_emulator_gets_the_extra_flags_and_airflow_the_extra_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--emulator-arg`` reaches the emulator's command line, ``--env`` the Airflow processes, whose
    environment holds none of the caller's Airflow settings and points the DAG's connection and the
    Cloud Storage client at the emulator."""
    import json

    from airflow_vertex_dist.rehearse.runs import RehearsalPlan, _env
    from airflow_vertex_dist.rehearse.service_process import EmulatorProcess

    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "CeleryExecutor")  # the caller's: not the rehearsal's
    em = EmulatorProcess.start(tmp_path / "emulator", ["--stockout-after", "77"])
    try:
        assert em.admin("GET", "/emulator/capacity")["stockout_after_s"] == 77
        plan = RehearsalPlan(Path(DAG), Path(NIGHT), tmp_path, env={"TEAM": "vision"}, conn_id="gpu_conn")
        env = _env(plan, em, tmp_path / "home")
    finally:
        assert em.stop() == 0
    assert env["TEAM"] == "vision" and env["STORAGE_EMULATOR_HOST"] == em.storage_url
    assert "AIRFLOW__CORE__EXECUTOR" not in env and env["AIRFLOW_HOME"] == str(tmp_path / "home")
    extra = json.loads(env["AIRFLOW_CONN_GPU_CONN"])["extra"]
    assert (extra["api_endpoint"], extra["web_endpoint"], extra["emulator"]) == (
        em.grpc_target,
        em.rest_url,
        True,
    )


def test_a_date_no_run_reached_is_a_run_not_run_and_says_why() -> None:
    from airflow_vertex_dist.rehearse.report import failures
    from airflow_vertex_dist.rehearse.runs import Rehearsal, missing_runs

    done = {"logical_date": "2026-01-05T00:00:00+00:00", "run_id": "r", "state": "success", "tasks": []}
    dates = ["2026-01-05T00:00:00+00:00", "2026-01-06T00:00:00"]
    assert missing_runs(dates, [done]) == [
        {"logical_date": "2026-01-06T00:00:00", "run_id": None, "state": "not run", "tasks": []}
    ]
    assert missing_runs(["2026-01-05T00:00:00"], [done]) == []  # the same instant (UTC), another spelling
    timed_out = "the runs took longer than the timeout (60 s): stopped airflow.log"
    report: dict[str, Any] = {
        "runs": [
            {"logical_date": "2026-01-05", "state": "success", "tasks": {"train": "success"}, "jobs": []},
            {"logical_date": "2026-01-06", "state": "not run", "tasks": {}, "jobs": []},
        ],
        "problems": [timed_out],
    }
    assert failures(report) == ["2026-01-06: not run", timed_out]
    assert not Rehearsal(report, Path()).ok
    report["runs"].pop()
    assert not Rehearsal(report, Path()).ok  # the timeout alone
    report["problems"] = []
    assert Rehearsal(report, Path()).ok and Rehearsal(report, Path()).failures == []
    assert failures({"runs": []}) == ["no run was made"] and not Rehearsal({"runs": []}, Path()).ok


def test_an_airflow_process_past_the_timeout_is_stopped_and_one_that_failed_is_named(tmp_path: Path) -> None:
    import subprocess
    import sys

    from airflow_vertex_dist.rehearse.runs import RehearsalPlan, _wait_for_runs

    started = []
    for name, code in (("slow.log", "import time; time.sleep(60)"), ("broken.log", "raise SystemExit(3)")):
        log = (tmp_path / name).open("w")
        started.append((subprocess.Popen([sys.executable, "-c", code]), tmp_path / "result.json", log))
    plan = RehearsalPlan(Path(DAG), Path(NIGHT), tmp_path, timeout_s=2)
    try:
        problems = _wait_for_runs(plan, started)
    finally:
        for proc, _result, log in started:
            proc.kill()
            proc.wait()
            log.close()
    slow, broken = (str(tmp_path / name) for name in ("slow.log", "broken.log"))
    assert problems == [
        f"the runs took longer than the timeout (2 s): an Airflow process was stopped (see {slow})",
        f"an Airflow process ended with exit status 3: see {broken}",
    ]
    assert started[0][0].returncode == -9


def test_the_quota_in_use_is_the_emulators_books_row_of_the_same_kind() -> None:
    from airflow_vertex_dist.rehearse.report import build_report

    job = {
        "name": "projects/p/locations/us-central1/customJobs/1",
        "labels": {"airflow-run": "r1"},
        "state": "JOB_STATE_QUEUED",
        "createTime": "2026-01-05T00:00:10Z",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {
                        "machineType": "a2-highgpu-1g",
                        "acceleratorType": "NVIDIA_TESLA_A100",
                        "acceleratorCount": 1,
                    },
                    "replicaCount": "4",
                }
            ],
            "scheduling": {"strategy": "SPOT"},
        },
    }
    run = {"logical_date": "2026-01-05", "run_id": "r", "state": "running"}
    run["tasks"] = [{"task_id": "train", "map_index": -1, "state": "deferred", "run_label": "r1"}]
    metric = "aiplatform.googleapis.com/custom_model_training{}_nvidia_a100_gpus"
    books = [
        {"region": "us-central1", "accelerator": "NVIDIA_TESLA_A100", "metric": metric.format(""), "peak": 8},
        {
            "region": "us-central1",
            "accelerator": "NVIDIA_TESLA_A100",
            "metric": metric.format("_preemptible"),
            "peak": 0,
        },
    ]
    common: dict[str, Any] = {"samples": [], "night_start_ns": 0, "scenario": {}, "real_seconds": 1.0}
    report = build_report(runs=[run], jobs=[job], quota_books=books, **common)
    [peak] = report["peaks"]
    assert (peak["preemptible"], peak["gpus"], peak["quota_in_use"]) == (True, 4, 0)  # asked, queued: none
    assert build_report(runs=[run], jobs=[job], **common)["peaks"][0]["quota_in_use"] is None


def test_every_example_scenario_is_in_the_how_to_and_rehearsed_by_a_test() -> None:
    root = HERE.parents[1]
    scenarios = [*sorted((root / "dags" / "scenarios").glob("*.yaml")), *sorted(HERE.glob("*.yaml"))]
    assert len(scenarios) >= 6
    page = (root / "docs" / "how-to" / "rehearse.md").read_text()
    tests = {path.name: path.read_text() for path in HERE.glob("test_*.py")}
    for path in scenarios:
        named = path.relative_to(root).as_posix()
        assert f"| `{named}` |" in page, named  # a row of the how-to's table of example scenarios
        row = next(line for line in page.splitlines() if line.startswith(f"| `{named}` |"))
        test_file = row.rsplit("|", 2)[-2].strip().strip("`")
        assert path.name in tests[test_file], (named, test_file)  # the test named there rehearses it


def test_a_db_cache_keeps_the_migrated_db_and_later_rehearsals_copy_it(tmp_path: Path) -> None:
    """``--db-cache``: the first rehearsal migrates the metadata DB and keeps it as migrated (before the
    DAG is stored in it); a later one with the same Airflow settings copies it and starts no Airflow
    process to prepare given dates; another Airflow setting keeps a DB of its own."""
    import sqlite3
    from contextlib import closing
    from datetime import datetime, timezone

    from airflow_vertex_dist.rehearse.db_cache import cached_db
    from airflow_vertex_dist.rehearse.runs import RehearsalPlan, _env, _Preparation

    def dags(db: Path) -> list[str]:
        with closing(sqlite3.connect(db)) as connection:
            assert connection.execute("SELECT version_num FROM alembic_version").fetchone()  # migrated
            return [row[0] for row in connection.execute("SELECT dag_id FROM dag")]

    cache, day = tmp_path / "cache", datetime(2026, 1, 5, tzinfo=timezone.utc)
    first = _Preparation.start(
        RehearsalPlan(Path(DAG), Path(NIGHT), tmp_path / "one", start=day, end=day, db_cache=cache)
    )
    assert first.process is not None  # nothing kept yet: it migrates (and reads the range's dates)
    assert first.dates() == ["2026-01-05T00:00:00+00:00"]
    [kept] = cache.iterdir()
    assert dags(kept) == [] and dags(first.template / "airflow.db") == ["nightly"]
    second = _Preparation.start(
        RehearsalPlan(Path(DAG), Path(NIGHT), tmp_path / "two", dates=[day], db_cache=cache)
    )
    assert second.process is None and second.dates() == ["2026-01-05T00:00:00+00:00"]
    assert (second.template / "airflow.db").read_bytes() == kept.read_bytes()
    paris = RehearsalPlan(
        Path(DAG), Path(NIGHT), tmp_path, env={"AIRFLOW__CORE__DEFAULT_TIMEZONE": "Europe/Paris"}
    )
    assert cached_db(cache, _env(paris, None, tmp_path / "home")) != kept
    settle = {"AIRFLOW__VERTEX_DIST__LOG_SETTLE_SECONDS": "0", "AIRFLOW_CONN_OTHER": "{}"}
    provider = RehearsalPlan(Path(DAG), Path(NIGHT), tmp_path, env=settle)  # not read by the migration
    assert cached_db(cache, _env(provider, None, tmp_path / "home")) == kept
    assert cached_db(cache, _env(paris, None, tmp_path / "elsewhere")) == cached_db(
        cache, _env(paris, None, tmp_path)
    )
