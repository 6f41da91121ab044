"""Conformance of Create with the v1 protos, generated from the descriptors (nothing hand-listed).

Every scalar, bool, enum, map and well-known-value field reachable from ``CustomJob`` and
``HyperparameterTuningJob`` (``vertex_emulator.rules.fields.walk``) is submitted once at
its zero value and once at a valid non-zero value, over gRPC and over REST with the stock
``JobServiceClient``. Each request is accepted unless a documented Vertex AI rule forbids it:

* the proto reference marks the field ``Required.`` and the value is its zero: an empty string,
  enum 0, an empty list or map is "not set" on the wire. A required *number* is different: proto3
  cannot tell 0 from unset, so 0 is a value (a range [0, 1] is valid);
* ``RULES`` (``conformance_requests.py``), each with the documentation it comes from.

Output-only fields are accepted and ignored, as the service does. The spec models' ``from_api`` and
``to_api`` round-trip each accepted request (what the emulator stores is what it was sent).
Requests whose serialized bytes are equal are sent once (a zero value is often the base request).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from vertex_emulator import testing
from vertex_emulator.app import Emulator
from vertex_emulator.core.config import Faults
from vertex_emulator.rules.fields import ProtoField
from vertex_emulator.testing import PARENT

from .conformance_requests import build, cases, expected, output_only


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    # Jobs stay QUEUED: this is about reading Create requests, not about running them.
    with testing.running_emulator(tmp_path_factory.mktemp("conformance"), faults=Faults(queued_s=3600)) as em:
        yield em


def _submit(client: Any, root: str, body: dict[str, Any]) -> str | None:
    """Create ``body``; None if accepted, else the error text (only INVALID_ARGUMENT is expected)."""
    from google.api_core import exceptions
    from google.cloud import aiplatform_v1

    message = getattr(aiplatform_v1, root).from_json(json.dumps(body))
    try:
        if root == "CustomJob":
            client.create_custom_job(parent=PARENT, custom_job=message)
        else:
            client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=message)
    except exceptions.BadRequest as exc:  # INVALID_ARGUMENT over gRPC, 400 over REST
        return str(exc.message)
    return None


def _lookup(tree: Any, parts: list[str]) -> Any:
    for name in parts:
        if isinstance(tree, list):
            tree = tree[0] if tree else None
        if not isinstance(tree, dict) or name not in tree:
            return None
        tree = tree[name]
    return tree


def _round_trip_problem(field: ProtoField, body: dict[str, Any]) -> str | None:
    """The spec models read the request and write it back with ``field``'s value unchanged."""
    from google.cloud import aiplatform_v1
    from google.protobuf import json_format

    from airflow_vertex_dist import specs

    root = field.path.split(".")[0]
    msg_type = getattr(aiplatform_v1, root)
    sent = json_format.MessageToDict(msg_type.pb(msg_type.from_json(json.dumps(body))))
    model: Any = specs.DistributedTrainingJob if root == "CustomJob" else specs.HyperparameterTuningJob
    spec = model.from_api(sent)
    rendered = spec.to_api()
    again = json_format.MessageToDict(msg_type.pb(msg_type.from_json(json.dumps(rendered))))
    if model.from_api(rendered) != spec:
        return f"round trip {field.path}: from_api(to_api(spec)) differs from spec"
    if _lookup(sent, field.parts) is None:
        return f"round trip {field.path}: the request does not carry the field (a test bug)"
    if _lookup(again, field.parts) != _lookup(sent, field.parts):
        return (
            f"round trip {field.path}: sent {_lookup(sent, field.parts)!r}, "
            f"to_api wrote {_lookup(again, field.parts)!r}"
        )
    return None


def test_every_field_zero_and_nonzero_over_grpc_and_rest(emulator: Emulator) -> None:
    from google.cloud import aiplatform_v1

    started = time.monotonic()
    clients = {"grpc": testing.grpc_client(emulator), "rest": testing.rest_client(emulator)}
    sent: dict[tuple[str, bytes], str | None] = {}
    problems: list[str] = []
    count = round_trips = 0
    try:
        for field, which, fields in cases():
            root = field.path.split(".")[0]
            body = build(field, which, fields)
            wire = (
                getattr(aiplatform_v1, root)
                .from_json(json.dumps(body))
                .__class__.serialize(getattr(aiplatform_v1, root).from_json(json.dumps(body)))
            )
            want = expected(field, which, fields)
            if want is None and which == "nonzero" and not output_only(field, fields):
                round_trips += 1
                problem = _round_trip_problem(field, body)
                if problem:
                    problems.append(problem)
            for transport, client in clients.items():
                key = (f"{transport}:{root}", wire)
                if key not in sent:
                    sent[key] = _submit(client, root, body)
                    count += 1
                got = sent[key]
                if (got is None) != (want is None):
                    problems.append(
                        f"{transport} {field.path} {which}: "
                        + (f"refused ({got})" if got is not None else f"accepted, but {want}")
                    )
    finally:
        for client in clients.values():
            client.transport.close()
    elapsed = time.monotonic() - started
    print(f"conformance: {count} Create requests, {round_trips} round trips in {elapsed:.2f}s")
    assert not problems, "\n".join(problems)
    assert round_trips > 150  # every settable field of both resources
