"""Write the scenario file reference (docs/reference/scenario.md) from the scenario model's JSON schema
(``vertex_emulator.scenario.loader.scenario_schema``, the schema ``GET /emulator/scenario/schema``
answers and docs/scenario.schema.json publishes), so the page names every field the emulator reads,
with its type, bounds, default and meaning, and cannot drift from the model.

The tables live between two markers of the page; the prose around them is written by hand. Run from
the checkout's root: ``python scripts/scenario_md.py``; ``--check`` fails when the tables are stale
(tests/test_reference_tables.py runs the check).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from marked_page import (  # scripts/ is on the path: run as a script, or by the tests
    replace_marked,
    write_or_check,
)

__all__ = ["END", "ORDER", "PAGE", "START", "main", "tables", "type_text", "updated"]

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reference" / "scenario.md"
START = "<!-- scenario-fields:start (written by scripts/scenario_md.py from the scenario model) -->"
END = "<!-- scenario-fields:end -->"
#: the objects in reading order: the file, an event, then what an event's kinds hold
ORDER = ("Scenario", "Event", "Gpus", "Preempt", "JobOutcome", "Delays", "ApiFaults")


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _bounds(node: Mapping[str, Any]) -> str:
    low, high = node.get("minimum"), node.get("maximum")
    if low is not None and high is not None:
        return f" {_number(low)} to {_number(high)}"
    if low is not None:
        return f" ≥ {_number(low)}"
    return ""


def _is_time(node: Mapping[str, Any]) -> bool:
    """The schema of a scenario time: seconds, or the text of one (``"HH:MM"``, ``"+90m"``)."""
    parts = node.get("anyOf", ())
    return len(parts) == 2 and parts[0].get("type") == "number" and "pattern" in parts[1]


def type_text(node: Mapping[str, Any]) -> str:
    """A field's type as the page writes it: ``number 0 to 3,600``, ``[Event](#event) or null``..."""
    if _is_time(node):
        return "a time (above)"
    if "$ref" in node:
        name = str(node["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in node:
        parts = [type_text(part) for part in node["anyOf"]]
        return " or ".join(parts)
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{value}`" for value in node["enum"])
    kind = node.get("type", "any")
    if kind == "array":
        size = f", at most {_number(node['maxItems'])}" if "maxItems" in node else ""
        size += f", at least {_number(node['minItems'])}" if "minItems" in node else ""
        return f"list of {type_text(node.get('items', {}))}{size}"
    if kind == "object":
        values = node.get("additionalProperties")
        size = f", at most {_number(node['maxProperties'])}" if "maxProperties" in node else ""
        return f"map of string to {type_text(values) if isinstance(values, Mapping) else 'any'}{size}"
    if kind == "string":
        if "pattern" in node:
            return f"string matching `{node['pattern']}`"
        length = node.get("minLength"), node.get("maxLength")
        return f"string of {length[0]} to {length[1]} characters" if None not in length else "string"
    return f"{kind}{_bounds(node)}"


def _default(prop: Mapping[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in prop:
        return ""
    return f"`{json.dumps(prop['default'])}`"


def _object_table(name: str, node: Mapping[str, Any]) -> str:
    required = set(node.get("required", ()))
    description = " ".join(str(node.get("description", "")).split()).replace("``", "`")
    lines = [
        f"### `{name}`",
        "",
        description,
        "",
        "| field | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for field, prop in node["properties"].items():  # the model's order
        meaning = prop.get("description", "")
        cell = type_text(prop).replace("|", "\\|")
        lines.append(f"| `{field}` | {cell} | {_default(prop, field in required)} | {meaning} |")
    return "\n".join(lines)


def tables(schema: Mapping[str, Any] | None = None) -> str:
    """Every object of the scenario schema as a table, in ``ORDER``."""
    if schema is None:
        from vertex_emulator.scenario.loader import scenario_schema

        schema = scenario_schema()
    objects = {"Scenario": schema, **schema["$defs"]}
    missing = set(objects) - set(ORDER)
    if missing:
        raise ValueError(
            f"objects of the schema the page does not place: {sorted(missing)} (add them to ORDER)"
        )
    return "\n\n".join(_object_table(name, objects[name]) for name in ORDER)


def updated(page: str) -> str:
    """``page`` with the text between the markers replaced by the current tables."""
    return replace_marked(page, START, END, f"{START}\n{tables()}\n{END}", PAGE)


def main(argv: list[str] | None = None) -> int:
    return write_or_check(argv, PAGE, updated, "scenario field tables", "python scripts/scenario_md.py")


if __name__ == "__main__":
    sys.exit(main())
