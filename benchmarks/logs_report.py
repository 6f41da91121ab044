"""Section 5 of ``docs/benchmarks.md``, replica logs in the task log: the rows of
``benchmarks/log_streaming.py`` and the verdicts against the goals."""

from __future__ import annotations

from benchmarks.log_streaming import HEADER as LOG_HEADER
from benchmarks.log_streaming import LogStreamResult
from benchmarks.report_common import Goals, RunInfo, _met

__all__ = ["logs_section"]


def _settle_used() -> float:
    from airflow_vertex_dist.logs.poller import settle_seconds

    return settle_seconds()


def _settle_default() -> float:
    from airflow_vertex_dist.logs.poller import DEFAULT_SETTLE_S

    return DEFAULT_SETTLE_S


def logs_section(info: RunInfo, logs: list[LogStreamResult], goals: Goals) -> list[str]:
    """Section 5, replica logs in the task log."""
    out = ["## 5. Replica logs in the task log", ""]
    if not logs:
        return out + ["Not run.", ""]
    interval = logs[0].interval_s
    load = info.machine
    load_text = (
        f", load average {load['load_start']} → {load['load_end']} on the shared machine"
        if "load_start" in load
        else ""
    )
    out.append(
        f"Measured {info.started}{load_text} (`make bench-logs` runs this section alone; "
        "`python -m benchmarks.log_streaming` prints its rows). N CustomJobs with two replicas each, "
        "whose log files a writer appends to (about "
        "two lines per job and interval), all streaming through one shared log poller "
        "(`logs/poller.py`, the one a triggerer runs) against the emulator's Logging API; "
        "entries.list calls counted at the emulator; the delay is from a line being written to the "
        "poller handing it to its task's trigger (which writes it to the task log), and includes the "
        "settle window a line waits before a read takes it (`[vertex_dist] log_settle_seconds`, "
        f"{_settle_used():g} s in this run; the default is {_settle_default():g} s, see "
        "docs/how-to/training-logs.md). Goals: "
        f"{goals.log_calls_per_interval:g} `entries.list` call per interval per triggerer, p50 at most "
        f"{goals.log_delay_p50_intervals:g} poll intervals."
    )
    out += ["", LOG_HEADER, *(r.row() for r in logs), ""]
    verdicts = []
    for r in logs:
        if r.error:
            continue
        calls_ok = r.calls_per_interval <= goals.log_calls_per_interval
        delay_ok = r.delay_p50_s <= goals.log_delay_p50_intervals * r.interval_s
        verdicts.append(
            f"{r.jobs:,} jobs: {r.calls_per_interval:.2f} calls per interval (goal "
            f"{goals.log_calls_per_interval:g}: {_met(calls_ok)}), p50 {r.delay_p50_s:.2f} s (goal ≤ "
            f"{goals.log_delay_p50_intervals * r.interval_s:g} s: {_met(delay_ok)})"
        )
    if verdicts:
        out += ["; ".join(verdicts) + ".", ""]
    big = max((r for r in logs if not r.error), key=lambda r: r.jobs, default=None)
    if big is not None and big.calls_per_interval > goals.log_calls_per_interval:
        per_interval = big.lines / max(1, big.cycles)
        out += [
            f"Above one call per interval the calls are the pages: with {big.jobs:,} jobs about "
            f"{per_interval:,.0f} new lines a poll cycle (the interval, {interval:g} s, plus the "
            "cycle's own reading time) at 1,000 entries a page, one call each (the budget, "
            "`[vertex_dist] log_reads_per_minute`, paces them).",
            "",
        ]
    return out
