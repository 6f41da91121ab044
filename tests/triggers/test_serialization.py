"""VertexJobTrigger kwargs round-trip: directly, and through Airflow's own trigger storage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from airflow._shared.module_loading import import_string  # what the triggerer uses
from airflow.models.trigger import Trigger
from airflow.serialization.decoders import smart_decode_trigger_kwargs
from airflow.serialization.serialized_objects import BaseSerialization

from airflow_vertex_dist.triggers.jobs import VertexJobTrigger

NAME = "projects/p/locations/us-central1/customJobs/123"
CASES: list[dict[str, Any]] = [
    {"job_name": NAME},
    {
        "job_name": "projects/p/locations/europe-west4/hyperparameterTuningJobs/9",
        "conn_id": "my_vertex",
        "project_id": "p",
        "location": "europe-west4",
        "poll_interval": 2.5,
        "cancel_on_kill": False,
        "partial_success": "succeed",
        "paused_grace": 0,
        "timeout": 3600,
        "page_size": 500,
        "impersonation_chain": "hop@p.iam.gserviceaccount.com,target@p.iam.gserviceaccount.com",
        "deferred_at": 1767225600.25,
    },
    {
        "job_name": NAME,
        "converge": {
            "managed-by": "airflow-vertex-dist",
            "airflow-dag": "d",
            "airflow-task": "t",
            "airflow-run": "r-0123abcd",
            "airflow-spec": "s0123456789abcdef",
            "airflow-budget": "m2",
        },
        "stream_logs": ["workerpool0-0"],
    },
]


@pytest.mark.parametrize("kwargs", CASES)
def test_serialize_mirrors_init(kwargs: dict[str, Any]) -> None:
    trigger = VertexJobTrigger(**kwargs)
    classpath, stored = trigger.serialize()
    assert classpath == "airflow_vertex_dist.triggers.jobs.VertexJobTrigger"
    rebuilt = import_string(classpath)(**stored)
    assert rebuilt.serialize() == (classpath, stored)
    for key, value in kwargs.items():
        assert stored[key] == value
    assert json.loads(json.dumps(stored)) == stored  # plain JSON
    assert all(  # scalars, or a list or dict of strings
        isinstance(v, str | int | float | bool | type(None))
        or (isinstance(v, list) and all(isinstance(x, str) for x in v))
        or (isinstance(v, dict) and all(isinstance(x, str) for x in [*v, *v.values()]))
        for v in stored.values()
    )


@pytest.mark.parametrize("kwargs", CASES)
def test_round_trip_through_airflow_trigger_storage(kwargs: dict[str, Any]) -> None:
    """What the scheduler stores (Trigger.from_object, encrypted kwargs) and how the triggerer
    rebuilds it (decrypt, smart_decode_trigger_kwargs, class from the classpath)."""
    trigger = VertexJobTrigger(**kwargs)
    row = Trigger.from_object(trigger)
    assert row.classpath == "airflow_vertex_dist.triggers.jobs.VertexJobTrigger"
    decrypted = Trigger._decrypt_kwargs(row.encrypted_kwargs)
    inflated = import_string(row.classpath)(
        **{k: smart_decode_trigger_kwargs(v) for k, v in decrypted.items()}
    )
    assert inflated.serialize() == trigger.serialize()
    assert row.kwargs == trigger.serialize()[1]


def test_round_trip_through_base_serialization() -> None:
    classpath, kwargs = VertexJobTrigger(**CASES[1]).serialize()
    encoded = BaseSerialization.serialize(kwargs)
    assert BaseSerialization.deserialize(encoded) == kwargs
    assert import_string(classpath)(**BaseSerialization.deserialize(encoded)).serialize()[1] == kwargs


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"job_name": "customJobs/1"}, r"job_name: 'customJobs/1' is not a job name"),
        ({"job_name": NAME, "partial_success": "maybe"}, r"partial_success: must be one of fail, succeed"),
        ({"job_name": NAME, "poll_interval": 0}, r"poll_interval: must be a positive number"),
        ({"job_name": NAME, "paused_grace": -1}, r"paused_grace: must be >= 0"),
        ({"job_name": NAME, "timeout": 0}, r"timeout: must be a positive number of seconds or None"),
        ({"job_name": NAME, "page_size": 0}, r"page_size: must be at least 1"),
    ],
)
def test_bad_kwargs_name_the_field(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VertexJobTrigger(**kwargs)


class ElsewhereTrigger(VertexJobTrigger):
    """A subclass defined outside the package: it must serialize under this module's path."""

    def __init__(self, *, note: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.note = note

    def serialize_kwargs(self) -> dict[str, Any]:
        return {**super().serialize_kwargs(), "note": self.note}


def test_a_subclass_defined_elsewhere_serializes_under_its_own_classpath() -> None:
    trigger = ElsewhereTrigger(job_name=NAME, note="mine", poll_interval=3)
    row = Trigger.from_object(trigger)
    assert row.classpath == f"{__name__}.ElsewhereTrigger"
    rebuilt = import_string(row.classpath)(**row.kwargs)
    assert type(rebuilt) is ElsewhereTrigger
    assert rebuilt.serialize() == trigger.serialize()
    assert rebuilt.note == "mine" and rebuilt.poll_interval == 3.0


def test_a_subclass_the_triggerer_could_not_import_is_refused_when_serialized() -> None:
    class Local(VertexJobTrigger):
        pass

    with pytest.raises(TypeError, match=r"<locals>\.Local: a trigger class must be defined at the top level"):
        Local(job_name=NAME).serialize()
