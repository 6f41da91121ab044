"""HyperparameterTuningJobs in the emulator: trials as real CustomJobs, metrics from cloudml-hypertune.

A tuning job goes QUEUED -> PENDING -> RUNNING like a CustomJob, then runs up to
``parallelTrialCount`` trials at a time until ``maxTrialCount`` trials have run or the search space
is used up (grid search). The trials' replicas count against the host's ceiling (capacity/host.py): no
more trials start at once than the ceiling holds, and a trial's CustomJob waits QUEUED for room. Each
trial is a CustomJob inserted in the store (``trials[].customJob`` names it; Get and List return it)
whose spec is ``trialJobSpec`` with the trial's parameters appended to its args and a base output
directory of its own (tuning_study.py); its replicas get ``task.trial`` in CLUSTER_SPEC/TF_CONFIG,
``CLOUD_ML_TRIAL_ID`` set to the trial id ("1", "2"...), and a ``CLOUD_ML_HP_METRIC_FILE`` each.

A trial's reports are the JSON lines cloudml-hypertune writes to the *primary replica's* metrics
file. The library rewrites that file with only its last 100 reports at every report, so the file is
read every ``METRICS_POLL_S`` while the trial runs (and once more when it ends), keeping every report
seen (hypertune.MetricsLog): a trainer that reports more than 100 times within one interval loses
reports, as it would lose them from the file anyway. Every ``STOPPING_POLL_S`` the reports seen so
far are published as the running trial's ``trials[].measurements`` ("used for early stopping
computations", v1 ``Trial.measurements``). When the trial's CustomJob ends, its final measurement
is, for each study metric, the value of the last report (``LAST_MEASUREMENT``, the default) or of
the best one in the metric's goal (``BEST_MEASUREMENT``) that reports it, over all of its reports;
``stepCount`` is that report's ``global_step`` for the first metric.
A trial ends SUCCEEDED with that measurement, or INFEASIBLE with ``infeasibleReason`` when its job
failed (the job's error is quoted) or it reported none of the study's metrics.

Automated early stopping (``medianAutomatedStoppingSpec``, ``decayCurveStoppingSpec``,
``convexAutomatedStoppingSpec``; see ``stopping`` for the rules): every ``STOPPING_POLL_S`` the running
trials' reports are compared; a trial a rule condemns goes STOPPING ("should stop according to the
service") and its CustomJob is cancelled; it then ends SUCCEEDED with the final measurement its
reports give (INFEASIBLE is for a trial "done but missing the final_measurement"), and is not a
failed trial. With ``useElapsedDuration`` the rules' x-axis is the seconds from the trial's start to
each line's cloudml-hypertune ``timestamp`` (every measurement carries that ``elapsedDuration``), else
``global_step``.

Failed trials, the seed of random draws and the study's state: tuning_study.py.

Cancelling the tuning job cancels its running trials' CustomJobs; their trials end INFEASIBLE
("stopped: the tuning job was cancelled") and the job ends CANCELLED (code 1). The job SUCCEEDS
when the trials have run out. ``trials[]`` is updated in the store as each trial starts and ends.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from vertex_emulator.capacity.host import spec_replicas
from vertex_emulator.runtime.custom_job import CustomJobRun
from vertex_emulator.runtime.driver import DriverHost, JobDriver
from vertex_emulator.runtime.tuning_study import Study, failed_trial_limit, seed_for, trial_job_spec
from vertex_emulator.tuning.hypertune import MetricsLog, curve, final_measurement, measurements
from vertex_emulator.tuning.search import Search, Value, format_value
from vertex_emulator.tuning.stopping import Curve

__all__ = ["METRICS_POLL_S", "STOPPING_POLL_S", "TuningRun"]

#: Seconds between two looks at running trials' reports: their measurements are published and the
#: early-stopping rule, when one is set, is applied.
STOPPING_POLL_S = 0.2
#: Seconds between two reads of a running trial's metrics file (which cloudml-hypertune rewrites
#: with its last 100 reports at every report).
METRICS_POLL_S = 0.02


class TuningRun(JobDriver):
    """Drives one HyperparameterTuningJob."""

    kind_label = "HyperparameterTuningJob"

    def __init__(self, host: DriverHost, name: str) -> None:
        super().__init__(host, name)
        self.trial_runs: dict[str, CustomJobRun] = {}
        #: ``time.time()`` when each trial was started (the origin of its measurements' elapsedDuration)
        self.trial_started: dict[str, float] = {}
        #: every report each trial's primary has written (read while it runs: see METRICS_POLL_S)
        self.trial_logs: dict[str, MetricsLog] = {}
        #: the trials whose files the watcher reads (those running), under ``_watch_lock``
        self._watched: dict[str, MetricsLog] = {}
        self._watch_lock = threading.Lock()

    def _watch_metrics(self) -> None:
        """Read the running trials' metrics files every ``METRICS_POLL_S`` until the job is done."""
        while not self.done.wait(METRICS_POLL_S):
            with self._watch_lock:
                logs = list(self._watched.values())
            for log in logs:
                log.poll()

    def _unwatch(self, trial_id: str) -> MetricsLog | None:
        """Stop reading trial ``trial_id``'s file and read it one last time; its log."""
        with self._watch_lock:
            self._watched.pop(trial_id, None)
        log = self.trial_logs.get(trial_id)
        if log is not None:
            log.poll()
        return log

    def run(self) -> None:
        try:
            self._run()
        except Exception as exc:
            self.finish("JOB_STATE_FAILED", 13, f"Internal emulator error while running the job: {exc!r}")
            self._stop_trials("stopped: the emulator failed while running the tuning job")
        finally:
            self.host.release(self)
            self.done.set()

    # -- the study loop -----------------------------------------------------------------------

    def _run(self) -> None:
        job = self.schedule()
        if job is None:
            return
        study = self._open(job)
        if study is None:
            return
        self.set_state("JOB_STATE_RUNNING", startTime=self.store.clock.now_rfc3339(), trials=[])
        threading.Thread(target=self._watch_metrics, name=f"metrics-{self.job_id}", daemon=True).start()
        next_look = time.monotonic() + STOPPING_POLL_S
        while True:
            while (trial := study.next_trial(len(self.trial_runs))) is not None:
                if not self._start_trial(job, *trial, study.specs):
                    return  # the emulator is closing
            if not self.trial_runs:
                break
            try:
                event = self.events.get(timeout=max(0.0, next_look - time.monotonic()))
            except queue.Empty:
                event = ("look",)
            if time.monotonic() >= next_look:
                next_look = time.monotonic() + STOPPING_POLL_S
                self._look(study)
            if self._on_event(study, event):
                return
        self.finish("JOB_STATE_SUCCEEDED")

    def _open(self, job: Mapping[str, Any]) -> Study | None:
        """The job's study, ready to run; None when its spec cannot run (the job then FAILED)."""
        study: dict[str, Any] = job.get("studySpec") or {}
        max_trials = int(job.get("maxTrialCount") or 0)
        trial_replicas = spec_replicas(job.get("trialJobSpec") or {})
        # no more trials at once than the host's ceiling holds: the others would only wait QUEUED
        parallel = self.host.ceilings.parallel_trials(
            max(1, int(job.get("parallelTrialCount") or 1)), trial_replicas
        )
        limit = failed_trial_limit(int(job.get("maxFailedTrialCount") or 0), max_trials)
        metrics = list(study.get("metrics") or [])
        try:
            search = Search(study, seed=seed_for(job), parallel=parallel)
            if max_trials < 1:
                raise ValueError(f"maxTrialCount: must be at least 1 (got {max_trials})")
        except ValueError as exc:
            self.finish("JOB_STATE_FAILED", 3, str(exc))
            return None
        if not metrics:
            self.finish("JOB_STATE_FAILED", 3, "studySpec.metrics: at least one metric is required")
            return None
        max_failed = job.get("maxFailedTrialCount") or 0
        return Study.of(
            study,
            search,
            metrics,
            max_trials=max_trials,
            parallel=parallel,
            limit=limit,
            max_failed=max_failed,
        )

    def _look(self, study: Study) -> None:
        """Publish the running trials' new reports and apply the early-stopping rule, if any."""
        self._publish_measurements(study.metrics, study.published)
        if study.rule is not None:
            self._early_stop(
                study.rule,
                study.first_metric,
                study.maximize,
                study.completed,
                study.stopping,
                study.by_elapsed,
            )

    def _on_event(self, study: Study, event: tuple[Any, ...]) -> bool:
        """Handle one event of the study loop; True when the job ended (or the emulator is closing)."""
        if event[0] == "close":
            self.closing = True
            return True
        if event[0] == "cancel":
            self._stop_trials("stopped: the tuning job was cancelled")
            self.finish("JOB_STATE_CANCELLED", 1, f"{self.kind_label} {self.job_name} was cancelled.")
            return True
        if event[0] == "running":
            _, trial_id, uris = event
            if uris:
                self._update_trial(trial_id, {"webAccessUris": uris})
            return False
        if event[0] == "trial_done":
            _, trial_id, run = event
            return self._trial_done(study, trial_id, run)
        return False

    def _trial_done(self, study: Study, trial_id: str, run: CustomJobRun) -> bool:
        """Trial ``trial_id``'s CustomJob ended: settle the trial; True when the job ended."""
        self.trial_runs.pop(trial_id, None)
        if self.closing or run.closing:
            return True
        stopped = trial_id in study.stopping
        study.stopping.discard(trial_id)
        objective, reason = self._settle_trial(trial_id, run, study.metrics, study.selection, stopped=stopped)
        if reason is None and not stopped:
            origin = self.trial_started.get(trial_id) if study.by_elapsed else None
            study.completed.append(curve(self._reports(trial_id), study.first_metric, origin))
        if not study.record(trial_id, objective, reason):
            return False
        self._stop_trials("stopped: the tuning job failed")
        self.finish("JOB_STATE_FAILED", 3, study.failure_message())
        return True

    def _start_trial(
        self, job: Mapping[str, Any], trial_id: str, point: Mapping[str, Value], specs: Any
    ) -> bool:
        args = [f"--{pid}={format_value(specs[pid], value)}" for pid, value in point.items()]
        spec = trial_job_spec(job.get("trialJobSpec") or {}, trial_id, args)
        display = str(job.get("displayName") or "tuning")
        body: dict[str, Any] = {"displayName": f"{display}-trial-{trial_id}"[:128], "jobSpec": spec}
        if job.get("encryptionSpec"):
            body["encryptionSpec"] = job["encryptionSpec"]
        parent = self.job_name.split("/hyperparameterTuningJobs/")[0]
        custom = self.persist(lambda: self.store.insert("customJobs", parent, body))
        self.trial_started[trial_id] = time.time()
        trial = {
            "id": trial_id,
            "state": "ACTIVE",
            "parameters": [{"parameterId": pid, "value": value} for pid, value in point.items()],
            "startTime": self.store.clock.now_rfc3339(),
            "customJob": custom["name"],
        }

        def add(j: dict[str, Any]) -> None:
            j.setdefault("trials", []).append(trial)

        self.persist(lambda: self.store.update(self.job_name, add))
        run = CustomJobRun(
            self.host,
            custom["name"],
            trial=trial_id,
            on_running=lambda uris: self.events.put(("running", trial_id, uris)),
            on_done=lambda r: self.events.put(("trial_done", trial_id, r)),
        )
        log = MetricsLog(run.metric_file("workerpool0-0"))
        self.trial_logs[trial_id] = log
        with self._watch_lock:
            self._watched[trial_id] = log
        if not self.host.launch(run):
            return False  # the emulator is closing
        self.trial_runs[trial_id] = run
        return True

    def _reports(self, trial_id: str) -> list[dict[str, Any]]:
        log = self.trial_logs.get(trial_id)
        return log.reports() if log is not None else []

    def _publish_measurements(self, metrics: Sequence[Mapping[str, Any]], published: dict[str, int]) -> None:
        """Running trials' reports seen since the last look become their ``measurements``."""
        for trial_id in list(self.trial_runs):
            log = self.trial_logs.get(trial_id)
            if log is None or published.get(trial_id) == log.version:
                continue
            published[trial_id] = log.version
            reported = measurements(log.reports(), metrics, self.trial_started.get(trial_id))
            if reported:
                self._update_trial(trial_id, {"measurements": reported})

    def _early_stop(
        self,
        rule: Any,
        metric_id: str,
        maximize: bool,
        completed: Sequence[Curve],
        stopping: set[str],
        by_elapsed: bool = False,
    ) -> None:
        """Stop the running trials ``rule`` condemns: the trial is STOPPING, its CustomJob cancelled."""
        for trial_id, run in list(self.trial_runs.items()):
            if trial_id in stopping:
                continue
            origin = self.trial_started.get(trial_id) if by_elapsed else None
            points = curve(self._reports(trial_id), metric_id, origin)
            if rule(points, completed, maximize=maximize):
                stopping.add(trial_id)
                self._update_trial(trial_id, {"state": "STOPPING"})
                self.host.cancel(run.job_name)

    def _settle_trial(
        self,
        trial_id: str,
        run: CustomJobRun,
        metrics: Sequence[Mapping[str, Any]],
        selection: str,
        *,
        stopped: bool = False,
    ) -> tuple[float | None, str | None]:
        """Record a finished trial; (objective, None) on success, (None, reason) when INFEASIBLE.

        An early-stopped trial (``stopped``) whose job the emulator cancelled ends SUCCEEDED with the
        final measurement its reports give, as any trial that is done with a final measurement."""
        try:
            custom = self.store.get(run.job_name)
        except KeyError:
            custom = {"state": "JOB_STATE_FAILED", "error": {"message": "its CustomJob was deleted"}}
        state = str(custom.get("state"))
        self._unwatch(trial_id)  # its replicas are gone: read what they left, once more
        lines = self._reports(trial_id)
        fields: dict[str, Any] = {"endTime": self.store.clock.now_rfc3339()}
        started = self.trial_started.get(trial_id)
        reported = measurements(lines, metrics, started)
        if reported:
            fields["measurements"] = reported
        final = final_measurement(lines, metrics, selection, started)
        reason: str | None = None
        if stopped and final is not None:
            pass
        elif state != "JOB_STATE_SUCCEEDED":
            message = (custom.get("error") or {}).get("message", "")
            reason = f"its CustomJob {run.job_name} ended {state.removeprefix('JOB_STATE_')}: {message}"
        elif final is None:
            ids = ", ".join(str(m["metricId"]) for m in metrics)
            reason = (
                f"no final measurement: the primary replica reported none of the study's metrics ({ids}) "
                "through cloudml-hypertune"
            )
        if reason is None and final is not None:
            fields.update(state="SUCCEEDED", finalMeasurement=final)
            self._update_trial(trial_id, fields)
            first = str(metrics[0]["metricId"])
            objective = next((float(m["value"]) for m in final["metrics"] if m["metricId"] == first), None)
            return objective, None
        fields.update(state="INFEASIBLE", infeasibleReason=reason)
        self._update_trial(trial_id, fields)
        return None, reason

    def _update_trial(self, trial_id: str, fields: Mapping[str, Any]) -> None:
        def apply(job: dict[str, Any]) -> None:
            for trial in job.get("trials") or []:
                if trial.get("id") == trial_id:
                    trial.update(fields)

        try:
            self.persist(lambda: self.store.update(self.job_name, apply))
        except KeyError:
            pass

    def _stop_trials(self, reason: str) -> None:
        """Cancel running trials' CustomJobs, wait for them, mark their trials INFEASIBLE."""
        runs = dict(self.trial_runs)
        for run in runs.values():
            self.host.cancel(run.job_name)
        for run in runs.values():
            run.done.wait(timeout=self.config.stop_grace_s + 10.0)
        stamp = self.store.clock.now_rfc3339()
        for trial_id in runs:
            self._update_trial(
                trial_id, {"state": "INFEASIBLE", "infeasibleReason": reason, "endTime": stamp}
            )
        self.trial_runs.clear()

    def on_cancel(self) -> None:
        self._stop_trials("stopped: the tuning job was cancelled")
