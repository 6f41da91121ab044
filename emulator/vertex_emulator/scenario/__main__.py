"""``python -m vertex_emulator.scenario``: the scenario file's JSON schema (docs/scenario.schema.json)"""

from __future__ import annotations

import sys

from vertex_emulator.scenario.loader import scenario_schema_text

__all__: list[str] = []

if __name__ == "__main__":
    sys.stdout.write(scenario_schema_text())
