"""A tuning job's study as its driver keeps it: settings, trials suggested, failures; each trial's spec.

``Study`` holds what the driver (tuning_job.py) read from the job -- the search, the metrics, the
early-stopping rule, the trial counts -- and what it has seen: the trials started, each one's
parameters and objective, the curves of the trials that ran to their end, the failed trials.

Each trial is a CustomJob whose spec is ``trialJobSpec`` with (``trial_job_spec``):

- ``--<parameter_id>=<value>`` appended to every pool's ``args`` (container or python package; the
  Reduction Server pool excepted) -- values formatted as the service does (search.format_value);
- ``baseOutputDirectory`` = ``<tuning base>/<trial id>``, so ``AIP_MODEL_DIR`` is
  ``<base>/<trial id>/model/`` as documented.

Failures: an INFEASIBLE trial counts as failed. When ``maxFailedTrialCount`` failed trials have
been seen the tuning job FAILS (code 3), stopping running trials. With ``maxFailedTrialCount`` unset
or 0, Google's tuning page ("Create a hyperparameter tuning job", Handle failed trials,
https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/
using-hyperparameter-tuning, read 2026-12-06) says: "If the first trial of your job fails, [the
service] ends the job immediately", and after a first trial that succeeds the service ends the job
when "the number of failed trials has grown too high" or their ratio to successful ones has; the
emulator reads "the first trial" as trial 1 (the first started), ends the job FAILED as soon as it
fails (``FIRST_TRIAL_RULE``, stopping the trials running beside it), and otherwise applies
``min(maxTrialCount, max(3, ceil(maxTrialCount / 5)))`` failed trials (``failed_trial_limit``).

Random draws (RANDOM_SEARCH, the stand-in for ALGORITHM_UNSPECIFIED) are seeded with the integer in
the job's label ``emulator-seed`` when it has one, else with a hash of the job's resource name
(``seed_for``) -- so a given job always draws the same trials, and a label makes two jobs draw alike.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vertex_emulator.core.gcs import join_uri
from vertex_emulator.runtime.cluster import is_reduction_server
from vertex_emulator.tuning.search import Observation, ParamSpec, Search, Value
from vertex_emulator.tuning.stopping import ConvexRule, Curve, decay_curve_should_stop, median_should_stop

__all__ = [
    "FIRST_TRIAL_RULE",
    "CONVEX_KEY",
    "RULES",
    "SEED_LABEL",
    "Study",
    "all_params",
    "failed_trial_limit",
    "seed_for",
    "trial_job_spec",
]

SEED_LABEL = "emulator-seed"
#: Why a job whose first trial failed ends, as its error says (the service's own text is not published)
FIRST_TRIAL_RULE = (
    "with maxFailedTrialCount unset or 0, the job ends as soon as its first trial fails (a first trial "
    "that fails suggests a problem in the training code)"
)
#: the automated early-stopping rules applied, by the study spec's field that asks for them
RULES: dict[str, Callable[..., bool]] = {
    "medianAutomatedStoppingSpec": median_should_stop,
    "decayCurveStoppingSpec": decay_curve_should_stop,
}
#: the rule whose settings come from its spec (tuning/stopping.py)
CONVEX_KEY = "convexAutomatedStoppingSpec"


def stopping_rule(study: Mapping[str, Any]) -> tuple[str, Callable[..., bool]] | None:
    """The study spec's automated early-stopping rule (its field and the rule), or None."""
    if study.get(CONVEX_KEY) is not None:
        return CONVEX_KEY, ConvexRule.of(study[CONVEX_KEY] or {})
    key = next((key for key in RULES if study.get(key) is not None), None)
    return None if key is None else (key, RULES[key])


def failed_trial_limit(max_failed: int, max_trials: int) -> int:
    """How many failed trials fail the job (``0`` means: the emulator's documented rule)."""
    if max_failed > 0:
        return max_failed
    return min(max_trials, max(3, math.ceil(max_trials / 5)))


def seed_for(job: Mapping[str, Any]) -> int:
    label = (job.get("labels") or {}).get(SEED_LABEL)
    if label is not None and str(label).isdigit():
        return int(label)
    return int.from_bytes(hashlib.sha256(str(job.get("name", "")).encode()).digest()[:8], "big")


def trial_job_spec(
    trial_spec: Mapping[str, Any],
    trial_id: str,
    args: Sequence[str],
) -> dict[str, Any]:
    """``trialJobSpec`` for one trial: parameters appended to the args, base output dir per trial."""
    spec = copy.deepcopy(dict(trial_spec))
    for pool in spec.get("workerPoolSpecs") or []:
        if not pool or is_reduction_server(pool):
            continue
        for key in ("containerSpec", "pythonPackageSpec"):
            if pool.get(key):
                pool[key]["args"] = [*(pool[key].get("args") or []), *args]
    base = (spec.get("baseOutputDirectory") or {}).get("outputUriPrefix")
    if base:
        spec["baseOutputDirectory"] = {"outputUriPrefix": join_uri(base, trial_id)}
    return spec


def all_params(search: Search) -> list[ParamSpec]:
    """Every parameter of the search, conditional children included."""
    out: list[ParamSpec] = []

    def walk(specs: Sequence[ParamSpec]) -> None:
        for p in specs:
            out.append(p)
            walk([c for _, c in p.children])

    walk(search.params)
    return out


@dataclass
class Study:
    """A running tuning job's study: its settings and the trials seen so far."""

    search: Search
    metrics: list[dict[str, Any]]
    #: ``measurementSelectionType``: LAST_MEASUREMENT or BEST_MEASUREMENT
    selection: str
    max_trials: int
    parallel: int
    #: failed trials that fail the job, and the job's ``maxFailedTrialCount`` (for the message)
    limit: int
    max_failed: Any
    #: the early-stopping rule's field in the study spec, or None
    rule_key: str | None
    #: the early-stopping rule (called as ``rule(curve, completed, maximize=...)``), or None
    rule: Callable[..., bool] | None
    #: the rules' x-axis is the elapsed time (``useElapsedDuration``), else ``global_step``
    by_elapsed: bool
    #: the first metric (the objective, and the early-stopping rules' curve) and whether it is maximized
    first_metric: str
    maximize: bool
    #: every parameter (conditional ones included) by id
    specs: dict[str, ParamSpec]
    completed: list[Curve] = field(default_factory=list)  # curves of the trials that ran to their end
    stopping: set[str] = field(default_factory=set)  # trials an early-stopping rule condemned
    published: dict[str, int] = field(default_factory=dict)  # trial -> the MetricsLog version shown
    history: dict[str, Observation] = field(default_factory=dict)
    started: int = 0
    failed: int = 0
    exhausted: bool = False
    last_failure: str = ""
    #: the job ends on its first trial's failure (maxFailedTrialCount unset or 0)
    first_failed: bool = False

    @classmethod
    def of(
        cls,
        study: Mapping[str, Any],
        search: Search,
        metrics: list[dict[str, Any]],
        *,
        max_trials: int,
        parallel: int,
        limit: int,
        max_failed: Any,
    ) -> Study:
        """The study of spec ``study``, none of its trials started yet."""
        found = stopping_rule(study)
        rule_key = found[0] if found else None
        return cls(
            search,
            metrics,
            str(study.get("measurementSelectionType") or "LAST_MEASUREMENT"),
            rule_key=rule_key,
            rule=found[1] if found else None,
            by_elapsed=rule_key is not None and bool((study.get(rule_key) or {}).get("useElapsedDuration")),
            first_metric=str(metrics[0]["metricId"]),
            maximize=str(metrics[0].get("goal") or "MAXIMIZE") != "MINIMIZE",
            specs={p.id: p for p in all_params(search)},
            max_trials=max_trials,
            parallel=parallel,
            limit=limit,
            max_failed=max_failed,
        )

    def next_trial(self, running: int) -> tuple[str, dict[str, Value]] | None:
        """The next trial to start (its id and parameters), or None: none may start now, or none is left."""
        if self.exhausted or running >= self.parallel or self.started >= self.max_trials:
            return None
        point = self.search.suggest(list(self.history.values()))
        if point is None:
            self.exhausted = True
            return None
        self.started += 1
        trial_id = str(self.started)
        self.history[trial_id] = Observation(point)
        return trial_id, point

    def record(self, trial_id: str, objective: float | None, reason: str | None) -> bool:
        """A trial ended (``reason``: why it is INFEASIBLE); True when the failed trials reach the limit."""
        self.history[trial_id] = Observation(self.history[trial_id].parameters, objective)
        if reason is None:
            return False
        self.failed += 1
        self.last_failure = f"trial {trial_id}: {reason}"
        if trial_id == "1" and not self.max_failed:
            self.first_failed = True
            return True
        return self.failed >= self.limit

    def failure_message(self) -> str:
        if self.first_failed:
            return f"The first trial failed: {FIRST_TRIAL_RULE}. The failure: {self.last_failure}"
        return (
            f"{self.failed} trials failed, reaching the limit of {self.limit} failed trials "
            f"(maxFailedTrialCount {self.max_failed}). The last failure: {self.last_failure}"
        )
