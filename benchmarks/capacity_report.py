"""Section 6 of ``docs/benchmarks.md``, capacity under a stockout, and its row of the ratios table."""

from __future__ import annotations

import math
import statistics
from collections import Counter

from benchmarks.capacity import A100, LOCATION, OTHER_REGION, CapacityResult
from benchmarks.report_common import RunInfo, _find, _secs, _table, _x
from benchmarks.stats import ratio, summarize

__all__ = ["HEADING", "capacity_ratio_rows", "capacity_section"]

HEADING = "## 6. Capacity under a stockout"

_LABELS = {
    "ours": "ours, deferred (`VertexRungTrigger`)",
    "ours-worker": "ours, waiting in the worker",
    "provider": "provider, `CreateCustomJobOperator` (create + wait)",
}


def _times(values: list[float]) -> str:
    """``median (min–max) s`` of the finite values, then how many were never (``inf``); NaN values
    (nothing to measure, like the next rung of a task that has none) are left out."""
    values = [v for v in values if not math.isnan(v)]
    finite = [v for v in values if not math.isinf(v)]
    never = len(values) - len(finite)
    if not finite:
        return "never" if never else "—"
    text = summarize(finite).fmt(2, " s")
    return f"{text}; never in {never} of {len(values)}" if never else text


def _outcome(result: CapacityResult) -> str:
    subs = result.submissions
    done = sum(1 for s in subs if s.state == "success")
    if result.impl == "provider":
        return f"{len(subs) - done} of {len(subs)} tasks failed" + (f", {done} succeeded" if done else "")
    rungs = Counter((s.rung or {}).get("number") for s in subs if s.state == "success")
    where = ", ".join(f"{n} on rung {r}" for r, n in sorted(rungs.items(), key=lambda kv: str(kv[0])))
    return f"{done} of {len(subs)} tasks succeeded" + (f" ({where})" if where else "")


def _calls(result: CapacityResult) -> str:
    n = len(result.submissions)
    totals: Counter[str] = Counter()
    for s in result.submissions:
        totals.update(s.calls)
    methods = ", ".join(f"{k} {v / n:g}" for k, v in sorted(totals.items()))
    return f"{result.calls_per_submission():.1f} ({methods})"


def _settle() -> float:
    from airflow_vertex_dist.logs.poller import settle_seconds

    return settle_seconds()


def _grace() -> float:
    from airflow_vertex_dist.logs.trigger_stream import FINAL_LINES_GRACE_S

    return FINAL_LINES_GRACE_S


def capacity_section(info: RunInfo, results: list[CapacityResult]) -> list[str]:
    """Section 6: every side's submissions under the same stockout."""
    out = [HEADING, ""]
    if not results:
        return out + ["Not run.", ""]
    first = results[0]
    out.append(
        f"Measured {info.started}. The emulator's capacity model (`vertex_emulator.Capacity`) with no free "
        f"{A100} in {LOCATION} (`stock`: 0): a job asking for one waits PENDING and, "
        f"{first.stockout_after_s:g} s later (`stockout_after_s`, the emulator's setting: how long the "
        "real service's restart attempts take is not documented), fails with Vertex AI's stockout error "
        f'("Resources are insufficient in region: {LOCATION}. ..."); every other region and accelerator '
        "is unlimited. The job: one replica, `a2-highgpu-1g` with 1 A100, whose code prints a line and "
        "exits (its run time is not the point). **Ours**: `VertexTrainingOperator` with a two-rung "
        f"`CapacityLadder`, the job as it is, then `g2-standard-8` with 1 L4 in {OTHER_REGION}, run whole "
        "by `dag.test()` (a migrated SQLite metadata DB; the Task SDK's in-process supervisor gives the "
        "task a real context and XCom, and runs a deferred task's trigger inline until its first event, "
        "as a triggerer would, then resumes the task). The operator itself rather than its hooks, because "
        "what is measured is the walk: plan the rungs, look for the task's jobs in every rung's region, "
        "create, wait, classify the failure (`classify_job`, in the trigger and in the resumed task), "
        "end the rung's job, create the next. Twice: deferred (as `dags/capacity_ladder.py`), and "
        "waiting in the worker (both operators' default: `[operators] default_deferrable` is False). "
        "**Provider**: what its `CreateCustomJobOperator.execute` does when not deferrable, "
        "`CustomJobHook.create_custom_job` then `CustomJobHook.wait_for_custom_job` (the provider has no "
        "ladder: its operator submits the first rung's job). Both poll every "
        f"{first.interval_s:g} s (both operators default to 10 s); our wait also streams the job's "
        f"log lines and, once a job that ran ended, waits out their settle window ({_settle():g} s here) "
        "to read the last ones before the wait ends (the deferred wait also gives the lines it wrote "
        f"{_grace():g} s to reach the task log before its event); a job that never ran (the stocked-out "
        "one: no `startTime`) has no line to wait for, so the ladder moves on at once. "
        "`dag.test()` resumes a deferred task at once, where a deployment's scheduler and executor add "
        "their own delay to each resumption (one per rung left, one at the end): not measured here. "
        "The clock starts when the task starts (ours: `execute` entered; the provider: its Create "
        "called); the first replica RUNNING is the `startTime` of the first job that started (the "
        "emulator sets it once the job's replica processes started). "
        f"{first.runs} submissions per side, interleaved side by side, after one untimed warm-up each; "
        "API calls counted by the emulator while each submission ran."
    )
    out.append("")
    rows = []
    for r in results:
        label = _LABELS.get(r.impl, r.impl)
        if r.error:
            rows.append([label, "error: " + r.error.replace("\n", " ")[:160], "", "", "", "", "", ""])
            continue
        subs = r.submissions
        paths = Counter(s.path() for s in subs)
        tried = "; ".join(f"{p} ({n} of {len(subs)})" for p, n in paths.most_common())
        rows.append(
            [
                label,
                str(len(subs)),
                _times([s.to_running_s for s in subs]),
                _times([s.to_end_s for s in subs]),
                _times([s.stockout_to_next_create_s for s in subs]),
                tried or "—",
                _calls(r) if subs else "—",
                _outcome(r),
            ]
        )
    out += _table(
        [
            "submitter",
            "submissions",
            "task start → first replica RUNNING (median, min–max)",
            "task start → task end",
            "stockout (job FAILED) → next rung's Create",
            "rungs tried (jobs created, in order)",
            "API calls per submission",
            "outcome",
        ],
        rows,
    )
    out.append("")
    provider = _find(results, impl="provider")
    if provider and not provider.error and provider.submissions:
        texts = Counter((s.error or "no error").replace("\n", " ")[:200] for s in provider.submissions)
        said = "; ".join(f"`{t}` ({n} of {len(provider.submissions)})" for t, n in texts.most_common())
        out += [
            f"The provider's task ended with {said}: the job's own `error.message`, raised by "
            "`wait_for_custom_job`. A retry of that task creates the same job in the same region again.",
            "",
        ]
    ours = [r for r in results if r.impl != "provider" and not r.error and r.submissions]
    if ours:
        parts = []
        for r in ours:
            ran = [s for s in r.submissions if not math.isinf(s.to_running_s)]
            parts.append(
                f"{_LABELS.get(r.impl, r.impl)}: a replica RUNNING in {len(ran)} of {len(r.submissions)} "
                f"submissions, {_times([s.create_to_running_s for s in r.submissions])} from the Create of "
                "the job that ran to its `startTime`"
            )
        out += [
            "; ".join(parts) + ". The emulator starts a replica as a local process, where Vertex AI "
            "provisions VMs and pulls the image (minutes): these times are the ladder's own cost over "
            "the stockout, not a forecast of the wall time on Vertex AI.",
            "",
        ]
    return out


def capacity_ratio_rows(results: list[CapacityResult]) -> list[list[str]]:
    """The ratios table's row: no ratio (the provider never runs), the times side by side."""
    provider = _find(results, impl="provider")
    ours = [r for r in results if r.impl != "provider" and not r.error and r.submissions]
    if not provider or provider.error or not provider.submissions or not ours:
        return []
    theirs = statistics.median(s.to_end_s for s in provider.submissions)
    ran = " / ".join(
        f"{_secs(statistics.median(r.to_running()))} ({'deferred' if r.deferrable else 'in the worker'})"
        for r in ours
    )
    median = statistics.median(provider.to_running())
    return [
        [
            "time to first RUNNING under a stockout (median)",
            _x(ratio(statistics.median(ours[0].to_running()), median)),
            f"{ran} vs {_secs(median)} (the provider's task ended after {theirs:.2f} s)",
        ]
    ]
