"""Write ``docs/reliability.md`` from the figures of the latest reliability run.

The stack, fault-matrix and security tests record their numbers in ``scripts/stack/figures.json``
(see ``tests/stack/figures.py``); this script turns them into the page. Usage::

    python scripts/stack/write_reliability.py [--figures FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "render"]

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "scripts" / "stack" / "figures.json"
OUT = ROOT / "docs" / "reliability.md"

CRASHES = [
    ("triggerer_kill9", "`kill -9` of the triggerer while 3 deferred runs wait, then a new triggerer"),
    (
        "two_triggerers_kill9",
        "two triggerers (`--capacity 15` each) hold 20 deferred runs; `kill -9` of the one holding more",
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


#: the emulator's security probes (tests/security/test_emulator_*.py), in the order of the table.
PROBES = [
    ("cross_site_post", "a web page posts a job (CORS simple request)"),
    ("non_json_post", "a write that is not JSON"),
    ("dns_rebinding", "DNS rebinding (a foreign Host name)"),
    ("non_loopback_without_token", "a non-loopback address without a token"),
    ("rest_without_token", "REST call without the token"),
    ("grpc_without_token", "gRPC call without the token"),
    ("another_account_jobs", "another local account: the JobService"),
    ("another_account_logging", "another local account: Cloud Logging"),
    ("another_account_storage", "another local account: Cloud Storage"),
    ("another_account_pages", "another local account: the pages"),
    ("storage_token", "Cloud Storage of an emulator with an access token"),
    ("another_account_for_real", "another local account, for real (`nobody`, when the tests run as root)"),
    ("wildcard_filter", "many wildcards in a List filter"),
    ("deep_filter_rest", "deep filter (REST)"),
    ("deep_filter_grpc", "deep filter (gRPC)"),
    ("huge_body", "huge body (REST)"),
    ("huge_grpc_message", "huge message (gRPC)"),
    ("deep_json_array", "deep JSON arrays"),
    ("deep_json_object", "deep JSON objects"),
    ("deep_proto", "deep proto message"),
    ("parallel_creates", "a burst of Creates"),
    ("output_dir_escape", "output directory out of --gcs-root"),
    ("package_uri_escape", "package URI out of --gcs-root"),
    ("symlink_escape", "a symlink out of --gcs-root"),
    ("setup_py_environment", "a package's setup.py reads its environment"),
    ("setup_py_daemon", "a package's setup.py leaves a daemon"),
    ("escaped_quotes_body", "a body of escaped quotes (JSON depth guard)"),
    ("fraction_digits_filter", "a create time of 400,000 fraction digits in a filter"),
    ("or_terms_filter", "a filter of many OR terms"),
    ("log_filter_terms", "a Cloud Logging filter of many OR terms"),
    ("deep_page_token", "a deeply nested page token"),
    ("nan_faults", "NaN in /emulator/faults"),
    ("chunked_smuggling", "a chunked body smuggling a Create"),
    ("replica_ceiling_create", "a Create of 2,147,483,648 replicas"),
    ("replica_ceiling_env", "the replica environment of the largest job allowed"),
    ("replica_ceiling_get", "the Get of the largest job allowed"),
    ("idle_sockets_rest", "1,100 idle sockets (REST)"),
    ("idle_sockets_storage", "1,100 idle sockets (Cloud Storage)"),
    ("idle_sockets_grpc", "1,100 idle sockets and half-open HTTP/2 connections (gRPC)"),
    ("trickle_rest", "a request trickling its headers (REST)"),
    ("trickle_storage", "a request trickling its headers (Cloud Storage)"),
    ("symlink_listing", "a symlink to an outside file in a bucket"),
    ("fifo_listing", "a FIFO in a bucket"),
    ("metadata_rehash", "repeated metadata GETs of a large object"),
    ("long_name", "an object name part over 255 bytes"),
    ("newline_name", "an object name with a line feed"),
    ("huge_range", "a Range of 5,000 digits"),
    ("deep_storage_resource", "a Cloud Storage resource of 100,000 nested brackets"),
    ("nested_log_line", "log lines nested 100,000 deep, huge or planted (entries.list)"),
]


def _probe_rows(probes: dict[str, Any]) -> list[str]:
    rows = []
    for key, title in PROBES:
        probe = probes.get(key)
        given, answer = (probe.get("input", "–"), probe.get("answer", "–")) if probe else ("–", "not run")
        rows.append(f"| {title} | {_escape(given)} | {_escape(answer)} |")
    return rows


def _escape(text: Any) -> str:
    """A table cell showing ``text`` as written: Markdown's special characters escaped, one line."""
    out = str(text).replace("\n", " ")
    for char in "\\`*_[]<>|":
        out = out.replace(char, "\\" + char)
    return out


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return "–" if value is None else str(value)


def _crash_outcome(key: str, fig: dict[str, Any]) -> str:
    if key == "triggerer_kill9":
        return f"{fig['succeeded']}/{fig['runs']} runs succeeded; jobs per run: {_cell(fig['jobs'])}"
    if key == "two_triggerers_kill9":
        return (
            f"{fig['succeeded']}/{fig['runs']} runs succeeded; "
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


def render(figures: dict[str, Any]) -> str:
    updated = figures.get("_updated", {})
    out = [
        "# Reliability",
        "",
        "<!-- generated by scripts/stack/write_reliability.py from scripts/stack/figures.json; "
        "do not edit by hand -->",
        "",
        "What the provider promises under failure, and the figures of the latest run of the reliability",
        "suite (`make test-stack`, part of `make test`; tests marked `stack`). Every figure below is",
        "measured, none is typed in.",
        "",
        "## The stack",
        "",
        "The crash scenarios and the backfill run against a real Airflow stack started by the tests:",
        "PostgreSQL (the distribution's package, a private data dir, loopback only) as the metadata DB,",
        "`airflow scheduler` with the LocalExecutor, `airflow triggerer`, `airflow dag-processor` and",
        "`airflow api-server` as separate processes, and the emulator as its own process. DAG runs are",
        "triggered and awaited through Airflow's REST API (`/api/v2`). At teardown no process of the stack",
        "(services, task processes, replicas) may be left: they all carry a marker in their environment",
        "and `/proc` is scanned for it.",
        "",
    ]
    stack = figures.get("stack", {})
    if stack:
        out += [
            f"- stack start (PostgreSQL, migration, four services, DAGs parsed): {stack.get('start_s')} s",
            f"- processes left after teardown: {stack.get('leftover_processes')}",
            f"- figures of {updated.get('stack', '?')}",
            "",
        ]
    crashes = figures.get("crashes", {})
    out += ["## Crash scenarios (real stack)", "", "| scenario | outcome |", "|---|---|"]
    for key, title in CRASHES:
        out.append(f"| {title} | {_crash_outcome(key, crashes[key]) if key in crashes else 'not run'} |")
    out += [
        "",
        "The two-triggerer scenario replaces the stack's triggerer by two for its duration (each with",
        "`--capacity 15`, so that both hold some of the 20 triggers: with the default capacity the first",
        "triggerer to look takes every unassigned trigger). Its jobs wait for a release file, so none ends",
        "before the survivor has taken over; the run's other triggers move as the survivor's own finish.",
        "",
        "The emulator keeps its jobs in SQLite; a job that was running when the emulator died comes back",
        "FAILED with an error saying the emulator restarted (its leftover replica processes are killed),",
        "and the task fails with that message: no silent success, no second job.",
        "",
    ]
    matrix = figures.get("fault_matrix", {})
    out += [
        "## Fault matrix (in-process)",
        "",
        "Run with the operators' `dag.test()` harness (SQLite metadata DB, the real task runner, the",
        "trigger run inline as the triggerer would) against an in-process emulator with real replica",
        "processes, to keep the suite inside CI's budget. Each cell runs one deferred and one",
        "non-deferred training task (no Airflow retry), with the given share of the hook's JobService",
        "calls (Create, Get, List, Cancel) failing with the given code.",
        "",
        "| cell | runs | succeeded | failed (right message) | jobs | duplicates | orphans | "
        "faults injected | s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(matrix, key=_matrix_order):
        f = matrix[key]
        failed = f.get("failed", 0)
        right = f.get("failed_with_message", 0 if failed == 0 else "?")
        out.append(
            f"| {key} | {f['runs']} | {f['succeeded']} | {failed} ({right}) | {f['jobs']} | "
            f"{f['duplicates']} | {f['orphans']} | {f['injected_faults']} | {f['seconds']} |"
        )
    out += [
        "",
        "A crashed worker without `restart_job_on_worker_restart` fails the job with the replica's exit",
        "code and log tail, and the task with that message; with it, the emulator restarts the job and",
        "the task succeeds. Transient codes never fail a task nor make a second job: the hook retries",
        "them with backoff, and a Create whose answer was lost is found again by its labels.",
        "",
    ]
    out += _celery_section(figures.get("celery", {}), updated.get("celery"))
    backfill = figures.get("backfill", {}).get("result")
    out += ["## Backfill under crashes (real stack)", ""]
    if backfill:
        out += [
            f"A {backfill['runs']}-run backfill (`POST /api/v2/backfills`, 10 runs at a time, non-deferred",
            "tasks, 4 retries) with 30 % of the hook's JobService calls failing (UNAVAILABLE,",
            "RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, INTERNAL) and random `kill -9` of running task",
            "processes (at most two per task instance over all its tries, 20 in all):",
            "",
            "| runs | jobs | succeeded | failed (with cause) | duplicates | orphan replicas | task kills | "
            "faults injected | s |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {backfill['runs']} | {backfill['jobs']} | {backfill['succeeded']} | {backfill['failed']} "
            f"({backfill['failed_with_cause']}) | {backfill['duplicates']} | {backfill['orphan_replicas']} | "
            f"{backfill['task_kills']} | {backfill['injected_faults']} | {backfill['seconds']} |",
            "",
        ]
    else:
        out += ["not run", ""]
    out += _capacity(figures.get("capacity", {}).get("result"))
    out += _training_logs(figures.get("training_logs", {}), updated.get("training_logs"))
    security = figures.get("security", {})
    out += [
        "## Security",
        "",
        "- A canary secret is put in the connection's key JSON (`keyfile_dict`) and, through a Variable",
        "  whose name marks it sensitive, in a job's env under a sensitive name (`TRAINING_API_TOKEN`).",
        '  "Never appears" means: the job body sent to the JobService carries the env value (Vertex needs',
        "  it, and the emulator's store has it as Vertex's would), but nothing Airflow shows or stores about",
        "  the task does, and neither does the emulator's own log. Airflow's secrets masker redacts it from",
        "  the task log and the rendered template fields because the names are sensitive: a DAG author who",
        "  puts a secret in env should take it from a Variable or Connection, under a sensitive name.",
        f"  Places checked: {_cell(security.get('canary_places_checked', []))}; "
        f"leaks found: {len(security.get('canary_leaks', [])) if 'canary_leaks' in security else 'not run'}.",
        "- The emulator listens on 127.0.0.1 only (checked from `/proc/net/tcp*` for the CLI's process) and",
        "  makes its state dir private (0700), even one that existed with looser modes.",
        "- No subprocess call in the package takes a shell string: an AST scan finds no `shell=True`, no",
        "  `os.system`/`os.popen`, no `getoutput`, no `create_subprocess_shell` and no string command.",
        "- Credentials are never serialized into trigger kwargs: no trigger's constructor takes one, and the",
        "  triggers the operators and sensors defer with (after their hook loaded a key JSON) carry only the",
        "  connection id. On the stack, the trigger rows in the metadata DB are checked as well.",
        "",
        "### The emulator as a security boundary",
        "",
        "The emulator runs the commands its jobs name. Each probe below sends its input to a real emulator",
        "(`tests/security/test_emulator_*.py`, part of the normal test suite) and records the answer:",
        "cross-site and rebinding requests, calls without the access token or from another local account,",
        "requests built to cost the emulator time, memory or stack, URIs built to reach outside",
        "`--gcs-root`, and package installs that reach for the emulator's environment or outlive pip"
        + (f" (figures of {updated['security_probes']})." if "security_probes" in updated else "."),
        "",
        "| probe | input | answer |",
        "|---|---|---|",
        *_probe_rows(figures.get("security_probes", {})),
        "",
        "## Bad input",
        "",
        "- Specs as an operator receives them (a rendered JSON/YAML document, possibly damaged, possibly",
        "  anything) validate to the same model as their dict or raise `SpecError` naming the field path.",
        "- The emulator's REST API answers malformed JSON, wrong types, unknown fields, a 32 MiB body, names",
        "  outside `projects/*/locations/*` and path tricks with a 4xx in Google's error shape, keeps",
        "  serving, and its store shows exactly the jobs the accepted Creates returned.",
        "",
        "## Found by the fuzzers, fixed (their tests now pass as plain tests)",
        "",
        "- `coerce_spec` parsed JSON documents with the YAML parser: an escaped emoji became lone",
        "  surrogates and a raw DEL was refused; a very deep document raised RecursionError, not",
        "  SpecError. JSON-looking documents now parse as JSON, and deep nesting is a SpecError.",
        "- The emulator's REST server read `Content-Length` bytes with no upper bound: a huge",
        "  Content-Length was answered 500 (MemoryError). Bodies over 10 MiB are now refused with a",
        "  413 before reading.",
        "",
        "## Found by the stack suite, fixed",
        "",
        "- A deferred task marked failed or cleared right after it deferred kept its job running.",
        "  Airflow's triggerer calls a trigger's `on_kill` only for a trigger it has started, and it",
        "  starts new triggers on its next loop: a user's action in that second or two deletes the",
        '  trigger unstarted (the triggerer\'s log then says "0 triggers currently running" while',
        "  the job runs on; an earlier run of this report took that for a slow triggerer). Fixed",
        "  three ways, each tested in-process and on this stack: the package registers a listener",
        "  plugin that cancels the job a try owns when the REST API sets its state by hand; a",
        "  cleared task's fresh try cancels the job its earlier try left running before it starts its",
        "  own; and a try that finds its task instance no longer running just after it started its",
        "  job (a mark that came before the listener could know the job) cancels that job.",
        "  The stack suite is part of `make test` (and so of CI).",
        "- A deferred task's last replica lines could be missing from its log: the triggerer closes a",
        "  trigger's log file when it learns the trigger finished, and lines still in its log channel",
        "  then go to the triggerer's own log (31 of 80 lines of a final batch, after a triggerer",
        "  restart). The log stream now lets lines written at the end of a wait have a second before",
        "  the trigger fires its event.",
        "- After a triggerer restart on the loaded machine, reading a stream's saved cursor took over",
        "  30 s (the new triggerer answers its triggers' XCom reads through one supervisor) and timed",
        "  out, so the stream started over and repeated 6 lines. The read now runs beside the job wait",
        "  (which never waits for it) with a 120 s bound, and the stream starts once it is read.",
        "- With two triggerers, a deferred task's job could be cancelled while the task still waited",
        "  on it, and the retry then made a second job (22 jobs for 20 runs in an earlier Celery run).",
        "  Airflow's triggerer stops a trigger that is no longer assigned to it with the same \"user",
        "  action\" cancel as a user's mark or clear, and so calls its `on_kill`, also when another",
        "  triggerer took the trigger over because this one's heartbeat was late (a busy or stalled",
        "  triggerer). `on_kill` now reads the task instance's state through the triggerer's Task SDK",
        "  channel and cancels only a task that is no longer deferred; the frozen-triggerer scenario",
        "  of the Celery profile reproduces the takeover on purpose.",
        "- A backfill task on the capacity ladder lost its try while resuming: its rung's job stocked out",
        "  2.5 s after the task deferred, and on a loaded machine Airflow's scheduler read the",
        "  executor's \"success\" report of the process that had deferred only after the resumed try",
        "  was queued, took it for that try's end and marked it up for retry (\"killed externally\";",
        "  apache/airflow#72716 and #67287, open for a queued or running try up to 3.3.2, and 3.1",
        "  guards no state). The try's process went on until its next heartbeat and submitted the",
        "  next rung's job while its pool slot was already another task's: 10 GPUs asked against a",
        "  pool of 8. A trigger in a triggerer now hands its task the event no sooner than 10 s after",
        "  the deferral (`RESUME_HOLD_S` in `triggers/base.py`); a job that runs longer than that is",
        "  not delayed, and `dag.test()` never holds.",
        "",
    ]
    return "\n".join(out)


TRAINING_LOGS = [
    ("stack_logs_deferred", "deferred (lines from the triggerer)"),
    ("stack_logs_sync", "waiting in the worker slot"),
]


def _capacity(result: dict[str, Any] | None) -> list[str]:
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


def _training_logs(figs: dict[str, Any], when: str | None) -> list[str]:
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
        "two triggerers (`--capacity 15` each) hold 20 deferred runs; `kill -9` of the one holding more",
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
        return _crash_outcome("two_triggerers_kill9", fig)
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
    return _cell(fig)


def _celery_section(celery: dict[str, Any], updated: str | None) -> list[str]:
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


def _matrix_order(key: str) -> tuple[int, str, int]:
    name, _, rate = key.rpartition(" ")
    if rate.endswith("%") and rate[:-1].isdigit():
        return (0, name, int(rate[:-1]))
    return (1, key, 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--figures", type=Path, default=FIGURES)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    try:
        figures = json.loads(args.figures.read_text())
    except (OSError, ValueError) as exc:
        print(f"cannot read figures from {args.figures}: {exc}", file=sys.stderr)
        return 1
    args.out.write_text(render(figures))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
