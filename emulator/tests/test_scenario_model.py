"""Scenario files: the model's rules (those of the capacity and fault settings, reused), times, errors
naming the file, the line and the field path, bounded input, the example file and docs/emulator.md's
example, the published JSON schema (stale: this test fails) and ``--scenario`` on the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vertex_emulator.cli import parse_config
from vertex_emulator.scenario.loader import (
    MAX_BYTES,
    ScenarioError,
    load_scenario,
    parse_scenario,
    scenario_schema_text,
)
from vertex_emulator.scenario.model import KINDS, MAX_EVENTS, parse_time

ROOT = Path(__file__).resolve().parents[2]
A100 = "NVIDIA_TESLA_A100"


def _errors(text: str, name: str = "night.yaml") -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, name)
    return str(caught.value).splitlines()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [(0, 0.0), (90.5, 90.5), ("01:00", 3600.0), ("1:30", 5400.0), ("26:00:30", 93630.0),
     ("+90m", 5400.0), ("+1h30m", 5400.0), ("+20s", 20.0), ("+1.5h", 5400.0)],
)  # fmt: skip
def test_scenario_times(text: object, seconds: float) -> None:
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["+", "1h", "01:60", "-5", -5, True, None, "+5x", float("nan"), 1e12])
def test_bad_scenario_times(text: object) -> None:
    with pytest.raises(ValueError, match="must be"):
        parse_time(text)


def test_unquoted_hours_and_minutes_are_a_time_not_yaml_sexagesimal() -> None:
    scenario = parse_scenario("version: 1\ntimeline:\n  - at: 1:30\n    stockout_after_s: 5\n")
    assert scenario.timeline[0].at == 5400.0  # YAML 1.1 alone would read 90


def test_errors_name_the_file_the_line_the_field_and_the_rule() -> None:
    text = """version: 1
compression: 0.5
timeline:
  - at: 0
    stock: {region: us-central1, accelerator: NVIDIA_TESLA_A100, count: 0}
  - at: "01:00"
    stock:
      region: us-central1
      accelerator: NOPE
      count: -1
  - at: 10
    until: 5
    quota: {region: us-central1, accelerator: NVIDIA_TESLA_A100, count: 1}
  - at: 1
    bogus: 3
  - at: 2
    api_faults: {error_rate: {GetCustomJob: 2}, error_codes: [NOPE]}
  - at: 3
    stock: {region: us-central1, accelerator: NVIDIA_TESLA_A100, count: 1}
    quota: {region: us-central1, accelerator: NVIDIA_TESLA_A100, count: 1}
  - at: 4
    until: 9
    preempt: {labels: {team: vision}}
"""
    errors = _errors(text)
    assert errors[0] == "night.yaml:2: compression: must be from 1 to 10000 (got 0.5)"
    assert errors[1].startswith(
        "night.yaml:9: timeline[1].stock.accelerator: 'NOPE' is not an AcceleratorType"
    )
    assert errors[2] == "night.yaml:10: timeline[1].stock.count: must be from 0 to 2147483647 (got -1)"
    assert errors[3] == "night.yaml:11: timeline[2]: until (5s) must come after at (10s)"
    assert errors[4] == "night.yaml:15: timeline[3].bogus: unknown field"
    assert (
        errors[5]
        == "night.yaml:17: timeline[4].api_faults.error_rate.GetCustomJob: must be between 0 and 1 (got 2)"
    )
    assert errors[6].startswith(
        "night.yaml:17: timeline[4].api_faults.error_codes[0]: unknown status code 'NOPE'"
    )
    assert errors[7] == (
        "night.yaml:18: timeline[5]: must set exactly one kind of event (got quota, stock; "
        f"kinds: {', '.join(KINDS)})"
    )
    assert errors[8] == "night.yaml:21: timeline[6]: a preempt event happens once: it takes no until"
    assert len(errors) == 9


def test_json_goes_through_the_same_loader_with_lines() -> None:
    text = json.dumps({"version": 1, "timeline": [{"at": 0, "stock": {"region": "us-central1"}}]}, indent=1)
    errors = _errors(text, "night.json")
    assert (
        errors[0] == "night.json:6: timeline[0].stock.accelerator: Field required"
    )  # the mapping missing it
    scenario = parse_scenario(json.dumps({"version": 1, "timeline": [{"at": "+20s", "stockout_after_s": 1}]}))
    assert scenario.timeline[0].at == 20.0 and scenario.compression == 1.0


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("version: 2\n", "night.yaml:1: version: must be 1, the only scenario format (got 2)"),
        ("", "night.yaml:1: empty: a scenario is a mapping with version: 1"),
        ("- 1\n", "night.yaml:1: must be a mapping with version: 1 and a timeline"),
        ("version: [1\n", "night.yaml:2: not YAML or JSON: expected ',' or ']', but got '<stream end>'"),
        ("a: &x [1]\nb: *x\n", "night.yaml:1: anchors, aliases and merge keys are not allowed in a scenario"),
        ("compression: 2\n", "night.yaml:1: version: Field required"),
    ],
)
def test_what_is_not_a_scenario(text: str, error: str) -> None:
    assert _errors(text)[0] == error


def test_input_is_bounded(tmp_path: Path) -> None:
    events = [{"at": i, "stockout_after_s": 1} for i in range(MAX_EVENTS + 1)]
    errors = _errors(json.dumps({"version": 1, "timeline": events}))
    assert errors[0].startswith(f"night.yaml:1: timeline: List should have at most {MAX_EVENTS} items")
    assert _errors("#" * (MAX_BYTES + 1)) == [f"night.yaml: larger than {MAX_BYTES} bytes"]
    big = tmp_path / "big.yaml"
    big.write_text("#" * (MAX_BYTES + 1))
    with pytest.raises(ScenarioError, match=f"big.yaml: larger than {MAX_BYTES} bytes"):
        load_scenario(big)
    nested = "version: 1\nx: " + "[" * 40 + "]" * 40 + "\n"
    assert _errors(nested) == ["night.yaml:2: nested deeper than 32 levels"]
    with pytest.raises(ScenarioError, match="missing.yaml: cannot read"):
        load_scenario(tmp_path / "missing.yaml")


def test_the_example_file_and_the_docs_example_load() -> None:
    example = load_scenario(ROOT / "emulator" / "scenarios" / "overnight-a100-stockout.yaml")
    assert example.compression == 60
    assert [(e.at, e.until, e.kind) for e in example.timeline] == [
        (0, None, "quota"),
        (0, None, "preemptible_quota"),
        (0, None, "stockout_after_s"),
        (3600, 14400, "stock"),
        (7200, 10800, "spot_preemptions_per_hour"),
        (9000, None, "preempt"),
        (10800, 21600, "job_outcome"),
        (14400, None, "delays"),
        (18000, 18600, "api_faults"),
    ]
    page = (ROOT / "docs" / "emulator.md").read_text()
    section = page.split("## Scenarios\n", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    docs = parse_scenario(block[1], "docs/emulator.md")
    assert docs.compression == 10 and [e.kind for e in docs.timeline] == [
        "stockout_after_s",
        "stock",
        "stock",
    ]
    assert [(e.at, e.until) for e in docs.timeline] == [(0, None), (0, 20), (20, None)]
    # every kind the model has is a row of the page's table of kinds
    assert re.findall(r"^\| `(\w+)` \|", section.split("\n## ", 1)[0], re.M) == list(KINDS)


def test_the_published_schema_is_the_models() -> None:
    published = (ROOT / "docs" / "scenario.schema.json").read_text()
    assert published == scenario_schema_text(), (
        "stale: python -m vertex_emulator.scenario > docs/scenario.schema.json"
    )


def test_the_command_line_reads_the_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "night.yaml"
    path.write_text(f"version: 1\ncompression: 10\ntimeline:\n  - at: 5\n    stock: {{region: us-central1, "
                    f"accelerator: {A100}, count: 0}}\n")  # fmt: skip
    config = parse_config(["--scenario", str(path)])
    assert getattr(config.scenario, "compression", None) == 10
    path.write_text("version: 1\ntimeline:\n  - at: soon\n    stockout_after_s: 1\n")
    with pytest.raises(SystemExit):
        parse_config(["--scenario", str(path)])
    assert "--scenario: night.yaml:3: timeline[0].at: must be seconds" in capsys.readouterr().err


def test_check_prints_the_put_body_or_the_errors_with_their_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m vertex_emulator.scenario check FILE``: a good file as the JSON body of
    ``PUT /emulator/scenario`` (the same scenario once parsed again), a bad one refused naming its line."""
    from vertex_emulator.scenario.__main__ import main
    from vertex_emulator.scenario.loader import load_scenario, parse_scenario

    example = Path(__file__).resolve().parents[1] / "scenarios" / "overnight-a100-stockout.yaml"
    assert main(["check", str(example)]) == 0
    body = json.loads(capsys.readouterr().out)
    assert parse_scenario(json.dumps(body)) == load_scenario(example)
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntimeline:\n  - at: 0\n    stock: {region: us-central1, count: -1}\n")
    assert main(["check", str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("bad.yaml:4: timeline[0].stock.")
