"""A rehearsal run end to end: the emulator, the night, Airflow's runs of the DAG, what came of them.

``rehearse`` checks the scenario, starts an emulator (``service_process``), migrates one SQLite metadata
DB (or copies the one a ``db_cache`` folder keeps: ``db_cache``), starts ``parallel`` Airflow processes
(``child``; each a copy of that DB, a slice of the logical dates, run one after another), and once every
one is ready plays the scenario and lets them run. While they run it samples the emulator's clock and
capacity settings (the quota in force over the night). Then it lists every job of the rehearsal's project
in every region of the machine catalog, reads the scenario's steps, stops the emulator and writes
``report.json``, ``report.txt`` and ``timeline.svg`` (``report``, ``render``) under the rehearsal's
directory.

Each Airflow process has a metadata DB of its own: runs in different processes do not share Airflow
pools (the emulator's quota they do share); runs of one process run one after another.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from airflow_vertex_dist.rehearse.db_cache import cached_db, restore
from airflow_vertex_dist.rehearse.service_process import EmulatorProcess, RehearsalError, check_scenario

__all__ = ["PROJECT", "Rehearsal", "RehearsalPlan", "missing_runs", "rehearse"]

#: the project and location of the rehearsal's connection
PROJECT = "rehearsal-project"
LOCATION = "us-central1"
_SAMPLE_EVERY_S = 0.5
_READY_TIMEOUT_S = 300.0


@dataclass
class RehearsalPlan:
    """What to rehearse: a DAG file (and its DAG, when it holds several), the scenario file, the logical
    dates (or a ``start``/``end`` range read with the DAG's schedule), how many Airflow processes run at
    once, extra emulator flags (``--image-map``...), extra environment of the Airflow processes, the
    connection id the DAG's tasks use, a bound on the whole run (real seconds), the Cloud Storage
    buckets that exist on the emulator from the start and a folder that keeps the migrated metadata DB
    between rehearsals (``db_cache``; none: each rehearsal migrates its own)."""

    dag_file: Path
    scenario: Path
    workdir: Path
    dag_id: str | None = None
    dates: Sequence[datetime] = ()
    start: datetime | None = None
    end: datetime | None = None
    parallel: int = 1
    emulator_args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    conn_id: str = "vertex_dist_default"
    timeout_s: float = 3600.0
    buckets: Sequence[str] = ()
    db_cache: Path | None = None


@dataclass
class Rehearsal:
    """What a rehearsal left: the report (``report.build_report``) and where its files are."""

    report: dict[str, Any]
    workdir: Path

    @property
    def ok(self) -> bool:
        """Every run succeeded (a date the rehearsal did not reach is a run that did not), and nothing
        went wrong with the Airflow processes."""
        runs = self.report["runs"]
        return bool(runs) and all(r["state"] == "success" for r in runs) and not self.report.get("problems")

    @property
    def failures(self) -> list[str]:
        """Why the rehearsal is not ``ok``, one line each (``report.failures``): none when it is."""
        from airflow_vertex_dist.rehearse.report import failures

        return failures(self.report)


def _connection(em: EmulatorProcess) -> str:
    extra = {
        "project": PROJECT,
        "location": LOCATION,
        "api_endpoint": em.grpc_target,
        "emulator": True,
        "web_endpoint": em.rest_url,
    }
    return json.dumps({"conn_type": "vertex_dist", "extra": extra})


def _emulator_env(plan: RehearsalPlan, em: EmulatorProcess) -> dict[str, str]:
    """What points the Airflow processes at the emulator: the DAG's connection and the stock Cloud Storage
    client (``STORAGE_EMULATOR_HOST``); the plan's ``env`` wins over either."""
    env = {"STORAGE_EMULATOR_HOST": em.storage_url, f"AIRFLOW_CONN_{plan.conn_id.upper()}": _connection(em)}
    return {k: v for k, v in env.items() if k not in plan.env}


def _env(plan: RehearsalPlan, em: EmulatorProcess | None, home: Path) -> dict[str, str]:
    """A pristine Airflow (none of the caller's Airflow settings), its connection at the emulator (none
    before the emulator is up: making the metadata DB, reading the dates and an Airflow process's start
    need no connection; the runs get it with the word to go)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(plan.dag_file.parent),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
    )
    if em is not None:
        env.update(_emulator_env(plan, em))
    env.update(plan.env)
    return env


def _child(
    plan_json: dict[str, Any], path: Path, env: dict[str, str], **kwargs: Any
) -> subprocess.Popen[str]:
    path.write_text(json.dumps(plan_json))
    command = [sys.executable, "-m", "airflow_vertex_dist.rehearse.child", str(path)]
    return subprocess.Popen(command, env=env, text=True, **kwargs)


@dataclass
class _Preparation:
    """The Airflow process that makes the metadata DB every other one copies (``template``) and, for a
    range, reads the logical dates from the DAG's schedule; started before the emulator, as they need
    none of it. None when the DB came from the ``db_cache`` and the dates are given."""

    plan: RehearsalPlan
    template: Path
    process: subprocess.Popen[str] | None
    log: Any

    @classmethod
    def start(cls, plan: RehearsalPlan) -> _Preparation:
        template = plan.workdir / "airflow" / "template"
        template.mkdir(parents=True, exist_ok=True)
        env = _env(plan, None, template)
        ask: dict[str, Any] = {}
        cached = None if plan.db_cache is None else cached_db(plan.db_cache, env)
        if cached is None or not restore(cached, template):
            ask.update(migrate=True, save_db=None if cached is None else str(cached))
        if not plan.dates:
            if plan.start is None or plan.end is None:
                raise RehearsalError("give logical dates, or a start and an end date")
            ask.update(
                dag_file=str(plan.dag_file), dag_id=plan.dag_id, result=str(template / "dates-answer.json")
            )
            ask.update(start_date=plan.start.isoformat(), end_date=plan.end.isoformat())
        if not ask:  # the DB copied from the cache, the dates given: nothing to prepare
            return cls(plan, template, None, None)
        log = (plan.workdir / "airflow" / "prepare.log").open("w")
        process = _child(ask, template / "prepare.json", env, stdout=log, stderr=log)
        return cls(plan, template, process, log)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        if self.log is not None:
            self.log.close()

    def dates(self) -> list[str]:
        """Wait for it: the logical dates (``RehearsalError`` when it failed)."""
        if self.process is not None:
            try:
                code: int | None = self.process.wait(_READY_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                code = None
            finally:
                self.stop()
            if code != 0:
                raise RehearsalError(
                    f"Airflow's metadata DB or the DAG's dates could not be made: see {self.log.name}"
                )
        if self.plan.dates:
            return [d.isoformat() for d in self.plan.dates]
        dates: list[str] = json.loads((self.template / "dates-answer.json").read_text())["dates"]
        if not dates:
            raise RehearsalError(f"no run of the DAG's schedule from {self.plan.start} to {self.plan.end}")
        return dates


class _Sampler(threading.Thread):
    """The emulator's clock and quota every ``_SAMPLE_EVERY_S`` real seconds while the runs run."""

    def __init__(self, em: EmulatorProcess) -> None:
        super().__init__(daemon=True)
        self.em, self.samples, self.stop = em, list[dict[str, Any]](), threading.Event()

    def run(self) -> None:
        while not self.stop.wait(_SAMPLE_EVERY_S):
            self.take()

    def take(self) -> None:
        try:
            clock, capacity = (
                self.em.admin("GET", "/emulator/clock"),
                self.em.admin("GET", "/emulator/capacity"),
            )
        except (RehearsalError, OSError):
            return  # a busy moment: the next sample tells
        keys = ("quota", "preemptible_quota")
        self.samples.append({"now_ns": clock["now_ns"], **{k: capacity.get(k) or {} for k in keys}})


def _start_runs(plan: RehearsalPlan, template: Path, dates: list[str]) -> list[Any]:
    """Start the Airflow processes, each on a copy of ``template`` and a slice of ``dates``: they need
    no emulator until their runs, whose connection comes with the word to go (``_go``)."""
    slices = [dates[i :: max(1, plan.parallel)] for i in range(max(1, plan.parallel))]
    started = []
    for number, part in enumerate(s for s in slices if s):
        home = plan.workdir / "airflow" / f"runs-{number}"
        shutil.copytree(template, home, dirs_exist_ok=True)
        result = home / "result.json"
        job = {"dag_file": str(plan.dag_file), "dag_id": plan.dag_id, "dates": part, "result": str(result)}
        job["ready"] = str(home / "ready")
        log = (home / "airflow.log").open("w")
        env = _env(plan, None, home)
        proc = _child(job, home / "plan.json", env, stdin=subprocess.PIPE, stdout=log, stderr=log)
        started.append((proc, result, log))
    return started


def _wait_ready(started: list[Any]) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT_S
    for proc, result, log in started:  # ready: the DAG is loaded, Airflow waits for the night
        while not result.with_name("ready").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RehearsalError(f"an Airflow process did not get ready: see {log.name}")
            time.sleep(0.1)


def _go(plan: RehearsalPlan, em: EmulatorProcess, started: list[Any]) -> None:
    """The word to go: one line to each Airflow process, the environment that points it at the emulator."""
    line = json.dumps(_emulator_env(plan, em)) + "\n"
    for proc, _result, _log in started:
        assert proc.stdin is not None
        proc.stdin.write(line)
        proc.stdin.close()


def _stop_runs(started: list[Any]) -> None:
    for proc, _result, log in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        log.close()


def _wait_for_runs(plan: RehearsalPlan, started: list[Any]) -> list[str]:
    """Wait for every Airflow process until ``plan.timeout_s``; what went wrong with them (a process
    still running at the deadline is killed, its runs not done are "not run")."""
    problems = []
    deadline = time.monotonic() + plan.timeout_s
    for proc, _result, log in started:
        try:
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            problems.append(
                f"the runs took longer than the timeout ({plan.timeout_s:g} s): "
                f"an Airflow process was stopped (see {log.name})"
            )
            continue
        if code != 0:
            problems.append(f"an Airflow process ended with exit status {code}: see {log.name}")
    return problems


def _runs_of(started: list[Any], dates: Sequence[str]) -> list[dict[str, Any]]:
    """Every run the Airflow processes recorded, and a "not run" one for each date they did not reach."""
    runs = [
        run for _p, result, _l in started if result.exists() for run in json.loads(result.read_text())["runs"]
    ]
    return runs + missing_runs(dates, runs)


def missing_runs(dates: Sequence[str], runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A ``"not run"`` run (no run id, no task) for each of ``dates`` (ISO 8601) no run in ``runs`` has."""
    done = {_instant(run["logical_date"]) for run in runs}
    return [
        {"logical_date": text, "run_id": None, "state": "not run", "tasks": []}
        for text in dates
        if _instant(text) not in done
    ]


def _instant(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def rehearse(plan: RehearsalPlan) -> Rehearsal:
    """Run ``plan`` and write its report; ``RehearsalError`` when it cannot be run at all."""
    from airflow_vertex_dist.rehearse.collect import collect_jobs, import_clients
    from airflow_vertex_dist.rehearse.render import write_report
    from airflow_vertex_dist.rehearse.report import build_report

    scenario = check_scenario(plan.scenario)
    plan.workdir.mkdir(parents=True, exist_ok=True)
    preparation = _Preparation.start(plan)
    started: list[Any] = []
    try:
        if preparation.process is None:  # the DB and the dates at hand: Airflow starts beside the emulator
            started = _start_runs(plan, preparation.template, preparation.dates())
        em = EmulatorProcess.start(plan.workdir / "emulator", plan.emulator_args)
    except BaseException:
        preparation.stop()
        _stop_runs(started)
        raise
    sampler = _Sampler(em)
    try:
        for bucket in plan.buckets:  # a bucket is a folder of the emulator's gs:// root
            (em.gcs_root / bucket).mkdir(parents=True, exist_ok=True)
        dates = preparation.dates()
        if preparation.process is not None:
            started = _start_runs(plan, preparation.template, dates)
        _wait_ready(started)
        real_start = time.monotonic()
        em.admin("PUT", "/emulator/scenario", scenario)
        status = em.admin("GET", "/emulator/scenario")
        night_start_ns = em.admin("GET", "/emulator/clock")["now_ns"] - round(status["time_s"] * 1e9)
        sampler.take()
        sampler.start()
        _go(plan, em, started)
        threading.Thread(target=import_clients, daemon=True).start()
        problems = _wait_for_runs(plan, started)
        real_s = time.monotonic() - real_start
        sampler.stop.set()
        sampler.join(10)
        runs = _runs_of(started, dates)
        jobs = collect_jobs(em, PROJECT)
        played = em.admin("GET", "/emulator/scenario")
        stats = em.admin("GET", "/emulator/stats")
    finally:
        sampler.stop.set()
        preparation.stop()
        _stop_runs(started)
        em.stop()
    report = build_report(
        runs=sorted(runs, key=lambda r: r["logical_date"]),
        jobs=jobs,
        samples=sampler.samples,
        night_start_ns=night_start_ns,
        scenario={
            "file": str(plan.scenario),
            "compression": scenario.get("compression", 1),
            "status": played,
        },
        real_seconds=real_s,
        api={"calls": stats.get("calls") or {}, "injected_faults": stats.get("injected_faults") or {}},
        problems=problems,
        quota_books=(stats.get("gpus") or {}).get("quota") or [],
    )
    write_report(report, plan.workdir)
    return Rehearsal(report, plan.workdir)
