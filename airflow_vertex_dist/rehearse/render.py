"""A rehearsal's report written out: ``report.json`` (``report.build_report``), ``report.txt`` (the
same, as tables) and ``timeline.svg`` (one row per run, one bar per job: light while it was queued,
dark while it ran, coloured by rung, outlined in red when it did not succeed; hours of the night on
the axis), drawn with a Jinja2 template."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["report_text", "timeline_svg", "write_report"]

TEMPLATES = Path(__file__).with_name("templates")
_COLOURS = ("#1565c0", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#4e342e")
_LEFT, _RIGHT, _TOP, _ROW = 190, 20, 40, 24


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [[str(c) for c in header], *([("-" if c is None else str(c)) for c in r] for r in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _hours(seconds: Any) -> str:
    return "-" if seconds is None else f"{float(seconds) / 3600:.2f} h"


def _minutes(seconds: Any) -> str:
    return "-" if seconds is None else f"{float(seconds) / 60:.1f} min"


def _money(totals: Mapping[str, Any]) -> str:
    usd = totals.get("usd")
    if usd is None:
        return "unknown"
    return f"{'at most ' if str(totals.get('usd_basis', '')).startswith('at most') else ''}${usd:,.2f}"


def report_text(report: Mapping[str, Any]) -> str:
    """The report as text: the night, then a table of runs, the rungs tried, the cost by rung and the
    most GPUs asked for and in use at once against the quota."""
    scenario = report["scenario"]
    out = [
        f"Rehearsal of {scenario['file']} (x{scenario['compression']:g}): "
        f"{_hours(report['night_seconds'])} of the night in {report['real_seconds']:.0f} s",
        "",
    ]
    runs = [
        [
            r["logical_date"],
            r["state"],
            r["totals"]["jobs"],
            r["totals"]["gpu_hours"],
            _money(r["totals"]),
            _hours(r["seconds_to_model"]),
        ]
        for r in report["runs"]
    ]
    out += [_table(runs, ["run", "state", "jobs", "GPU-hours", "USD", "to a trained model"]), ""]
    tried = [
        [r["logical_date"], t["task"], t["rung"], t["outcome"], t["reason"]]
        for r in report["runs"]
        for t in r["rungs_tried"]
    ]
    if tried:
        out += ["Rungs tried", _table(tried, ["run", "task", "rung", "outcome", "why"]), ""]
    rungs = [
        [
            r["logical_date"],
            b["rung"],
            b["totals"]["jobs"],
            b["totals"]["gpu_hours"],
            _money(b["totals"]),
            _hours(b["totals"]["queued_seconds"]),
        ]
        for r in report["runs"]
        for b in r["by_rung"]
    ]
    out += ["Cost by rung", _table(rungs, ["run", "rung", "jobs", "GPU-hours", "USD", "queued"]), ""]
    preempted = [
        [r["logical_date"], j["rung"], j["job"].rsplit("/", 1)[-1], j["preemptions"],
         _minutes(j["preempted_seconds"]), j["preemption_basis"]]
        for r in report["runs"]
        for j in r["jobs"]
        if j.get("preemptions")
    ]  # fmt: skip
    if preempted:
        header = ["run", "rung", "job", "preemptions", "run lost", "reckoned from"]
        out += ["Preemptions", _table(preempted, header), ""]
    peaks = [
        [
            p["region"],
            p["accelerator"],
            "preemptible" if p["preemptible"] else "on demand",
            p["gpus"],
            _hours(p["at_s"]),
            p.get("quota_in_use"),
            p["quota"],
        ]
        for p in report["peaks"]
    ]
    out += [
        "Most GPUs at once (asked: the jobs' from Create to end, queued or not; in use: the quota's)",
        _table(peaks, ["region", "accelerator", "quota", "asked", "at", "in use", "of quota"]),
    ]
    totals = report["totals"]
    out += ["", f"In all: {totals['jobs']} jobs, {totals['gpu_hours']} GPU-hours, {_money(totals)}"]
    api = report.get("api") or {}
    if api.get("calls"):
        faults = sum((api.get("injected_faults") or {}).values())
        out.append(f"API: {sum(api['calls'].values())} calls, {faults} of them failed by the scenario")
    return "\n".join(out) + "\n"


def _bar(
    job: Mapping[str, Any], scale: float, colours: dict[str, str], end_s: float
) -> dict[str, Any] | None:
    created = job.get("created_s")
    if created is None:
        return None
    started, ended = job.get("started_s"), job.get("ended_s")
    last = end_s if ended is None else ended
    queue_end = last if started is None else started
    colour = colours.setdefault(str(job.get("rung")), _COLOURS[len(colours) % len(_COLOURS)])
    state = str(job.get("state") or "").removeprefix("JOB_STATE_")
    title = f"{job['task']} on {job.get('rung') or 'its spec'}: {state}, {job['job'].rsplit('/', 1)[-1]}"
    return {
        "x": round(_LEFT + created * scale, 1),
        "queued_w": round(max(0.0, queue_end - created) * scale, 1),
        "run_x": round(_LEFT + queue_end * scale, 1),
        "run_w": round(max(0.0, last - queue_end) * scale, 1),
        "colour": colour,
        "failed": state not in ("SUCCEEDED", "RUNNING"),
        "title": title,
    }


def timeline_svg(report: Mapping[str, Any], width: int = 960) -> str:
    """One row per run, one bar per job, on the hours of the night."""
    import jinja2

    end_s = max(float(report["night_seconds"] or 0.0), 60.0)
    scale = (width - _LEFT - _RIGHT) / end_s
    step = max(1, round(end_s / 3600 / 12)) * 3600 if end_s > 3 * 3600 else 1800
    ticks = [
        {"x": round(_LEFT + t * scale, 1), "label": f"+{t / 3600:g}h"} for t in range(0, int(end_s) + 1, step)
    ]
    colours: dict[str, str] = {}
    rows = []
    for number, run in enumerate(report["runs"]):
        bars = [b for b in (_bar(j, scale, colours, end_s) for j in run["jobs"]) if b is not None]
        rows.append(
            {"y": _TOP + number * _ROW, "label": f"{run['logical_date'][:16]} {run['state']}", "bars": bars}
        )
    legend = [
        {"x": _LEFT + i * 150, "colour": c, "label": name} for i, (name, c) in enumerate(colours.items())
    ]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
    )
    height = _TOP + len(rows) * _ROW + 30
    scenario = Path(str(report["scenario"]["file"])).name
    return env.get_template("timeline.svg.j2").render(
        width=width, height=height, top=_TOP, ticks=ticks, rows=rows, legend=legend, scenario=scenario
    )


def write_report(report: Mapping[str, Any], workdir: Path) -> None:
    """``report.json``, ``report.txt`` and ``timeline.svg`` in ``workdir``."""
    (workdir / "report.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (workdir / "report.txt").write_text(report_text(report))
    (workdir / "timeline.svg").write_text(timeline_svg(report))
