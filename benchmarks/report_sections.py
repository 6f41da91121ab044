"""Sections 1 to 4 of ``docs/benchmarks.md`` (parse cost, waiting, backfill, the emulator), one builder
per section, each returning its lines; what they share is in ``report_common.py``, section 5 in
``logs_report.py`` and section 6 in ``capacity_report.py``."""

from __future__ import annotations

import math

from benchmarks.backfill import BackfillResult
from benchmarks.emulator_bench import STATE_JOBS, EmulatorResult
from benchmarks.parse_cost import ParseVariant
from benchmarks.report_common import Goals, RunInfo, _find, _met, _num, _secs, _table, _x
from benchmarks.stats import percentile, ratio, summarize
from benchmarks.waiting import WaitResult

__all__ = [
    "backfill_section",
    "emulator_section",
    "paired_over_floor_ms",
    "parse_section",
    "waiting_section",
]


def paired_over_floor_ms(variant: ParseVariant | None, floor: ParseVariant | None) -> float:
    """The median paired import wall time of ``variant`` over ``floor`` in ms (NaN if either is
    missing or was not measured)."""
    if not variant or not floor or not variant.import_s or not floor.import_s:
        return math.nan
    return summarize([t * 1000 for t in variant.over_floor_s]).median


def parse_section(parse: list[ParseVariant], goals: Goals) -> list[str]:
    """Section 1, DAG parse cost."""
    lines: list[str] = []
    add = lines.append
    add("## 1. DAG parse cost")
    add("")
    add(
        "A DAG file with a Reduction Server training task (the seed's 1 + 4 × 8 V100 layout, reducers "
        "sized automatically) and a tuning task, imported with `runpy.run_path` in a fresh interpreter "
        "per run; the same DAG written with the provider's `CreateCustomContainerTrainingJobOperator` / "
        "`CreateHyperparameterTuningJobOperator` (which cannot express the reducers: 1 chief + 4 workers); "
        "and the floor, two `@task`s with `airflow.sdk` only, in each venv. Variants are interleaved run "
        "by run after one warm-up round. Import is the `run_path` call (Airflow's import included), as "
        "wall time and as the process's CPU time (which a busy neighbour disturbs less); process wall "
        "adds interpreter start-up."
    )
    add("")
    rows = []
    for v in parse:
        s = v.summary()
        rows.append(
            [
                v.label,
                str(s["import_s"].n),
                summarize([t * 1000 for t in v.import_s]).fmt(0, " ms"),
                summarize([t * 1000 for t in v.cpu_s]).fmt(0, " ms"),
                summarize([t * 1000 for t in v.process_s]).fmt(0, " ms"),
                s["peak_rss_mib"].fmt(1, " MiB"),
                str(v.info.get("modules", "?")),
                str(v.info.get("google_cloud_modules", "?")),
            ]
        )
    lines += _table(
        [
            "DAG file",
            "runs",
            "import wall (median, min–max)",
            "import CPU",
            "process wall",
            "peak RSS",
            "modules",
            "google.cloud.* modules",
        ],
        rows,
    )
    add("")
    ours, floor = _find(parse, key="ours"), _find(parse, key="floor")
    provider, floor_a = _find(parse, key="provider"), _find(parse, key="floor_anchor")
    over = math.nan
    rows = []
    for v, f, label in (
        (ours, floor, "ours"),
        (provider, floor_a, "provider"),
    ):
        if not v or not f or not v.import_s or not f.import_s:
            continue
        paired = summarize([t * 1000 for t in v.over_floor_s])
        paired_cpu = summarize([t * 1000 for t in v.over_floor_cpu_s])
        by_medians = (summarize(v.import_s).median - summarize(f.import_s).median) * 1000
        by_medians_cpu = (summarize(v.cpu_s).median - summarize(f.cpu_s).median) * 1000
        rows.append(
            [
                label,
                paired.fmt(0, " ms"),
                paired_cpu.fmt(0, " ms"),
                f"{by_medians:,.0f} ms",
                f"{by_medians_cpu:,.0f} ms",
            ]
        )
        if v is ours:
            over = paired.median
    if rows:
        add(
            "Cost over the floor, paired: the floor's DAG file and then this one run in one process, the "
            "second timed (Airflow is already imported, so its import noise cancels out). Unpaired: "
            "difference of the separate processes' medians above, for reference (noisy)."
        )
        add("")
        lines += _table(
            ["over the floor", "paired wall", "paired CPU", "unpaired wall", "unpaired CPU"],
            rows,
        )
        add("")
    if not math.isnan(over):
        goal = goals.parse_over_floor_ms
        add(
            f"Goal, ours within {goal:.0f} ms of the floor (paired wall median): {over:,.0f} ms — "
            f"{_met(over <= goal)}."
        )
    calib = [t * 1000 for v in parse for t in v.calib_s]
    if calib:
        add(
            f"The host's speed meanwhile: a fixed pure-Python loop (300,000 additions), timed in each "
            f"paired process right after the import, took {summarize(calib).fmt(1, ' ms')}. On this "
            "shared host the same loop takes about 30 ms while the neighbours are quiet and over 50 ms "
            "while they are busy, and the import times above move with it."
        )
    if provider and ours and provider.import_s and ours.import_s:
        r = ratio(summarize(ours.import_s).median, summarize(provider.import_s).median)
        add(f"Ours / provider import wall time: **{_x(r)}**.")
    add("")
    return lines


def waiting_section(info: RunInfo, waiting: list[WaitResult], goals: Goals) -> list[str]:
    """Section 2, waiting at scale."""
    lines: list[str] = []
    add = lines.append
    add("## 2. Waiting at scale")
    add("")
    add(
        "N CustomJobs RUNNING in the emulator (put in its store directly, as the service would hold "
        "them), each waited on by one trigger, all in one asyncio event loop in a child process (a "
        "triggerer's shape): ours is `VertexJobTrigger` with the shared poller; the anchor is the "
        "provider's `CustomJobTrigger` (its client factory patched to reach the emulator insecurely, "
        "nothing else); both log at WARNING. One more job is waited on from the start (the warm-up), so "
        "N + 1 jobs are polled. API calls are counted at the emulator over "
        f"{info.settings.get('window intervals', 3)} poll intervals once every trigger has polled (our "
        "poller starts its cycles at a fixed rate, as many whole cycles an interval as its budget of "
        "N / 100 + 2 calls per interval holds, at most four: its calls per cycle are shown too; the "
        "provider's triggers have no shared cycle). RSS per "
        "job is the loop process's growth from N/2 to N waiting jobs per added job (in parentheses: from "
        "one warm trigger to N, per job, one-time costs included). Then the N + 1 jobs end within one "
        "interval, each at an offset drawn at random (seeded by N) in an order drawn at random, so "
        "that neither follows the order in which the triggers started and polled, and the delay "
        "from each job's end to its trigger's event is recorded."
    )
    add("")
    rows = []
    for w in waiting:
        if w.error:
            rows.append(
                [w.impl, str(w.jobs), "error: " + w.error.replace("\n", " ")[:160], "", "", "", "", ""]
            )
            continue
        methods = ", ".join(f"{k} {v:g}" for k, v in w.calls_by_method.items()) or "none"
        rows.append(
            [
                w.impl,
                f"{w.jobs:,}",
                f"{_num(w.calls_per_interval)} ({methods})",
                f"{_num(w.calls_per_cycle())} ({w.cycles} cycles)" if w.cycles else "—",
                f"{_num(w.rss_per_job_kib)} ({_num(w.rss_per_job_all_kib)})",
                f"{_num(w.rss_base_mib)} → {_num(w.rss_steady_mib)}",
                _num(w.cpu_per_interval_s * 1000, 0),
                " / ".join(_num(x, 2) for x in (w.delay(50), w.delay(99), max(w.delays_s, default=math.nan))),
                f"{w.jobs + 1 - w.missing - w.non_success:,}/{w.jobs + 1:,}",
            ]
        )
    lines += _table(
        [
            "trigger",
            "jobs waiting",
            "API calls per interval",
            "per poll cycle",
            "RSS per job (KiB)",
            "loop RSS (MiB)",
            "loop CPU per interval (ms)",
            "end → event p50 / p99 / max (s)",
            "success events",
        ],
        rows,
    )
    add("")
    sizes = sorted({w.jobs for w in waiting})
    big = max(sizes) if sizes else 0
    ours_big = _find(waiting, impl="ours", jobs=big)
    if ours_big and not ours_big.error:

        def verdict(ok: bool) -> str:
            return _met(ok) if big >= 1000 else "n/a: fewer jobs in this mode"

        for size in sizes:
            ours_n = _find(waiting, impl="ours", jobs=size)
            theirs_n = _find(waiting, impl="provider", jobs=size)
            if not ours_n or ours_n.error:
                continue
            budget = goals.budget_base + goals.budget_per_job * (size + 1)
            text = (
                f"{size:,} jobs: {ours_n.calls_per_interval:.1f} calls per interval (budget ≤ "
                f"{budget:.2f}: {_met(ours_n.calls_per_interval <= budget + 1e-9)})"
            )
            if theirs_n and not theirs_n.error:
                p50_ok = ours_n.delay(50) <= theirs_n.delay(50)
                p99_ok = ours_n.delay(99) <= theirs_n.delay(99)
                text += (
                    f", end → event p50 {_secs(ours_n.delay(50))} vs {_secs(theirs_n.delay(50))} (goal: no "
                    f"later than the provider's: {_met(p50_ok)}), p99 {_secs(ours_n.delay(99))} vs "
                    f"{_secs(theirs_n.delay(99))} ({_met(p99_ok)})"
                )
            add(text + ".")
            add("")
        add(
            f"At {big:,} jobs: {ours_big.calls_per_interval:.1f} calls per interval (goal ≤ "
            f"{goals.calls_per_interval_at_1000:g} at 1,000 — "
            f"{verdict(ours_big.calls_per_interval <= goals.calls_per_interval_at_1000)}), "
            f"{ours_big.rss_per_job_kib:.1f} KiB per waiting job (goal ≤ {goals.rss_per_job_kib:g} KB at "
            "1,000 — "
            f"{verdict(ours_big.rss_per_job_kib * 1.024 <= goals.rss_per_job_kib)})."
        )
        add("")
    return lines


def backfill_section(backfill: list[BackfillResult], goals: Goals) -> list[str]:
    """Section 3, backfill submission."""
    lines: list[str] = []
    add = lines.append
    add("## 3. Backfill submission")
    add("")
    add(
        "R runs of the seed's Reduction Server training task submitted at once from a thread pool, one "
        "hook per submission (as each task process has its own), then the same R again as every task's "
        "retry; the pair repeated on new runs, the median wall time of the repeats shown. Ours: "
        "`VertexJobsHook.find_or_create` with the run's labels, the first wave with `first_try=True` as "
        "the operators pass it on try 1 of a scheduled, backfill or asset run, the retry wave without it "
        "(the List that finds the job to re-attach to). `ours` is a deferrable operator's submission "
        "(`converge_in_wait=True`): a Create alone, the trigger's share of the shared poller's List "
        "making concurrent tries converge; `ours-worker` an operator that waits in its worker: a Create, "
        "then the List that makes them converge. Anchor: the provider's "
        "`CustomJobHook.create_custom_job`, which its `CreateCustomJobOperator` calls on every try. "
        "The jobs stay QUEUED (no replica processes). Duplicates: jobs beyond one per run."
    )
    add("")
    rows = []
    for b in backfill:
        if b.error:
            rows.append([b.impl, "error: " + b.error.replace("\n", " ")[:160], "", "", "", ""])
            continue
        reps = len(b.wall_s) // 2
        calls = [", ".join(f"{k} {v}" for k, v in sorted(b.calls_of(w).items())) for w in (0, 1)]
        rows.append(
            [
                b.impl,
                f"{b.runs} × 2 × {reps} ({b.threads} threads)",
                " / ".join(f"{b.wall(w):.2f}" for w in (0, 1)),
                " / ".join(_num(b.calls_per_submission(w), 2) for w in (0, 1)),
                " / ".join(calls),
                f"{b.jobs} jobs, **{b.duplicates}** duplicates",
            ]
        )
    lines += _table(
        ["submitter", "submissions", "wall s (first / retry)", "calls per submission", "calls", "result"],
        rows,
    )
    add("")
    theirs = _find(backfill, impl="provider")
    goal = goals.backfill_wall_ratio
    for impl, what in (("ours", "a deferred wait"), ("ours-worker", "a wait in the worker")):
        ours = _find(backfill, impl=impl)
        if ours and theirs and not ours.error and not theirs.error and ours.wall_s and theirs.wall_s:
            ratio = ours.wall(0) / theirs.wall(0)
            add(
                f"First submissions, {what} (`{impl}`): {ratio:.2f}× the provider's wall time"
                + (f" (goal ≤ {goal:g}×: {_met(ratio <= goal)})" if impl == "ours" else "")
                + f", with {ours.duplicates} duplicates against the provider's {theirs.duplicates}."
            )
            add("")
    return lines


def _state_rows(emulator: EmulatorResult) -> list[str]:
    """The emulator's state kept and given back (``Emulator.state``), beside a fresh emulator."""
    labels = {
        "fresh": "start + stop a fresh emulator (a test without the reset)",
        "reset_empty": "reset, nothing to remove (between tests)",
        "reset_one_job": "reset after one ended job, its log and object",
        "snapshot": f"snapshot of {STATE_JOBS} ended jobs, their logs and objects",
        "restore": f"restore of that snapshot ({STATE_JOBS} jobs, logs, objects)",
    }
    rows = [
        [labels.get(key, key), str(len(values)), summarize([t * 1000 for t in values]).fmt(1, " ms")]
        for key, values in emulator.state_s.items()
    ]
    if not rows:
        return []
    return ["", *_table(["state (in process, `Emulator.state`)", "runs", "median (min–max)"], rows)]


def emulator_section(emulator: EmulatorResult | None) -> list[str]:
    """Section 4, the emulator."""
    lines: list[str] = []
    add = lines.append
    add("## 4. The emulator")
    add("")
    if emulator is None:
        add("Not run.")
    else:
        add(
            f"Create (stock `JobServiceClient` over gRPC) → every one of the {emulator.replicas} replicas "
            "RUNNING for the seed's 1 + 4 + 16 layout (trainers are real local processes; the 16 reducers "
            "are idle placeholders), then cancel. Get latency: sequential Gets of one RUNNING job."
        )
        add("")
        rows = [
            ["create → job RUNNING", summarize([t * 1000 for t in emulator.to_job_running_s]).fmt(0, " ms")],
            [
                "create → trainer code running (5 processes)",
                summarize([t * 1000 for t in emulator.to_trainer_code_s]).fmt(0, " ms"),
            ],
            [
                f"create → all {emulator.replicas} replicas RUNNING",
                summarize([t * 1000 for t in emulator.to_all_replicas_running_s]).fmt(0, " ms"),
            ],
            ["cancel → CANCELLED", summarize([t * 1000 for t in emulator.cancel_s]).fmt(0, " ms")],
        ]
        lines += _table([f"launch ({len(emulator.cancel_s)} runs)", "median (min–max)"], rows)
        add("")
        labels = {
            "grpc": "stock client, gRPC",
            "rest": "stock client, REST",
            "hook_ours": "our hook `get_job` (gRPC)",
            "hook_provider": "provider hook `get_custom_job` (gRPC, a client per call)",
        }
        rows = []
        for key, values in emulator.get_latency_s.items():
            rows.append(
                [
                    labels.get(key, key),
                    str(len(values)),
                    f"{percentile(values, 50) * 1000:.2f}",
                    f"{percentile(values, 99) * 1000:.2f}",
                ]
            )
        lines += _table(["Get", "calls", "p50 (ms)", "p99 (ms)"], rows)
        lines += _state_rows(emulator)
        for err in emulator.errors:
            add("")
            add(f"Error: {err}")
    add("")
    return lines
