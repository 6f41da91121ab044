"""The settings models (``FaultSettings``, ``CapacitySettings``): one validation path, so a bad value
gets the same error naming the field whichever way it comes (a CLI flag, ``--capacity-file``, a PUT
to the admin API), and the JSON schema the admin API serves at ``<path>/schema`` describes the
settings its GET returns."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from capacity_support import A100, admin

from vertex_emulator.capacity.settings import CapacitySettings, capacity_to_json
from vertex_emulator.cli import parse_config
from vertex_emulator.core.config import Capacity, Faults
from vertex_emulator.core.faults import FaultSettings, faults_to_json
from vertex_emulator.testing import running_emulator


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The usage error ``argv`` gets (argparse's last line, after ``vertex-emulator: error: ``)."""
    with pytest.raises(SystemExit):
        parse_config(argv)
    return capsys.readouterr().err.strip().splitlines()[-1].split("error: ", 1)[1]


def test_the_models_defaults_are_the_runtime_objects() -> None:
    """The models' defaults (what their schema shows) are the dataclasses' (what a new emulator runs)."""
    assert FaultSettings().model_dump() == faults_to_json(Faults())
    assert CapacitySettings().model_dump() == capacity_to_json(Capacity())


@pytest.mark.parametrize(
    ("field", "flag", "value", "rule"),
    [
        ("spot_restart_limit", "--spot-restart-limit", -1, "must be from 0 to 2147483647 (got -1)"),
        ("stockout_after_s", "--stockout-after", -5.0, "must be from 0 to 3.1536e+08 (got -5.0)"),
    ],
)
def test_one_bad_capacity_value_one_error_through_cli_file_and_admin_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, flag: str, value: Any, rule: str
) -> None:
    by_flag = _cli_error([flag, str(value)], capsys)
    path = tmp_path / "capacity.json"
    path.write_text(json.dumps({field: value}))
    by_file = _cli_error(["--capacity-file", str(path)], capsys)
    with running_emulator(tmp_path / "em") as em:
        status, err = admin(em, "PUT", "/emulator/capacity", {field: value})
    assert status == 400 and err["error"]["status"] == "INVALID_ARGUMENT", err
    by_api = err["error"]["message"]
    assert by_api == by_file == f"{field}: {rule}"
    assert by_flag == f"{flag} ({field}): {rule}"  # the flag named too, where a flag gave it


def test_one_bad_fault_value_one_error_through_cli_and_admin_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = "error_rate.GetCustomJob: must be between 0 and 1 (got 1.5)"
    assert _cli_error(["--fault-rate", "GetCustomJob=1.5"], capsys) == expected
    with running_emulator(tmp_path) as em:
        status, err = admin(em, "PUT", "/emulator/faults", {"error_rate": {"GetCustomJob": 1.5}})
    assert status == 400 and err["error"]["message"] == expected, err


def _check_declared(schema: dict[str, Any], body: dict[str, Any]) -> None:
    """What the schema declares of each top-level field, checked by hand: the body has exactly the
    declared fields (no others are allowed), each of its declared JSON type."""
    types = {"object": dict, "array": list, "number": (int, float), "integer": int, "string": str}
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(body) == set(schema["properties"])
    for name, value in body.items():
        declared = schema["properties"][name]
        options = [declared, *declared.get("anyOf", [])]
        kinds = [types[o["type"]] if o["type"] != "null" else type(None) for o in options if "type" in o]
        assert any(isinstance(value, kind) for kind in kinds), (name, value, declared)


@pytest.mark.parametrize(
    ("path", "change"),
    [
        (
            "/emulator/faults",
            {"error_rate": {"*": 0.25}, "error_codes": ["INTERNAL", "UNAVAILABLE"], "seed": 3},
        ),
        (
            "/emulator/capacity",
            {"quota": {"us-central1": {A100: 8}}, "over_quota": "refuse", "spot_preempt_after_s": 5},
        ),
    ],
)
def test_the_admin_api_serves_each_settings_schema(tmp_path: Path, path: str, change: dict[str, Any]) -> None:
    with running_emulator(tmp_path) as em:
        status, schema = admin(em, "GET", path + "/schema")
        assert status == 200, schema
        status, body = admin(em, "PUT", path, change)
        assert status == 200, body
        assert admin(em, "PUT", path + "/schema", change)[0] == 404  # the schema is read-only
    model = FaultSettings if path == "/emulator/faults" else CapacitySettings
    assert schema == json.loads(json.dumps(model.model_json_schema()))
    _check_declared(schema, body)
    if importlib.util.find_spec("jsonschema") is not None:  # a full check where the package is at hand
        import jsonschema

        jsonschema.validate(body, schema)
        bad = {**body, next(iter(change)): "not a setting's type"}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
