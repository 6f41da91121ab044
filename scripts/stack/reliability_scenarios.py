"""The scenario tables of ``docs/reliability.md``: the crash scenarios on the LocalExecutor stack and the
Celery profile's section, each scenario's outcome in words from its figures."""

from __future__ import annotations

from typing import Any

# scripts/stack/ is on the path: run as a script, or by the tests
from reliability_cells import cell

__all__ = ["CELERY", "CRASHES", "celery_section", "crash_outcome"]

CRASHES = [
    ("triggerer_kill9", "`kill -9` of the triggerer while 3 deferred runs wait, then a new triggerer"),
    (
        "two_triggerers_kill9",
        "two triggerers, each with a `--capacity` below the number of deferred runs, hold them; `kill -9` "
        "of the one holding more",
    ),
    ("task_kill9", "`kill -9` of the task's process right after its job was created (retries=2)"),
    ("mark_failed_stack_deferred", "deferred task marked failed through the REST API"),
    ("mark_failed_stack_sync", "running (non-deferred) task marked failed through the REST API"),
    ("clear_stack_deferred", "deferred task cleared through the REST API"),
    ("clear_stack_sync", "running (non-deferred) task cleared through the REST API"),
    ("emulator_restart", "emulator `kill -9` mid-run and restarted on the same state dir (retries=0)"),
    ("dagrun_timeout", "`dagrun_timeout` reached while the deferred task waits"),
    ("foreign_labelled_job", "a running job with the run's labels but another spec (another deployment)"),
    (
        "planted_job",
        "a running job planted with every label of the task's job, the `airflow-spec` fingerprint of the "
        "spec it submits included, that runs other code",
    ),
    (
        "converged_in_the_trigger",
        "a backfill's deferred first try (its Create alone, no List) beside a live job of the task made "
        "before, as a concurrent try's would be",
    ),
]


def crash_outcome(key: str, fig: dict[str, Any]) -> str:
    if key == "triggerer_kill9":
        return f"{fig['succeeded']}/{fig['runs']} runs succeeded; jobs per run: {cell(fig['jobs'])}"
    if key == "two_triggerers_kill9":
        return (
            f"{fig['succeeded']}/{fig['runs']} runs succeeded"
            + (f" (`--capacity {fig['capacity']}` each)" if "capacity" in fig else "")
            + "; "
            + ", ".join(f"{runs} runs with {jobs} job(s)" for jobs, runs in fig["jobs_per_run"].items())
            + f"; the killed triggerer held {fig['held_by_killed']}, the survivor "
            f"{fig['held_by_survivor']} and took the first over {fig['took_over_s']} s after the kill; "
            f"orphan processes: {fig['orphans']}; {fig['seconds']} s"
            + (
                f"; `on_kill` called {fig['on_kill_calls']} times by a triggerer that lost a trigger it "
                "still ran (its heartbeat late), no job cancelled"
                if fig.get("on_kill_calls")
                else ""
            )
        )
    if key == "task_kill9":
        return f"run {fig['outcome']} after {fig['tries']} tries; {fig['jobs']} job (re-attached)"
    if key == "foreign_labelled_job":
        return (
            f"run {fig['outcome']}; the task's own jobs: {fig['jobs_of_the_task']}; "
            f"the foreign job left {fig['foreign_state']} (not adopted)"
        )
    if key == "planted_job":
        return (
            f"run {fig['outcome']}; the task's own jobs: {fig['jobs_of_the_task']} "
            f"({'same' if fig['same_fingerprint'] else '**another**'} fingerprint as the planted one); "
            f"the planted job left {fig['planted_state']} (not adopted"
            + ("; the task log names the field that differs)" if fig["logged_not_adopting"] else ")")
        )
    if key == "converged_in_the_trigger":
        return (
            f"run {fig['outcome']} in {fig['tries']} try; {fig['jobs_of_the_task']} jobs: the one made "
            f"before {fig['older_state']} (its trigger found it, the task waited on it), the try's own "
            + ", ".join(fig["own_states"])
        )
    if key == "dagrun_timeout":
        return f"run {fig['outcome']}; job {fig['job_state']}; replica processes left: {fig['replicas_left']}"
    if key == "emulator_restart":
        return (
            f"run {fig['outcome']} with the job's error ({fig['job_state']}); {fig['jobs']} job; "
            f"settled {fig['seconds']} s after the kill"
        )
    return f"job {fig['job_state']}; replica processes left: {fig['replicas_left']}"


#: the Celery profile's scenarios (tests/stack/test_celery.py), in the order of its table
CELERY = [
    ("smoke", "a deferred and a worker-slot (non-deferred) training task"),
    (
        "worker_kill9",
        "`kill -9` of the Celery worker (and its task processes) running a non-deferred task, right "
        "after its job was created (retries=2)",
    ),
    ("mark_failed_deferred", "deferred task marked failed through the REST API (two schedulers' listeners)"),
    (
        "triggerer_kill9",
        "two triggerers, each with a `--capacity` below the number of deferred runs, hold them; `kill -9` "
        "of the one holding more",
    ),
    (
        "triggerer_frozen",
        "a triggerer stalled (SIGSTOP) past its health threshold while holding 6 deferred runs, then "
        "resumed: it stops the triggers the other took over, calling their `on_kill`",
    ),
    (
        "scheduler_kill9_backfill",
        "`kill -9` of one of the two schedulers a third into a 30-run backfill (10 at a time, non-deferred) "
        "with 20 % of the JobService calls failing",
    ),
]


def _celery_outcome(key: str, fig: dict[str, Any]) -> str:
    if key == "smoke":
        runs = sorted(fig.items())
        return "; ".join(f"{dag_id}: run {f['outcome']}, {f['jobs']} job" for dag_id, f in runs)
    if key == "worker_kill9":
        return (
            f"run {fig['outcome']} after {fig['tries']} tries (the retry on the other worker); "
            f"{fig['jobs']} job (re-attached); {fig['killed_processes']} processes killed, "
            f"{fig['orphans']} left"
        )
    if key == "mark_failed_deferred":
        return (
            f"job {fig['job_state']}, Cancel calls that reached it: {fig['cancel_calls']}; run {fig['run']}; "
            f"replica processes left: {fig['replicas_left']}"
        )
    if key == "triggerer_kill9":
        return crash_outcome("two_triggerers_kill9", fig)
    if key == "triggerer_frozen":
        return (
            f"{fig['succeeded']}/{fig['runs']} runs succeeded; {fig['jobs']} jobs; `on_kill` called "
            f"{fig['on_kill_calls']} times ({fig['left_running']} trigger logs say it left the job running: "
            f"the task was still deferred); Cancel calls that reached the jobs: {fig['cancel_calls']}"
        )
    if key == "scheduler_kill9_backfill":
        return (
            f"{fig['succeeded']}/{fig['runs']} runs succeeded; {fig['jobs']} jobs, {fig['duplicates']} "
            f"duplicates, {fig['orphans']} orphan processes; {fig['runs_left_at_kill']} runs not ended at "
            f"the kill; {fig['injected_faults']} faults injected; {fig['seconds']} s"
        )
    return cell(fig)


def celery_section(celery: dict[str, Any], updated: str | None) -> list[str]:
    out = [
        "## The Celery profile (real stack)",
        "",
        "The deployment of teams that outgrew one machine: CeleryExecutor with Redis as its broker (the",
        "distribution's `redis-server`, loopback only, nothing persisted) and PostgreSQL as its result",
        "backend, two `airflow celery worker` (4 slots each), two `airflow scheduler`, two `airflow",
        "triggerer`, the dag-processor, the api-server and the emulator, each its own process. The tests",
        "start it in a pytest process of its own (`tests/stack/test_celery.py`, `make stack-celery`),",
        "which `make test` runs beside the LocalExecutor stack's: each stack has its own ports, state",
        "and process marker. A dead scheduler's tasks are adopted by the other after",
        "`orphaned_tasks_check_interval` (10 s here) once its heartbeat is older than",
        "`scheduler_health_check_threshold` (15 s here); Airflow's defaults are 300 s and 30 s.",
        "",
    ]
    if "start_s" in celery:
        out += [
            "- stack start (PostgreSQL, Redis, migration, eight services, DAGs parsed): "
            f"{celery['start_s']} s",
            f"- processes left after teardown: {celery.get('leftover_processes')}",
            f"- figures of {updated or '?'}",
            "",
        ]
    out += ["| scenario | outcome |", "|---|---|"]
    for key, title in CELERY:
        out.append(f"| {title} | {_celery_outcome(key, celery[key]) if key in celery else 'not run'} |")
    return [*out, ""]
