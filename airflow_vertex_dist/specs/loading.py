"""``load_spec``: a spec from a JSON/YAML file or from ``module:attribute``; ``parse_spec_document``: a
JSON or YAML spec document as data, a key given twice refused (``DuplicateKeyError``): in JSON and
YAML alike the last one would silently win, so a value that ends its quoted string and repeats a key
(``command``, say) would replace what the spec's author wrote."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from airflow_vertex_dist.specs.job import DistributedTrainingJob
from airflow_vertex_dist.specs.tuning import HyperparameterTuningJob

__all__ = ["DuplicateKeyError", "Spec", "load_spec", "parse_spec_document", "spec_from_dict"]

Spec = DistributedTrainingJob | HyperparameterTuningJob


class DuplicateKeyError(ValueError):
    """A spec document that gives one key twice in one mapping."""


def _duplicate(key: Any, where: str) -> DuplicateKeyError:
    return DuplicateKeyError(
        f"{where}: duplicate key {key!r}: a key may appear only once in a mapping of a spec document"
    )


def _json_object(where: str) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise _duplicate(key, where)
            out[key] = value
        return out

    return hook


def _yaml_loader(where: str) -> Any:
    import yaml

    class StrictLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            self.flatten_mapping(node)
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        raise _duplicate(key, f"{where} (line {key_node.start_mark.line + 1})")
                    seen.add(key)
                except TypeError:  # an unhashable key: the base class names it
                    pass
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def parse_spec_document(text: str | bytes, where: str = "spec") -> Any:
    """A JSON document as JSON (YAML would mangle its surrogate-pair escapes and refuse some control
    characters JSON allows), anything else as YAML (safe: plain data only). ``DuplicateKeyError``
    naming the key when a mapping gives one twice; ``json.JSONDecodeError`` / ``yaml.YAMLError`` for
    a text that is no document."""
    import yaml

    if text.lstrip()[:1] in ("{", "[", b"{", b"["):
        try:
            return json.loads(text, object_pairs_hook=_json_object(where))
        except DuplicateKeyError:
            raise
        except ValueError:
            pass  # not JSON after all: YAML's flow style, say
    return yaml.load(text, Loader=_yaml_loader(where))  # noqa: S506 - a SafeLoader subclass


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
                data = json.loads(text, object_pairs_hook=_json_object(ref))
            except DuplicateKeyError:
                raise
            except json.JSONDecodeError as exc:
                raise ValueError(f"{ref}: not valid JSON: {exc}") from exc
        else:
            import yaml

            try:
                data = yaml.load(text, Loader=_yaml_loader(ref))  # noqa: S506 - a SafeLoader subclass
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
