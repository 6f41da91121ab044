"""The emulator's JobService logic for CustomJobs and HyperparameterTuningJobs, transport-free.

Requests and responses are the generated ``google.cloud.aiplatform_v1`` types (proto-plus), plus
``google.protobuf.Empty`` for Cancel and ``google.longrunning.Operation`` for Delete; the gRPC and
REST servers only translate bytes and HTTP to these. Jobs are stored as v1 JSON
(``store``); conversion happens here, at the edge.

Behaviour mirrored from the service:

* Create reads the job as the proto the transport parsed (so proto3 defaults apply as the service
  sees them: an omitted number is 0), validates it (the emulator's own rules, ``rules``: a request
  the cloud would refuse fails here with INVALID_ARGUMENT and the service's ``List of found errors``
  text; a ``validator`` given to ``JobService`` replaces them), refuses with RESOURCE_EXHAUSTED a job
  with more replicas than the host's ceilings let it ever run (``ceilings``, capacity/host.py; the service
  answers a Create over quota so) and, with the service's text naming the quota metric, a job whose
  GPUs exceed a GPU quota (``gpus``, capacity/ledger.py: the limit by itself, or beside the jobs running
  when ``Capacity.over_quota`` is "refuse"; a job with ``persistent_resource_id`` is checked against its
  resource instead, ``resources``: persistent_resources/), ignores output-only fields, stores the job
  QUEUED and hands it to the runner. It returns the job itself, not an operation. Fields accepted but
  not applied locally (``fidelity``) are named once per job in the emulator's log (INFO).
* Get/Cancel/Delete of a missing job: NOT_FOUND; a malformed resource name: INVALID_ARGUMENT.
* List supports ``filter`` (``filters``), ``page_size`` (default
  100, at most 1000), opaque ``page_token`` and ``read_mask``; newest job first.
* Cancel is best effort and returns Empty; on a finished job it is FAILED_PRECONDITION.
* Delete returns a done long-running Operation; like the service's "can only be called on jobs
  that already finished", deleting a job that is not finished is FAILED_PRECONDITION.

Every call is counted per method (``call_counts``) and passes through the fault injector first. The
methods served, the job kinds, ``ApiError`` and the JSON <-> proto conversion are methods.py's
(imported from here too).
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from vertex_emulator.capacity.gpus import provisioning, spec_gpus
from vertex_emulator.capacity.host import HostCeilings, message_replicas
from vertex_emulator.capacity.ledger import GpuCapacity
from vertex_emulator.core.config import Faults
from vertex_emulator.core.faults import FaultInjector
from vertex_emulator.core.gcs import check_request_uris
from vertex_emulator.core.jobkinds import TERMINAL_STATES, JobKind
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.core.operations import operation
from vertex_emulator.core.parents import check_parent
from vertex_emulator.jobservice.fidelity import unapplied_fields
from vertex_emulator.jobservice.filters import FilterError, compile_filter
from vertex_emulator.jobservice.methods import (
    KINDS,
    METHODS,
    ApiError,
    KindInfo,
    MethodInfo,
    ResourceCheck,
    job_from_proto,
    job_to_proto,
)
from vertex_emulator.jobservice.page_tokens import TokenError, decode_token, encode_token

__all__ = [
    "ApiError",
    "JobService",
    "KINDS",
    "KindInfo",
    "METHODS",
    "MethodInfo",
    "ResourceCheck",
    "RunnerLike",
    "job_from_proto",
    "job_to_proto",
]

_log = logging.getLogger(__name__)
_PROTO_CACHE_SIZE = 20_000
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000

_NAME_RE = re.compile(r"(?P<parent>projects/[^/]+/locations/[^/]+)/(?P<kind>[A-Za-z]+)/(?P<id>[^/]+)")


class RunnerLike(Protocol):
    """What the service and the app need from the runner (``emulator/runner.py``)."""

    def submit(self, name: str) -> None: ...
    def cancel(self, name: str) -> None: ...
    def recover(self) -> None: ...
    def replica_view(self, job_name: str, replica_key: str) -> dict[str, Any] | None: ...
    def close(self) -> None: ...


def _default_validator(kind: JobKind, message: Any, location: str) -> None:
    """Refuse a Create the service would refuse: the emulator's own rules (``vertex_emulator.rules``,
    read from Google's documentation and the v1 protos), with INVALID_ARGUMENT and the service's
    ``List of found errors`` text."""
    from vertex_emulator.rules import check_create, format_problems

    problems = check_create(kind, message, location)
    if problems:
        raise ApiError("INVALID_ARGUMENT", format_problems(problems))


class JobService:
    """The JobService methods for both job kinds, over a ``JobStore`` and a runner."""

    def __init__(
        self,
        store: JobStore,
        runner: RunnerLike,
        faults: Faults | None = None,
        *,
        validator: Callable[[JobKind, Any, str], None] | None = _default_validator,
        ceilings: HostCeilings | None = None,
        gpus: GpuCapacity | None = None,
        resources: ResourceCheck | None = None,
    ) -> None:
        self.store, self.resources = store, resources  # resources: jobs on a persistent resource
        self.runner = runner
        #: the host's ceilings on replicas (capacity/host.py): Create refuses a job that can never run here
        self.ceilings = ceilings
        #: the GPU quota and capacity books (capacity/ledger.py): Create refuses a job over a GPU quota
        self.gpus = gpus
        self.faults = faults if faults is not None else Faults()
        self.injector = FaultInjector(self.faults)
        self.validator = validator
        self._counts: dict[str, int] = {}
        self._cancels: dict[str, int] = {}  # job name -> Cancel calls that reached the job
        self._lock = threading.Lock()
        # (kind, name) -> (updateTime, serialized proto): JSON -> proto parsing is the slow part of
        # Get/List, and a job's (name, updateTime) names one revision of it (the store bumps it).
        self._protos: dict[tuple[str, str], tuple[str, bytes]] = {}

    # -- dispatch -----------------------------------------------------------------------------

    def call(self, method: str, request: Any) -> Any:
        """Run JobService ``method`` on a proto-plus request; raises ``ApiError``."""
        info = METHODS.get(method)
        if info is None:
            raise ApiError(
                "UNIMPLEMENTED",
                f"JobService.{method} is not implemented by the emulator "
                "(it serves CustomJob and HyperparameterTuningJob Create/Get/List/Cancel/Delete)",
            )
        with self._lock:
            self._counts[method] = self._counts.get(method, 0) + 1
        code = self.injector.draw(method)
        if code is not None:
            raise ApiError(code, f"injected fault: {method} failed with {code} (emulator fault injection)")
        handler: Callable[[MethodInfo, Any], Any] = getattr(self, f"_{info.verb}")
        response = handler(info, request)
        lost = self.injector.draw_lost(method)
        if lost is not None:
            raise ApiError(lost, f"injected fault: {method} ran, then its answer was lost with {lost}")
        return response

    def call_counts(self) -> dict[str, int]:
        """Calls received per method name (including those failed by fault injection)."""
        with self._lock:
            return dict(self._counts)

    def cancel_counts(self) -> dict[str, int]:
        """Cancel calls per job name: every Cancel that reached an existing job, whether it was
        accepted or refused (FAILED_PRECONDITION for an ended job); not those failed by an injected
        fault before they ran (``call_counts`` has those)."""
        with self._lock:
            return dict(self._cancels)

    def stats(self) -> dict[str, Any]:
        out = {
            "calls": self.call_counts(),
            "cancel_calls": self.cancel_counts(),
            "injected_faults": self.injector.injected_counts(),
        }
        if self.ceilings is not None:  # the replicas running under the host's ceiling, and who waits
            out["replicas"] = self.ceilings.snapshot()
        if self.gpus is not None:  # GPU quota and capacity: limits, in use, peak, who waits
            out["gpus"] = self.gpus.snapshot()
        return out

    # -- helpers ------------------------------------------------------------------------------

    def _proto(self, kind: JobKind, job: Mapping[str, Any]) -> Any:
        msg_type = KINDS[kind].message_type()
        key, stamp = (kind, str(job["name"])), str(job.get("updateTime", ""))
        with self._lock:
            hit = self._protos.get(key)
        if hit is not None and hit[0] == stamp:
            return msg_type.deserialize(hit[1])
        message = job_to_proto(kind, job)
        with self._lock:
            if len(self._protos) >= _PROTO_CACHE_SIZE:
                self._protos.clear()
            self._protos[key] = (stamp, msg_type.serialize(message))
        return message

    @staticmethod
    def _check_name(info: MethodInfo, name: str) -> None:
        match = _NAME_RE.fullmatch(name)
        resource = KINDS[info.kind].resource
        if match is None or match["kind"] != info.kind or not match["id"].isdigit():
            raise ApiError(
                "INVALID_ARGUMENT",
                f"name: {name!r} is not a {resource} resource name "
                f"(expected projects/PROJECT/locations/LOCATION/{info.kind}/NUMERIC_ID)",
            )

    def _load(self, info: MethodInfo, name: str) -> dict[str, Any]:
        self._check_name(info, name)
        try:
            return self.store.get(name)
        except KeyError:
            raise ApiError("NOT_FOUND", f"{KINDS[info.kind].resource} {name} does not exist.") from None

    # -- methods ------------------------------------------------------------------------------

    def _create(self, info: MethodInfo, request: Any) -> Any:
        kind_info = KINDS[info.kind]
        check_parent(request.parent)
        message = getattr(request, kind_info.body_field)
        body = job_from_proto(info.kind, message)
        for key in kind_info.output_only:
            body.pop(key, None)
        if not body:
            raise ApiError(
                "INVALID_ARGUMENT", f"{kind_info.body_field}: required ({kind_info.resource} is empty)"
            )
        if self.validator is not None:
            # the job as the transport parsed it (proto3 defaults), the location from the parent
            self.validator(info.kind, message, request.parent.split("/")[3])
        if self.ceilings is not None:
            # more replicas than the host can ever run: refused as the service refuses a Create over quota
            problem = self.ceilings.ceiling_problem(info.kind, message_replicas(info.kind, message))
            if problem is not None:
                raise ApiError("RESOURCE_EXHAUSTED", problem)
        ticket = self._admit(info.kind, request.parent, body)
        try:
            stored = self._store_new(info.kind, request.parent, body)
        except BaseException:
            if self.gpus is not None and ticket is not None:
                self.gpus.quota.release(ticket)  # not stored: the quota it took is free again
            raise
        if self.gpus is not None and ticket is not None:
            self.gpus.quota.rename(ticket, stored["name"])  # its driver frees it as it ends
        unapplied = unapplied_fields(info.kind, message)
        if unapplied:
            _log.info(
                "%s %s: accepted, not applied locally (see the emulator's field table): %s",
                kind_info.resource,
                stored["name"],
                ", ".join(unapplied),
            )
        self.runner.submit(stored["name"])
        # The job as created, as the service answers a Create (QUEUED); its driver, already started,
        # may move it on before this answer is sent: a Get shows that, the Create's answer does not.
        return self._proto(info.kind, stored)

    def _admit(self, kind: JobKind, parent: str, body: dict[str, Any]) -> str | None:
        """Refuse GPUs over a quota with the service's RESOURCE_EXHAUSTED naming the metric
        (capacity/gpus.py). With over_quota "refuse", a CustomJob's quota is checked and taken in one
        step (``GpuCapacity.admit``), so of concurrent Creates exactly those that fit pass: taken under
        the ticket returned (None: nothing taken) until the job has a name."""
        spec = body.get("jobSpec") or {}
        if kind == "customJobs" and self.resources is not None and spec.get("persistentResourceId"):
            self.resources.check_job(parent, body)  # the resource's replicas, not the region's quota
            return None
        if self.gpus is None:
            return None
        ticket = f"create:{secrets.token_hex(8)}" if kind == "customJobs" else None
        spec = body.get("jobSpec" if kind == "customJobs" else "trialJobSpec") or {}
        over = self.gpus.admit(parent.split("/")[3], spec_gpus(spec), provisioning(spec), ticket)
        if over is not None:
            raise ApiError("RESOURCE_EXHAUSTED", over)
        return ticket

    def _store_new(self, kind: JobKind, parent: str, body: dict[str, Any]) -> dict[str, Any]:
        """Store a new job QUEUED, once its ``gs://`` URIs are checked (each maps inside --gcs-root)."""
        try:
            check_request_uris(body)
        except ValueError as exc:
            raise ApiError("INVALID_ARGUMENT", str(exc)) from None
        return self.store.insert(kind, parent, body)

    def _get(self, info: MethodInfo, request: Any) -> Any:
        return self._proto(info.kind, self._load(info, request.name))

    def _list(self, info: MethodInfo, request: Any) -> Any:
        from google.cloud import aiplatform_v1
        from google.protobuf import field_mask_pb2

        check_parent(request.parent)
        try:
            predicate = compile_filter(request.filter)
        except FilterError as exc:
            raise ApiError("INVALID_ARGUMENT", f"filter: {exc}") from None
        if request.page_size < 0:
            raise ApiError("INVALID_ARGUMENT", f"page_size: must not be negative (got {request.page_size})")
        page_size = min(request.page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        kind_info = KINDS[info.kind]
        msg_type = kind_info.message_type()
        mask = None
        if request.read_mask and request.read_mask.paths:
            mask = field_mask_pb2.FieldMask(paths=list(request.read_mask.paths))
            if not mask.IsValidForDescriptor(msg_type.pb().DESCRIPTOR):
                raise ApiError(
                    "INVALID_ARGUMENT",
                    f"read_mask: {', '.join(mask.paths)} names a field {kind_info.resource} does not have",
                )

        jobs = [
            job for job in self.store.list_shared(info.kind, request.parent) if self._keep(predicate, job)
        ]
        jobs.sort(key=_order_key, reverse=True)  # newest first
        if request.page_token:
            try:
                cursor = decode_token(request.page_token, request.parent, request.filter)
            except TokenError as exc:
                raise ApiError("INVALID_ARGUMENT", str(exc)) from None
            jobs = [job for job in jobs if _order_key(job) < cursor]
        page, rest = jobs[:page_size], jobs[page_size:]
        items = []
        for job in page:
            try:
                item = self._proto(info.kind, job)
            except Exception as exc:  # a damaged row: set aside, not a 500 for the whole parent
                self.store.quarantine(str(job["name"]), f"does not convert to a {info.kind} proto: {exc!r}")
                continue
            if mask is not None:
                trimmed = msg_type.pb()()
                mask.MergeMessage(msg_type.pb(item), trimmed)
                item = msg_type.wrap(trimmed)
            items.append(item)
        response_type = getattr(aiplatform_v1, info.response)
        next_token = encode_token(_order_key(page[-1]), request.parent, request.filter) if rest else ""
        return response_type(**{kind_info.list_field: items, "next_page_token": next_token})

    def _keep(self, predicate: Callable[[Mapping[str, Any]], bool], job: Mapping[str, Any]) -> bool:
        """Whether a List shows ``job``; a job the filter cannot read (damaged) is quarantined."""
        try:
            return predicate(job) and isinstance(_order_key(job), tuple)
        except Exception as exc:
            self.store.quarantine(str(job.get("name")), f"cannot be read by a List filter: {exc!r}")
            return False

    def _cancel(self, info: MethodInfo, request: Any) -> Any:
        from google.protobuf import empty_pb2

        job = self._load(info, request.name)
        with self._lock:
            self._cancels[request.name] = self._cancels.get(request.name, 0) + 1
        state = job.get("state", "JOB_STATE_UNSPECIFIED")
        if state in TERMINAL_STATES:
            raise ApiError(
                "FAILED_PRECONDITION",
                f"Cannot cancel {KINDS[info.kind].resource} {request.name}: it is already in state {state}.",
            )
        self.runner.cancel(request.name)
        return empty_pb2.Empty()

    def _delete(self, info: MethodInfo, request: Any) -> Any:
        from google.cloud import aiplatform_v1
        from google.protobuf import empty_pb2, json_format

        job = self._load(info, request.name)
        state = job.get("state", "JOB_STATE_UNSPECIFIED")
        if state not in TERMINAL_STATES:
            raise ApiError(
                "FAILED_PRECONDITION",
                f"Cannot delete {KINDS[info.kind].resource} {request.name}: it is in state {state}; "
                "only a finished job can be deleted (cancel it and wait for CANCELLED first).",
            )
        self.store.delete(request.name)
        stamp = self.store.clock.now_rfc3339()
        metadata = aiplatform_v1.DeleteOperationMetadata.pb()()
        json_format.ParseDict({"genericMetadata": {"createTime": stamp, "updateTime": stamp}}, metadata)
        parent = _NAME_RE.fullmatch(request.name)
        assert parent is not None  # checked by _load
        name = f"{parent['parent']}/operations/{secrets.randbelow(10**18)}"
        return operation(name, metadata, done=True, response=empty_pb2.Empty())


def _order_key(job: Mapping[str, Any]) -> tuple[str, str]:
    # The store writes every createTime in one fixed UTC format, so strings sort chronologically.
    return (str(job["createTime"]), str(job["name"]))
