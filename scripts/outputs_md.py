"""Write the XCom value tables into docs/how-to/outputs.md, between its two markers, from the
``TypedDict``s the operators and sensors return (``airflow_vertex_dist.jobs.output_types`` and the
trial types of ``airflow_vertex_dist.jobs.trials``), so the page cannot drift from the
types mypy checks. ``tests/test_reference_tables.py`` fails when the committed tables differ from what
this writes.

Run from the checkout's root: ``python scripts/outputs_md.py``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, Literal, get_args

from marked_page import replace_marked  # scripts/ is on the path: run as a script, or by the tests

PAGE = Path(__file__).resolve().parents[1] / "docs" / "how-to" / "outputs.md"
START = "<!-- xcom-types:start (written by scripts/outputs_md.py) -->"
END = "<!-- xcom-types:end -->"

OUTPUTS = "airflow_vertex_dist.jobs.output_types"
TRIALS = "airflow_vertex_dist.jobs.trials"
#: (module, TypedDict, what it is, the TypedDict whose keys it extends or ""), in reading order
TYPES = (
    (OUTPUTS, "JobLink", "The value under `vertex_job`, pushed as soon as the job is known.", ""),
    (
        OUTPUTS,
        "JobOutput",
        "The return value of `VertexTrainingOperator`, `VertexCancelJobOperator` and the job and replica "
        "sensors.",
        "",
    ),
    (OUTPUTS, "JobErrorOutput", "`error` of a job output: set for a failed or cancelled job.", ""),
    (
        OUTPUTS,
        "RungOutput",
        "`rung` of a job output: set by a task with a capacity ladder (docs/how-to/capacity.md).",
        "",
    ),
    (OUTPUTS, "LadderStep", "One of `rung.left`: a rung the task left before the one that ran.", ""),
    (OUTPUTS, "CostOutput", "`cost` of a training or tuning task's output: the job's estimated cost.", ""),
    (
        OUTPUTS,
        "TaskLedger",
        "`ledger` of a training or tuning task's output: the cost ledger of every job the task created "
        "(docs/how-to/cost.md).",
        "",
    ),
    (OUTPUTS, "LedgerEntry", "One of `ledger.jobs`: a job's GPU-hours, dollars and times.", ""),
    (OUTPUTS, "RungLedger", "One of `ledger.by_rung`: a rung's totals.", ""),
    (OUTPUTS, "LedgerTotals", "`ledger.totals`, and `totals` of each of `ledger.by_rung`.", ""),
    (
        OUTPUTS,
        "TuningOutput",
        "The return value of `VertexTuningOperator` and `VertexTrialSensor`: every key of `JobOutput`, and:",
        "JobOutput",
    ),
    (TRIALS, "TrialCounts", "`trial_counts` of a tuning output.", ""),
    (TRIALS, "BestTrial", "`best_trial` of a tuning output (`None` until a trial succeeded).", ""),
    (TRIALS, "TrialRow", "One of `trials` of a tuning output.", ""),
    (
        "airflow_vertex_dist.links",
        "OwnerRecord",
        "The value under `vertex_job_owner`, pushed by a training or tuning task that waits with "
        "`cancel_on_kill`: what the provider's listener cancels when the task is marked by hand, once the "
        "job's labels confirm it is the task instance's, with the task's own connection.",
        "",
    ),
)


def _type(annotation: Any, module: str) -> str:
    """The annotation as written (``str | None`` reads ``str or None``); a ``Literal`` alias of the
    module is spelled out."""
    text = str(getattr(annotation, "__forward_arg__", None) or getattr(annotation, "__name__", annotation))
    alias = getattr(importlib.import_module(module), text, None) if text.isidentifier() else None
    if getattr(alias, "__origin__", None) is Literal:
        text = " | ".join(repr(arg) for arg in get_args(alias))
    return text.replace(" | ", " or ")


def _cls(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


def render() -> str:
    parts = [START, ""]
    for module, name, what, extends in TYPES:
        cls = _cls(module, name)
        inherited = set(_cls(module, extends).__annotations__) if extends else set()
        parts += [f"### `{name}`", "", what, ""]
        parts += ["| key | type | always there |", "| --- | --- | --- |"]
        for key, annotation in cls.__annotations__.items():
            if key in inherited:
                continue
            always = "yes" if key in cls.__required_keys__ else "no"
            parts.append(f"| `{key}` | `{_type(annotation, module)}` | {always} |")
        parts.append("")
    parts.append(END)
    return "\n".join(parts)


def updated(page: str) -> str:
    """``page`` with its tables replaced by ``render``'s."""
    return replace_marked(page, START, END, render(), PAGE)


def main() -> int:
    PAGE.write_text(updated(PAGE.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
