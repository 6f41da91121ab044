"""``load_spec``: a spec from a JSON/YAML file or from ``module:attribute``."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from airflow_vertex_dist.specs.job import DistributedTrainingJob
from airflow_vertex_dist.specs.tuning import HyperparameterTuningJob

__all__ = ["Spec", "load_spec", "spec_from_dict"]

Spec = DistributedTrainingJob | HyperparameterTuningJob


def spec_from_dict(data: Any, *, location: str | None = None) -> Spec:
    """A snake_case spec dict -> the model: a dict with a ``study`` key is a tuning job.
    ``location`` fills in the spec's location when it sets none."""
    if not isinstance(data, dict):
        raise ValueError(f"a spec must be a mapping (got {type(data).__name__})")
    if location is not None and data.get("location") is None:
        data = {**data, "location": location}
    if "study" in data:
        return HyperparameterTuningJob.model_validate(data)
    return DistributedTrainingJob.model_validate(data)


def _with_location(spec: Spec, location: str | None) -> Spec:
    if location is None or spec.location is not None:
        return spec
    data = {name: getattr(spec, name) for name in type(spec).model_fields}
    data["location"] = location
    return type(spec).model_validate(data)


def load_spec(ref: str, *, location: str | None = None) -> Spec:
    """Load a spec from ``ref``: a ``.json``, ``.yaml`` or ``.yml`` file holding a snake_case spec
    dict, or ``package.module:attribute`` naming a spec object or a dict.

    Raises ``pydantic.ValidationError`` for an invalid spec, ``OSError`` for an unreadable file,
    ``ImportError``/``AttributeError`` for a bad reference and ``ValueError`` for anything else.
    """
    suffix = Path(ref).suffix.lower()
    if suffix in (".json", ".yaml", ".yml"):
        text = Path(ref).read_text(encoding="utf-8")
        if suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{ref}: not valid JSON: {exc}") from exc
        else:
            import yaml

            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise ValueError(f"{ref}: not valid YAML: {exc}") from exc
        return spec_from_dict(data, location=location)
    module_name, sep, attribute = ref.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{ref!r}: expected a .json/.yaml/.yml file or 'module:attribute'")
    obj: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    if isinstance(obj, DistributedTrainingJob | HyperparameterTuningJob):
        return _with_location(obj, location)
    if isinstance(obj, dict):
        return spec_from_dict(obj, location=location)
    raise ValueError(f"{ref!r} is a {type(obj).__name__}, not a spec or a dict")
