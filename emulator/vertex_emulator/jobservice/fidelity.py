"""How the emulator treats each v1 field: accepted, applied locally or not, and how it differs.

``NOTES`` is keyed by a field's JSON path below its resource (``jobSpec.network``); a field
without its own entry takes its nearest ancestor's. ``HyperparameterTuningJob.trialJobSpec`` reads
as ``CustomJob.jobSpec``, and a conditional parameter's ``parameterSpec`` as a top-level parameter.
``field_table`` renders the table of ``docs/emulator.md``; ``unapplied_fields`` names the
fields of a request that are accepted but have no effect locally (the service logs them at Create).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from vertex_emulator.rules.fields import ROOTS, ProtoField, is_repeated, walk

__all__ = ["NOTES", "Note", "field_table", "note_for", "unapplied_fields"]

REF = "v1 reference"
SEED = "Vertex AI docs, Distributed training"


@dataclass(frozen=True)
class Note:
    #: "yes", "partly", "no" (accepted, validated, no effect locally) or "output" (output only)
    applied: str
    local: str
    source: str = REF


NOTES: dict[str, Note] = {
    "name": Note("output", "set by the emulator: `projects/P/locations/L/<collection>/<numeric id>`"),
    "displayName": Note("yes", "stored and returned; List filters on it"),
    "labels": Note("yes", "stored and returned; List filters on them; the label rules are checked"),
    "state": Note(
        "output",
        'QUEUED at Create ("just created [...] processing has not yet begun"), then PENDING, RUNNING, '
        "an end state; never PAUSED, EXPIRED, UPDATING or PARTIALLY_SUCCEEDED",
        "v1 JobState reference",
    ),
    "createTime": Note("output", "set by the emulator"),
    "startTime": Note("output", "set when the job enters RUNNING"),
    "endTime": Note("output", "set when the job ends"),
    "updateTime": Note("output", "set on every change"),
    "error": Note("output", "set on FAILED (the replica's exit status and log tail) and CANCELLED (code 1)"),
    "satisfiesPzs": Note("output", 'never set ("Reserved for future use")'),
    "satisfiesPzi": Note("output", 'never set ("Reserved for future use")'),
    "webAccessUris": Note(
        "output",
        "with `enableWebAccess`, one URI per replica (`workerpool0-0`, `workerpool1-0`, ...), "
        "set at RUNNING; "
        "each is the emulator's page of that replica (state, exit code, log tail), not an interactive shell",
    ),
    "encryptionSpec": Note("no", "the key name is checked; nothing is encrypted locally"),
    "jobSpec": Note("yes", "see its fields"),
    "jobSpec.persistentResourceId": Note(
        "partly",
        "a CustomJob runs on the resource's replicas (no region quota or stock, no provisioning delay) and "
        "waits QUEUED while they are taken; a tuning job's trials are neither checked against it nor run "
        "on it (docs/emulator.md, Persistent resources)",
    ),
    "jobSpec.workerPoolSpecs": Note(
        "yes",
        "pool 0 holds exactly 1 replica; a used pool needs at least 1 (an omitted replicaCount is 0); "
        "`{}` skips a pool and keeps the positions",
        SEED,
    ),
    "jobSpec.workerPoolSpecs.replicaCount": Note(
        "yes", "one local process per replica; 0 on a used pool is refused", SEED
    ),
    "jobSpec.workerPoolSpecs.containerSpec": Note("partly", "`command` + `args` run on the host"),
    "jobSpec.workerPoolSpecs.containerSpec.imageUri": Note(
        "no", "not pulled; without a `command` the image map gives the command"
    ),
    "jobSpec.workerPoolSpecs.containerSpec.command": Note("yes", "run on the host"),
    "jobSpec.workerPoolSpecs.containerSpec.args": Note("yes", "passed to the command"),
    "jobSpec.workerPoolSpecs.containerSpec.env": Note("yes", "set in the replica, `$(VAR)` expanded"),
    "jobSpec.workerPoolSpecs.pythonPackageSpec": Note(
        "partly", "packages installed locally without network, module run with a local interpreter"
    ),
    "jobSpec.workerPoolSpecs.pythonPackageSpec.executorImageUri": Note(
        "no", "not pulled; the image map may name the interpreter"
    ),
    "jobSpec.workerPoolSpecs.pythonPackageSpec.packageUris": Note(
        "yes", "local paths or `gs://` URIs under the gs root, installed with pip, no downloads"
    ),
    "jobSpec.workerPoolSpecs.pythonPackageSpec.pythonModule": Note("yes", "run with `python -m`"),
    "jobSpec.workerPoolSpecs.pythonPackageSpec.args": Note("yes", "passed to the module"),
    "jobSpec.workerPoolSpecs.pythonPackageSpec.env": Note("yes", "set in the replica, `$(VAR)` expanded"),
    "jobSpec.workerPoolSpecs.machineSpec": Note(
        "no",
        "validated (types, accelerator counts, TPU topologies); accelerators count against the GPU quotas "
        "and free GPUs of the capacity settings; every replica runs on this machine, CPU only",
    ),
    "jobSpec.workerPoolSpecs.nfsMounts": Note("no", "validated; nothing is mounted"),
    "jobSpec.workerPoolSpecs.lustreMounts": Note("no", "validated; nothing is mounted"),
    "jobSpec.workerPoolSpecs.diskSpec": Note("no", "validated; replicas use the local disk"),
    "jobSpec.scheduling": Note("partly", "see its fields"),
    "jobSpec.scheduling.timeout": Note(
        "yes", "counts from RUNNING; past it the job fails with code 4; `0s` reads as unset (7 days)"
    ),
    "jobSpec.scheduling.restartJobOnWorkerRestart": Note(
        "partly",
        "restarts the whole job (up to 3 times) when a replica is killed as the platform would kill it "
        "(`--crash-replica`); a replica exiting non-zero by itself fails the job",
    ),
    "jobSpec.scheduling.strategy": Note(
        "partly",
        "picks the GPU quota metric and the free GPUs a job waits for; SPOT jobs can be preempted "
        "(see Capacity in the emulator page); deprecated values accepted",
    ),
    "jobSpec.scheduling.disableRetries": Note("yes", "turns restartJobOnWorkerRestart off"),
    "jobSpec.scheduling.maxWaitDuration": Note(
        "partly",
        "a FLEX_START job waits that long for free GPUs (`0s`: for ever), then fails; accepted with any "
        "strategy; without capacity settings nothing waits",
    ),
    "jobSpec.serviceAccount": Note("no", "checked; replicas get no cloud credentials"),
    "jobSpec.network": Note("no", "checked; replicas use loopback"),
    "jobSpec.reservedIpRanges": Note("no", "checked (needs `network`)"),
    "jobSpec.pscInterfaceConfig": Note("no", "validated; no network attachment locally"),
    "jobSpec.baseOutputDirectory": Note(
        "yes", "the replicas' `AIP_*` directories derive from it (`<base>/<trial id>/...` for trials)", SEED
    ),
    "jobSpec.protectedArtifactLocationId": Note("no", "checked; nothing is copied"),
    "jobSpec.tensorboard": Note("no", "checked; nothing is uploaded"),
    "jobSpec.enableWebAccess": Note("partly", "fills `webAccessUris` with replica pages, not shells"),
    "jobSpec.enableDashboardAccess": Note("no", "accepted; no dashboard"),
    "jobSpec.experiment": Note("no", "checked; no Vertex AI Experiments locally"),
    "jobSpec.experimentRun": Note("no", "checked (needs `experiment`)"),
    "jobSpec.models": Note("no", "checked; no model artifacts are mapped"),
    "studySpec": Note("partly", "see its fields"),
    "studySpec.metrics": Note("yes", "read from the primary replica's cloudml-hypertune file"),
    "studySpec.metrics.safetyConfig": Note("no", "accepted; the search does not model safety metrics"),
    "studySpec.parameters": Note("yes", "sampled as the search algorithm says; scale types honoured"),
    "studySpec.parameters.doubleValueSpec.defaultValue": Note(
        "refused", '"Not supported by HyperparameterTuningJob or TrainingPipeline."'
    ),
    "studySpec.parameters.integerValueSpec.defaultValue": Note(
        "refused", '"Not supported by HyperparameterTuningJob or TrainingPipeline."'
    ),
    "studySpec.parameters.categoricalValueSpec.defaultValue": Note(
        "refused", '"Not supported by HyperparameterTuningJob or TrainingPipeline."'
    ),
    "studySpec.parameters.discreteValueSpec.defaultValue": Note(
        "refused", '"Not supported by HyperparameterTuningJob or TrainingPipeline."'
    ),
    "studySpec.parameters.conditionalParameterSpecs": Note("yes", "children drawn when the parent matches"),
    "studySpec.algorithm": Note(
        "partly", "GRID_SEARCH and RANDOM_SEARCH as documented; unset (Vizier) is a local stand-in"
    ),
    "studySpec.observationNoise": Note("no", "accepted; the stand-in search ignores it"),
    "studySpec.measurementSelectionType": Note("yes", "LAST (default) or BEST line of the hypertune file"),
    "studySpec.medianAutomatedStoppingSpec": Note(
        "yes", "the reference's rule on the trials' reported (global_step, value) points"
    ),
    "studySpec.medianAutomatedStoppingSpec.useElapsedDuration": Note(
        "yes", "x-axis: seconds from the trial's start to each hypertune line's timestamp"
    ),
    "studySpec.decayCurveStoppingSpec": Note(
        "partly", "no Gaussian process: an optimistic prediction from completed trials' curves"
    ),
    "studySpec.decayCurveStoppingSpec.useElapsedDuration": Note(
        "yes", "x-axis: seconds from the trial's start to each hypertune line's timestamp"
    ),
    "studySpec.convexAutomatedStoppingSpec": Note(
        "partly", "the reference's rule; a stopped trial gets no predicted last measurement"
    ),
    "studySpec.studyStoppingConfig": Note("no", "accepted; the study runs maxTrialCount trials"),
    "maxTrialCount": Note("yes", "at least 1"),
    "parallelTrialCount": Note("yes", "at least 1, at most maxTrialCount"),
    "maxFailedTrialCount": Note(
        "yes",
        'at most maxTrialCount; 0 ("the service decides"): a failed first trial ends the job, else '
        "min(max, max(3, ceil(max / 5))) failed trials locally",
        'Google\'s page "Create a hyperparameter tuning job" (Handle failed trials), read 2026-12-06',
    ),
    "trialJobSpec": Note("yes", "as `CustomJob.jobSpec`, for each trial"),
    "trials": Note(
        "output",
        "set by the emulator; measurements carry stepCount (global_step) and elapsedDuration (from the "
        "trial's start to the hypertune line's timestamp); a trial stopped early goes STOPPING, then "
        "SUCCEEDED with its final measurement; a trial without one is INFEASIBLE; `name` and "
        "`clientId` stay empty",
        "v1 Trial.State reference",
    ),
}

_ALIASES = (("trialJobSpec.", "jobSpec."), (".conditionalParameterSpecs.parameterSpec.", "."))


def _relative(path: str) -> str:
    return path.split(".", 1)[1]


def note_for(field: ProtoField) -> tuple[str, Note] | None:
    """The note of ``field`` (its own, or its nearest ancestor's) and the key it was found under."""
    rel = _relative(field.path)
    candidates = [rel]
    for old, new in _ALIASES:
        for known in list(candidates):
            while old in known:
                known = known.replace(old, new, 1)
                candidates.append(known)
    for cand in reversed(candidates):  # the most rewritten (the canonical name) first
        parts = cand.split(".")
        for end in range(len(parts), 0, -1):
            key = ".".join(parts[:end])
            if key in NOTES:
                return key, NOTES[key]
    return None


def _collapsed(field: ProtoField) -> bool:
    rel = _relative(field.path)
    return rel.startswith("trialJobSpec.") or ".conditionalParameterSpecs.parameterSpec." in rel


def _rows() -> Iterator[tuple[str, str, str, str, str]]:
    for root in ROOTS:
        for field in walk(root):
            if _collapsed(field):
                continue
            found = note_for(field)
            if found is None:
                raise KeyError(f"no note for {field.path}")
            key, note = found
            own = key == _relative(field.path)
            accepted = "refused" if note.applied == "refused" else "yes"
            applied = {"refused": "-", "output": "output only"}.get(note.applied, note.applied)
            local = note.local if own else f"as `{key}`"
            yield (f"`{field.path}`", accepted, applied, local, note.source if own else "")


def field_table() -> str:
    """The markdown table of every v1 field (``docs/emulator.md``, between its field-table markers)."""
    lines = [
        "| field | accepted | applied locally | locally | source |",
        "|---|---|---|---|---|",
    ]
    for row in _rows():
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines) + "\n"


def unapplied_fields(kind: str, message: Any) -> list[str]:
    """JSON paths of the fields set in a Create request's job ``message`` (proto-plus) that are
    accepted but not applied locally, each once, in the order the message holds them."""
    root = "CustomJob" if kind == "customJobs" else "HyperparameterTuningJob"
    fields = {f.path: f for f in walk(root)}
    out: list[str] = []
    pb = type(message).pb(message)
    for path in _set_paths(pb, root):
        field = fields.get(path)
        if field is None:
            continue
        found = note_for(field)
        if found is not None and found[1].applied == "no" and found[0] not in out:
            out.append(found[0])
    return out


def _set_paths(pb: Any, path: str) -> Iterator[str]:
    for fd, value in pb.ListFields():
        child = f"{path}.{fd.json_name}"
        yield child
        if fd.message_type is None or fd.message_type.GetOptions().map_entry:
            continue
        if fd.message_type.full_name.startswith("google.protobuf."):
            continue
        for item in value if is_repeated(fd) else [value]:
            yield from _set_paths(item, child)
