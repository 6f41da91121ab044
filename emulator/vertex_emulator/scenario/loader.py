"""Reading a scenario file: YAML or JSON (JSON through the same YAML loader, which keeps each node's
line), bounded (``MAX_BYTES``, nesting depth, node count; no anchors or aliases), and validated by
``Scenario``, each broken rule told as ``night.yaml:12: timeline[3].stock.count: must be ...`` (the
file, the line of the offending node, the field path, the rule).

A plain ``1:30`` is a string here, not YAML 1.1's sexagesimal integer 90: a scenario time reads
``"HH:MM"`` as hours and minutes whether it is quoted or not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from vertex_emulator.core.validation import field_path
from vertex_emulator.scenario.model import Scenario

__all__ = [
    "MAX_BYTES",
    "ScenarioError",
    "load_scenario",
    "parse_scenario",
    "read_scenario_text",
    "scenario_document",
    "scenario_schema",
    "scenario_schema_text",
]

#: the largest scenario file read (bytes)
MAX_BYTES = 1024 * 1024
_MAX_DEPTH = 32
_MAX_NODES = 200_000
_MAX_ERRORS = 20
_SEXAGESIMAL = re.compile(r"\d+(?::[0-5]?\d)+(?:\.\d*)?")
_STR_TAG = "tag:yaml.org,2002:str"

Loc = tuple[int | str, ...]


class ScenarioError(ValueError):
    """A scenario that cannot be read or breaks a rule; each line names the file and the line."""


class _Walk:
    """The line of each node by its path (``("timeline", 3, "stock")`` -> 12), checked as it goes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: dict[Loc, int] = {}
        self.seen: set[int] = set()

    def fail(self, node: yaml.Node, text: str) -> ScenarioError:
        return ScenarioError(f"{self.name}:{node.start_mark.line + 1}: {text}")

    def visit(self, node: yaml.Node, loc: Loc) -> None:
        if id(node) in self.seen or node.tag == "tag:yaml.org,2002:merge":
            raise self.fail(node, "anchors, aliases and merge keys are not allowed in a scenario")
        self.seen.add(id(node))
        if len(self.seen) > _MAX_NODES:
            raise self.fail(node, f"more than {_MAX_NODES} values")
        if len(loc) > _MAX_DEPTH:
            raise self.fail(node, f"nested deeper than {_MAX_DEPTH} levels")
        self.lines[loc] = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode):
            if node.style is None and _SEXAGESIMAL.fullmatch(node.value):
                node.tag = _STR_TAG  # "1:30" is a time of day here, not the integer 90
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.visit(item, (*loc, index))
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode):
                    raise self.fail(key, "a mapping key must be a plain name")
                self.seen.add(id(key))
                self.visit(value, (*loc, key.value))

    def line_of(self, loc: Sequence[int | str]) -> int:
        steps = tuple(loc)
        while steps and steps not in self.lines:
            steps = steps[:-1]
        return self.lines.get(steps, 1)


def _document(text: str, name: str) -> tuple[Any, _Walk]:
    walk = _Walk(name)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError(f"{name}:1: empty: a scenario is a mapping with version: 1")
        walk.visit(node, ())
        return loader.construct_document(node), walk
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise ScenarioError(f"{name}:{line}: not YAML or JSON: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{name}:1: not YAML or JSON: {exc}") from None
    finally:
        loader.dispose()


def _message(walk: _Walk, exc: ValidationError) -> str:
    lines = []
    errors = exc.errors(include_url=False)
    for error in errors[:_MAX_ERRORS]:
        loc = tuple(error["loc"])
        path = field_path(loc) or "(the scenario)"
        text = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
        lines.append(f"{walk.name}:{walk.line_of(loc)}: {path}: {text}")
    if len(errors) > _MAX_ERRORS:
        lines.append(f"{walk.name}: ... and {len(errors) - _MAX_ERRORS} more")
    return "\n".join(lines)


def parse_scenario(text: str, name: str = "scenario") -> Scenario:
    """The scenario in ``text`` (YAML or JSON; ``name`` names it in errors), validated."""
    if len(text.encode()) > MAX_BYTES:
        raise ScenarioError(f"{name}: larger than {MAX_BYTES} bytes")
    data, walk = _document(text, name)
    if not isinstance(data, dict):
        raise ScenarioError(f"{name}:1: must be a mapping with version: 1 and a timeline")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_message(walk, exc)) from None


def scenario_document(text: str, name: str = "scenario") -> dict[str, Any]:
    """The document in ``text`` once it passed ``parse_scenario``: what ``PUT /emulator/scenario``
    takes as JSON (a client that plays a file on a running emulator sends this)."""
    parse_scenario(text, name)
    data, _walk = _document(text, name)
    return dict(data)


def read_scenario_text(path: Path | str) -> str:
    """The text of the scenario file at ``path``: UTF-8, at most ``MAX_BYTES`` (a ScenarioError naming
    the file)."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise ScenarioError(f"{path.name}: larger than {MAX_BYTES} bytes")
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise ScenarioError(f"{path.name}: not UTF-8 text") from None
    return text


def load_scenario(path: Path | str) -> Scenario:
    """The scenario in the file at ``path`` (a ScenarioError naming the file and line)."""
    return parse_scenario(read_scenario_text(path), Path(path).name)


def scenario_schema() -> dict[str, Any]:
    """The JSON schema of a scenario file (served at ``/emulator/scenario/schema``)."""
    return Scenario.model_json_schema()


def scenario_schema_text() -> str:
    """The schema as published in docs/scenario.schema.json (``python -m vertex_emulator.scenario``)."""
    return json.dumps(scenario_schema(), indent=2, sort_keys=True) + "\n"
