"""The emulator's PersistentResourceService (v1), transport-free: Create, Get, List, Delete and Reboot on
the generated ``google.cloud.aiplatform_v1`` types, the long-running Operations they return
(``get_operation``), and the check of a CustomJob that names a resource (``check_job``).

Behaviour mirrored from the service (rules and sources: rules/persistent_resources.py, rules/sources.py;
the differences: docs/emulator.md, "Persistent resources"):

* Create validates the request (``List of found errors``, INVALID_ARGUMENT), refuses an id in use
  (ALREADY_EXISTS) and GPUs over the on-demand quota beside what is held (RESOURCE_EXHAUSTED, the quota
  metric named, capacity/gpus.py), stores the resource PROVISIONING and returns a running Operation
  (``CreatePersistentResourceOperationMetadata``). The resource "first finds resources ... then
  provisions" (PR_CREATE): it waits in the region's stock line for its GPUs (capacity/ledger.py, first
  come first served with the jobs) at most ``Capacity.stockout_after_s``, then ends ERROR with the
  stockout text and the Operation with RESOURCE_EXHAUSTED; granted, it stays PROVISIONING for
  ``Faults.provisioning_s`` and is RUNNING (``startTime``), the Operation done with the resource. A
  RUNNING resource holds its GPUs (quota and stock) until it is deleted.
* Get/Delete/Reboot of a missing resource: NOT_FOUND. List: creation order, ``page_size`` (default 100,
  at most 1000) and an opaque ``page_token``.
* Delete stops the resource: its jobs (running or waiting) end FAILED (code 10, the emulator's choice:
  the service's is not documented), its GPUs are freed and it is gone; the Operation (Empty,
  ``DeleteOperationMetadata``) is done.
* Reboot (a RUNNING resource only, else FAILED_PRECONDITION) is REBOOTING for ``Faults.provisioning_s``,
  its running jobs failed as by a delete (jobs waiting keep waiting), then RUNNING again.

The threads that provision and reboot wait on the service clock (core/clock.py). ``recover`` settles the
stored resources at a start, a restore or a reset.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
from collections.abc import Callable
from typing import Any

from vertex_emulator.capacity.gpus import quota_message
from vertex_emulator.capacity.ledger import GpuCapacity
from vertex_emulator.capacity.resources import ResourceBooks
from vertex_emulator.core.errors import ApiError
from vertex_emulator.core.faults import FaultInjector
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.core.operations import new_operation_name, operation
from vertex_emulator.core.parents import check_parent
from vertex_emulator.persistent_resources import convert
from vertex_emulator.persistent_resources.lifecycle import Lifecycle, region_gpus
from vertex_emulator.rules import format_problems
from vertex_emulator.rules.persistent_resources import job_fit, pool_id, resource_problems

__all__ = ["METHODS", "PersistentResourceService"]

_log = logging.getLogger(__name__)
#: RPC name -> (verb, request type)
METHODS: dict[str, tuple[str, str]] = {
    "CreatePersistentResource": ("create", "CreatePersistentResourceRequest"),
    "GetPersistentResource": ("get", "GetPersistentResourceRequest"),
    "ListPersistentResources": ("list", "ListPersistentResourcesRequest"),
    "DeletePersistentResource": ("delete", "DeletePersistentResourceRequest"),
    "RebootPersistentResource": ("reboot", "RebootPersistentResourceRequest"),
}
SERVED = "it serves PersistentResource Create/Get/List/Delete/Reboot"
_NAME_RE = re.compile(r"(projects/[^/]+/locations/[^/]+)/persistentResources/[^/]+")
DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE = 100, 1000


class PersistentResourceService:
    """The PersistentResourceService methods over the job store, the GPU books and the replica books."""

    def __init__(
        self,
        store: JobStore,
        gpus: GpuCapacity,
        books: ResourceBooks,
        injector: FaultInjector | None = None,
    ) -> None:
        self.store, self.gpus, self.books, self.injector = store, gpus, books, injector
        self.lifecycle = Lifecycle(store, gpus, books)
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        #: operation name -> (verb, resource name)
        self._ops: dict[str, tuple[str, str]] = {}

    # -- dispatch -----------------------------------------------------------------------------

    def call(self, method: str, request: Any) -> Any:
        """Run ``method`` on a proto-plus request; raises ``ApiError``."""
        if method not in METHODS:
            raise ApiError(
                "UNIMPLEMENTED",
                f"PersistentResourceService.{method} is not implemented by the emulator ({SERVED})",
            )
        with self._lock:
            self._counts[method] = self._counts.get(method, 0) + 1
        code = self.injector.draw(method) if self.injector is not None else None
        if code is not None:
            raise ApiError(code, f"injected fault: {method} failed with {code} (emulator fault injection)")
        handler: Callable[[Any], Any] = getattr(self, f"_{METHODS[method][0]}")
        return handler(request)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            calls = dict(self._counts)
        return {"calls": calls, "pools": self.books.snapshot()}

    # -- helpers ------------------------------------------------------------------------------

    def _load(self, name: str) -> dict[str, Any]:
        if not _NAME_RE.fullmatch(name):
            raise ApiError(
                "INVALID_ARGUMENT",
                f"name: {name!r} is not a PersistentResource resource name "
                "(expected projects/PROJECT/locations/LOCATION/persistentResources/ID)",
            )
        try:
            return self.store.get_resource(name)
        except KeyError:
            raise ApiError("NOT_FOUND", f"PersistentResource {name} does not exist.") from None

    def _proto(self, resource: dict[str, Any]) -> Any:
        """The stored resource as its message, each pool's ``usedReplicaCount`` read from the books."""
        shown = dict(resource)
        pools = []
        for index, pool in enumerate(resource.get("resourcePools") or []):
            used = self.books.replicas.in_use((str(resource["name"]), pool_id(pool, index), "replicas"))
            pools.append({**pool, "usedReplicaCount": str(used)} if used else pool)
        shown["resourcePools"] = pools
        return convert.to_proto(shown)

    def _remember(self, verb: str, resource: str) -> str:
        name = new_operation_name(resource)
        with self._lock:
            self._ops[name] = (verb, resource)
        return name

    # -- methods ------------------------------------------------------------------------------

    def _create(self, request: Any) -> Any:
        check_parent(request.parent)
        body = convert.from_proto(request.persistent_resource)
        for key in convert.OUTPUT_ONLY:
            body.pop(key, None)
        location = request.parent.split("/")[3]
        problems = resource_problems(request.persistent_resource_id, body, location)
        if problems:
            raise ApiError("INVALID_ARGUMENT", format_problems(problems))
        for index, pool in enumerate(body.get("resourcePools") or []):
            pool.pop("usedReplicaCount", None)
            pool["id"] = pool_id(pool, index)
        name = f"{request.parent}/persistentResources/{request.persistent_resource_id}"
        needs = self.gpus.quota_needs(location, region_gpus(body), "standard")
        if self.gpus.quota.reserve(name, needs):
            short = [
                key
                for key in needs
                if (limit := self.gpus.quota.limit_of(key)) is not None
                and self.gpus.quota.in_use(key) + needs[key] > limit
            ]
            raise ApiError("RESOURCE_EXHAUSTED", quota_message([self.gpus.metric(key) for key in short]))
        body["state"] = "PROVISIONING"
        try:
            stored = self.store.insert_resource(request.parent, request.persistent_resource_id, body)
        except KeyError:
            self.gpus.quota.release(name)  # not this one's: another resource has the name
            raise ApiError("ALREADY_EXISTS", f"PersistentResource {name} already exists.") from None
        except BaseException:
            self.gpus.quota.release(name)
            raise
        op_name = self._remember("create", name)
        self.lifecycle.provision(stored["name"], op_name)
        return self._operation(op_name)

    def _get(self, request: Any) -> Any:
        return self._proto(self._load(request.name))

    def _list(self, request: Any) -> Any:
        from google.cloud import aiplatform_v1

        check_parent(request.parent)
        if request.page_size < 0:
            raise ApiError("INVALID_ARGUMENT", f"page_size: must not be negative (got {request.page_size})")
        size = min(request.page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        start = _decode_token(request.page_token, request.parent) if request.page_token else 0
        every = self.store.list_resources(request.parent)
        page = every[start : start + size]
        token = _encode_token(start + size, request.parent) if start + size < len(every) else ""
        return aiplatform_v1.ListPersistentResourcesResponse(
            persistent_resources=[self._proto(r) for r in page], next_page_token=token
        )

    def _delete(self, request: Any) -> Any:
        resource = self._load(request.name)
        op_name = self._remember("delete", request.name)
        self.lifecycle.stop(str(resource["name"]))
        return self._operation(op_name)

    def _reboot(self, request: Any) -> Any:
        resource = self._load(request.name)
        if resource.get("state") != "RUNNING":
            raise ApiError(
                "FAILED_PRECONDITION",
                f"PersistentResource {request.name} is {resource.get('state')}: "
                "only a RUNNING resource can be rebooted.",
            )
        op_name = self._remember("reboot", request.name)
        self.lifecycle.reboot(request.name, op_name)
        return self._operation(op_name)

    # -- operations ---------------------------------------------------------------------------

    def get_operation(self, name: str) -> Any:
        """google.longrunning.Operations.GetOperation of an operation this service returned."""
        with self._lock:
            known = self._ops.get(name)
        if known is None:
            raise ApiError("NOT_FOUND", f"Operation {name} does not exist.")
        return self._operation(name)

    def _operation(self, name: str) -> Any:
        from google.cloud import aiplatform_v1
        from google.protobuf import empty_pb2, json_format

        with self._lock:
            verb, resource = self._ops[name]
        metadata_type: Any = {
            "create": aiplatform_v1.CreatePersistentResourceOperationMetadata,
            "delete": aiplatform_v1.DeleteOperationMetadata,
            "reboot": aiplatform_v1.RebootPersistentResourceOperationMetadata,
        }[verb]
        outcome = self.lifecycle.outcome(name)
        try:
            current: dict[str, Any] | None = self.store.get_resource(resource)
        except KeyError:
            current = None
        stamp = str((current or {}).get("updateTime") or self.store.clock.now_rfc3339())
        meta: dict[str, Any] = {"genericMetadata": {"createTime": stamp, "updateTime": stamp}}
        if verb != "delete":
            meta["progressMessage"] = str((current or {}).get("state") or "gone")
        metadata = metadata_type.pb()()
        json_format.ParseDict(meta, metadata)
        if verb == "delete":
            return operation(name, metadata, done=current is None, response=empty_pb2.Empty())
        if outcome is None and current is None:
            outcome = (10, f"PersistentResource {resource} was deleted before the operation ended.")
        if isinstance(outcome, tuple):
            return operation(name, metadata, done=True, error=outcome)
        if outcome is None or current is None:
            return operation(name, metadata, done=False)
        return operation(
            name, metadata, done=True, response=type(self._proto(current)).pb(self._proto(current))
        )

    # -- the JobService's check of a job on a resource ------------------------------------------

    def check_job(self, parent: str, body: dict[str, Any]) -> None:
        """Refuse (INVALID_ARGUMENT, naming the field) a CustomJob whose ``persistent_resource_id`` names
        no RUNNING resource of its project and location, or whose pools do not fit the resource's
        (``job-on-resource``, ``job-pool-match``, ``job-pool-replicas``)."""
        spec = body.get("jobSpec") or {}
        name = f"{parent}/persistentResources/{spec.get('persistentResourceId')}"
        field = "custom_job.job_spec.persistent_resource_id"
        try:
            resource = self.store.get_resource(name)
        except KeyError:
            raise ApiError(
                "INVALID_ARGUMENT", format_problems([f"{field}: PersistentResource {name} does not exist."])
            ) from None
        if resource.get("state") != "RUNNING":
            raise ApiError(
                "INVALID_ARGUMENT",
                format_problems(
                    [f"{field}: PersistentResource {name} is {resource.get('state')}, not RUNNING."]
                ),
            )
        _, problems = job_fit(resource, spec)
        if problems:
            raise ApiError("INVALID_ARGUMENT", format_problems(problems))

    # -- start, restore, reset, close ------------------------------------------------------------

    def recover(self) -> None:
        """Settle the stored resources (after a start, a restore or a reset): see ``Lifecycle.recover``."""
        with self._lock:
            self._ops.clear()
        self.lifecycle.recover()

    def close(self) -> None:
        self.lifecycle.close()


def _encode_token(index: int, parent: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"i": index, "p": parent}).encode()).decode()


def _decode_token(token: str, parent: str) -> int:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        if data["p"] != parent or not isinstance(data["i"], int) or data["i"] < 0:
            raise ValueError
        return int(data["i"])
    except (ValueError, KeyError, TypeError):
        raise ApiError("INVALID_ARGUMENT", f"page_token: {token!r} is not a token of this list") from None
