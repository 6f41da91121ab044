"""Write the spec models' field tables into docs/reference/specs.md, between its two markers, so the
API reference reads in the repository as well as on the site. ``tests/test_reference_tables.py``
fails when the committed tables differ from what this writes.

Run from the checkout's root: ``python scripts/spec_fields_md.py``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from marked_page import replace_marked  # scripts/ is on the path: run as a script, or by the tests
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "specs.md"
START = "<!-- spec-fields:start (written by scripts/spec_fields_md.py) -->"
END = "<!-- spec-fields:end -->"

MODELS = (
    "DistributedTrainingJob",
    "WorkerPool",
    "Machine",
    "Disk",
    "Container",
    "PythonPackage",
    "ReductionServer",
    "ReducerSizing",
    "Scheduling",
    "ReservationAffinity",
    "NfsMount",
    "LustreMount",
    "PscInterfaceConfig",
    "DnsPeeringConfig",
    "HyperparameterTuningJob",
    "Study",
    "Metric",
    "DoubleParameter",
    "IntegerParameter",
    "CategoricalParameter",
    "DiscreteParameter",
    "ConditionalParameter",
    "MedianAutomatedStopping",
    "DecayCurveAutomatedStopping",
    "ConvexAutomatedStopping",
    "CapacityLadder",
    "Rung",
    "MachineOverride",
    "PoolOverride",
    "PersistentResourceUse",
    "PersistentResource",
    "ResourcePool",
)


def _type(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    if isinstance(annotation, type):
        text = annotation.__name__
    text = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", text)
    text = re.sub(r"\b(?:typing|datetime|airflow_vertex_dist\.specs\.\w+|pydantic\.\w+)\.", "", text)
    text = re.sub(r"Annotated\[(.*?), .*\]$", r"\1", text)
    return text.replace("NoneType", "None").replace(" | ", " or ")


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value = field.default_factory()
    else:
        value = field.default
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        return f"`{type(value).__name__}()`"
    return f"`{value!r}`"


def models() -> list[str]:
    """``MODELS`` (the reading order), then every other spec model ``specs`` exports."""
    from airflow_vertex_dist import specs
    from airflow_vertex_dist.specs._base import SpecModel

    rest = [
        name
        for name in specs.__all__
        if name not in MODELS
        and isinstance(getattr(specs, name), type)
        and issubclass(getattr(specs, name), SpecModel)
    ]
    return [*MODELS, *rest]


def render() -> str:
    from airflow_vertex_dist import specs

    parts = [START, ""]
    for name in models():
        model: type[BaseModel] = getattr(specs, name)
        model.model_rebuild()  # forward references resolved, whatever this process built before
        parts += [f"### `{name}`", "", "| field | type | default |", "| --- | --- | --- |"]
        for field_name, field in model.model_fields.items():
            parts.append(f"| `{field_name}` | `{_type(field.annotation)}` | {_default(field)} |")
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
