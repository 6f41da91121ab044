"""The sections of ``docs/reliability.md`` on long runs of a real stack: the backfills on a capacity ladder
and on a persistent resource deleted mid-run, and the replica logs in the task log (a triggerer
restarted mid-stream included)."""

from __future__ import annotations

from typing import Any

__all__ = ["TRAINING_LOGS", "capacity_section", "persistent_section", "training_logs_section"]

TRAINING_LOGS = [
    ("stack_logs_deferred", "deferred (lines from the triggerer)"),
    ("stack_logs_sync", "waiting in the worker slot"),
]


def capacity_section(result: dict[str, Any] | None) -> list[str]:
    """The capacity ladder's backfill (tests/stack/test_capacity.py)."""
    out = ["## Backfill on a capacity ladder, within a GPU quota (real stack)", ""]
    if not result:
        return [*out, "not run", ""]
    peaks = ", ".join(f"{key} {value}" for key, value in sorted(result["peak_gpus_in_use"].items()))
    return [
        *out,
        f"A {result['runs']}-run backfill of a deferred task on a two-rung ladder (2 A100 in us-central1,",
        "then 2 L4 in us-east1), with no A100 free in us-central1 (each rung-1 job fails with the region's",
        f"stockout), a quota of {result['quota_gpus']} GPUs per region (a Create over it refused), and",
        f"`gpu_pool=` on an Airflow pool of {result['quota_gpus']} slots counting deferred tasks:",
        "",
        "| runs | succeeded | retried by Airflow | jobs | duplicates | live jobs left | rung changes logged "
        "| "
        "most GPUs asked at once | peak GPUs in use (emulator) | s |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {result['runs']} | {result['succeeded']} | {result.get('runs_retried_by_airflow', '?')} | "
        f"{result['jobs']} | {result['duplicates']} | "
        f"{result['live_jobs_left']} | {result['rung_changes_logged']} | "
        f"{result['most_gpus_asked_at_once']} | "
        f"{peaks} | {result['seconds']} |",
        "",
        'A run retried by Airflow is one whose resumed deferral the scheduler refused (its log: "finished',
        "with state success, but the task instance's state attribute is queued\"; seen when the trigger",
        "fired right after the deferral); the retry resumes the ladder at the rung it had reached.",
        "Peak GPUs in use counts a job waiting PENDING for free GPUs against its quota too.",
        "",
    ]


def persistent_section(result: dict[str, Any] | None) -> list[str]:
    """The backfill on a persistent resource deleted mid-run (tests/stack/test_persistent.py)."""
    out = ["## Backfill on a persistent resource deleted mid-run (real stack)", ""]
    if not result:
        return [*out, "not run", ""]
    return [
        *out,
        f"A {result['runs']}-run backfill of a deferred task on a two-rung ladder: a persistent resource",
        f"made through the emulator's v1 API with room for {result['room']} of the runs' jobs at once (a job",
        "finding it full waits QUEUED; past the rung's 10 s `pending_limit` it leaves), then the same",
        "machine on demand. Each job trains until the test releases it. Once the resource's jobs run and",
        "the other runs have left it for rung 2, two of the resource's jobs are released (they train on",
        "it), then the resource is deleted through the API while the third runs: the service cancels that",
        'job, the ladder finds the resource gone, classes it "resource lost" and moves its run to rung 2.',
        "From the jobs' times and rungs:",
        "",
        "| runs | succeeded | jobs | trained on the resource | trained on demand | jobs running at the "
        "delete | jobs cancelled by the delete | runs moved on while the resource had room | most live jobs "
        "of a run | live jobs left | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {result['runs']} | {result['succeeded']} | {result['jobs']} | {result['trained_on_resource']} | "
        f"{result['trained_on_demand']} | {result['running_at_delete']} | {result['jobs_lost_to_delete']} | "
        f"{result['left_with_room']} | {result['most_live_jobs_per_run']} | {result['live_jobs_left']} | "
        f"{result['seconds']} |",
        "",
        "A run moved on while the resource had room is one whose rung-2 job was made before the delete",
        f"though fewer than {result['room']} jobs ran on the resource when its rung-1 job was given up.",
        'Google\'s page "Delete a persistent resource" says the service cancels the jobs on a resource',
        "being deleted, and the emulator does: a cancelled job whose resource is gone (or STOPPING) lost",
        "its rung's capacity, while one whose resource is still there was cancelled by someone and fails",
        "the task.",
        "",
    ]


def training_logs_section(figs: dict[str, Any], when: str | None) -> list[str]:
    """The replica-logs scenarios (tests/stack/test_training_logs.py)."""
    out = [
        "## Replica logs in the task log (real stack)",
        "",
        "A primary and two workers print numbered lines; `workerpool1-1` then prints a distinctive line",
        'and exits 3, failing the job (`stream_logs="all"`, no retry). The task\'s log is read through the',
        "API server's log route, as the UI shows it" + (f" (figures of {when})." if when else "."),
        "",
        "| wait | run | replica lines in the task log exactly once | failure names the replica | "
        "failure gives its last lines (quoted, or pointed to when the stream wrote them) |",
        "|---|---|---|---|---|",
    ]
    for key, title in TRAINING_LOGS:
        f = figs.get(key)
        if not f:
            out.append(f"| {title} | not run | | | |")
            continue
        out.append(
            f"| {title} | {f['outcome']} | {f['lines_once']}/{f['expected_lines']} | "
            f"{'yes' if f['names_replica'] else '**no**'} | "
            f"{'yes' if f.get('last_lines_given', f.get('quotes_last_lines')) else '**no**'} |"
        )
    restart = figs.get("triggerer_restart")
    out.append("")
    if restart:
        out.append(
            "A deferred task's primary prints "
            f"{restart['ticks']} numbered lines with a pause halfway; in the pause, once the first half is "
            "in the task log and the cursor of its last line saved, the triggerer is stopped (SIGTERM) "
            "and a new one started: "
            f"{restart['repeated']} lines repeated, {restart['dropped']} dropped"
            + (
                "; the new triggerer resumed from the cursor saved in the task's XCom."
                if restart.get("resumed")
                else "."
            )
        )
    else:
        out.append("Triggerer restarted mid-stream: not run.")
    return [*out, ""]
