"""The JobService's v1 REST mapping, as the stock client's REST transport (``transports/rest_base.py``)
sends it: the method a path and HTTP method name, the request built from the path, the query and the body
through the v1 protos (camelCase or snake_case fields), and the response as JSON (enums as integers with
``$alt=json;enum-encoding=int``, as names otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from vertex_emulator.jobservice.methods import KINDS, METHODS, ApiError, MethodInfo
from vertex_emulator.jobservice.service import JobService

__all__ = ["JOB_NAME", "call"]

_KIND_ALT = "|".join(KINDS)
_COLLECTION_RE = re.compile(rf"/v1/(?P<parent>projects/[^/]+/locations/[^/]+)/(?P<kind>{_KIND_ALT})")
_ITEM_RE = re.compile(
    rf"/v1/(?P<name>projects/[^/]+/locations/[^/]+/(?P<kind>{_KIND_ALT})/[^/:]+)(?P<verb>:cancel)?"
)
#: the JobService's other collections: known to the API, not served here.
_OTHER_JOBS_RE = re.compile(
    r"/v1/projects/[^/]+/locations/[^/]+/(?:batchPredictionJobs|dataLabelingJobs|nasJobs|"
    r"modelDeploymentMonitoringJobs)(?:/[^/]+)*(?::\w+)?"
)
#: a job's resource name, of either kind (the pages' paths hold one)
JOB_NAME = rf"projects/[^/]+/locations/[^/]+/(?:{_KIND_ALT})/[^/]+"
_IGNORED_PARAMS = {"$alt", "alt", "$prettyPrint", "prettyPrint", "$fields", "fields", "key"}


def _method(kind: str, verb: str) -> MethodInfo:
    return next(m for m in METHODS.values() if m.kind == kind and m.verb == verb)


def _request(
    method: str, path: str, query: dict[str, list[str]], json_body: Callable[[], dict[str, Any]]
) -> tuple[MethodInfo, dict[str, Any]]:
    """The JobService method ``method path`` names and its request's fields; reads the body through
    ``json_body`` when the method takes one."""
    fields: dict[str, Any] = {}
    collection = _COLLECTION_RE.fullmatch(path)
    item = _ITEM_RE.fullmatch(path)
    if collection and method == "POST":
        info = _method(collection["kind"], "create")
        kind_info = KINDS[info.kind]
        fields = {"parent": collection["parent"], kind_info.body_field: json_body()}
    elif collection and method == "GET":
        info = _method(collection["kind"], "list")
        fields = {"parent": collection["parent"]}
        for key, values in query.items():
            if key not in _IGNORED_PARAMS:
                fields[key] = values[-1]
    elif item and method == "GET" and not item["verb"]:
        info = _method(item["kind"], "get")
        fields = {"name": item["name"]}
    elif item and method == "POST" and item["verb"] == ":cancel":
        info = _method(item["kind"], "cancel")
        json_body()  # body "*": nothing beyond the name, which is in the path
        fields = {"name": item["name"]}
    elif item and method == "DELETE" and not item["verb"]:
        info = _method(item["kind"], "delete")
        fields = {"name": item["name"]}
    elif _OTHER_JOBS_RE.fullmatch(path):
        raise ApiError(
            "UNIMPLEMENTED",
            f"{method} {path}: not implemented by the emulator "
            "(it serves CustomJob and HyperparameterTuningJob Create/Get/List/Cancel/Delete)",
        )
    else:
        raise ApiError("NOT_FOUND", f"{method} {path}: no such JobService method on the Vertex AI emulator")
    return info, fields


def call(
    service: JobService,
    method: str,
    path: str,
    query: dict[str, list[str]],
    json_body: Callable[[], dict[str, Any]],
) -> bytes:
    """Run the JobService method ``method path`` names; its response as JSON (``ApiError`` else)."""
    from google.protobuf import json_format

    info, fields = _request(method, path, query, json_body)
    request_type = info.request_type()
    pb = request_type.pb()()
    try:
        json_format.ParseDict(fields, pb)
    except json_format.ParseError as exc:
        raise ApiError("INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}") from None
    response = service.call(info.name, request_type.wrap(pb))
    ints = "enum-encoding=int" in ";".join(query.get("$alt", []) + query.get("alt", []))
    response_pb = response if info.response in ("Empty", "Operation") else type(response).pb(response)
    text: str = json_format.MessageToJson(response_pb, use_integers_for_enums=ints)
    return text.encode() + b"\n"
