"""Capacity settings: the ``/emulator/capacity`` admin endpoint (GET/PUT, validated, field-named 400s,
finite numbers only), ``--capacity-file`` and the flags (flags over the file), and the quota metric
names the service's messages use."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from capacity_support import A100, admin

from vertex_emulator.capacity.gpus import quota_metric, spec_gpus
from vertex_emulator.capacity.settings import capacity_to_json
from vertex_emulator.cli import parse_config
from vertex_emulator.core.config import Capacity
from vertex_emulator.testing import running_emulator

DEFAULTS = {
    "quota": {},
    "preemptible_quota": {},
    "stock": {},
    "spot_stock": {},
    "flex_start_stock": {},
    "stockout_after_s": 60.0,
    "over_quota": "queue",
    "spot_preemptions_per_hour": 0.0,
    "spot_preempt_after_s": None,
    "spot_restart_limit": 6,
    "spot_notice_s": 30.0,
}


def _put_raw(em: Any, text: str) -> tuple[int, Any]:
    """A PUT of raw JSON text (NaN and Infinity, which ``json.dumps`` writes too, but tests state)."""
    request = urllib.request.Request(
        em.rest_endpoint + "/emulator/capacity", data=text.encode(), method="PUT"
    )
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_admin_endpoint_reads_changes_and_validates(tmp_path: Path) -> None:
    with running_emulator(tmp_path) as em:
        assert admin(em, "GET", "/emulator/capacity") == (200, DEFAULTS)
        change = {
            "quota": {"us-central1": {A100: 8, "NVIDIA_L4": 4}},
            "stock": {"us-central1": {A100: 0}},
            "over_quota": "refuse",
            "spot_preempt_after_s": 1.5,
        }
        status, settings = admin(em, "PUT", "/emulator/capacity", change)
        assert status == 200 and settings == {**DEFAULTS, **change}
        assert em.config.capacity.quota == change["quota"]  # the running emulator's settings
        assert admin(em, "PUT", "/emulator/capacity", settings) == (200, settings)  # GET -> PUT round trip

        for bad, fragment in [
            ({"quotas": {}}, "quotas: unknown capacity setting"),
            (
                {"quota": {"us-central1": {"A100": 1}}},
                "quota.us-central1: 'A100' is not an AcceleratorType name",
            ),
            (
                {"quota": {"us-central1": {A100: -1}}},
                f"quota.us-central1.{A100}: must be from 0 to 2147483647",
            ),
            ({"stock": {"us-central1": {A100: True}}}, f"stock.us-central1.{A100}: must be an integer"),
            ({"stock": {"us-central1": {A100: 1.5}}}, f"stock.us-central1.{A100}: must be an integer"),
            ({"spot_stock": {"US Central": {A100: 1}}}, "spot_stock: 'US Central' is not a region name"),
            ({"flex_start_stock": [1]}, "flex_start_stock: must map a region"),
            ({"over_quota": "wait"}, "over_quota: must be one of queue, refuse"),
            ({"stockout_after_s": -1}, "stockout_after_s: must be from 0"),
            ({"spot_notice_s": "30s"}, "spot_notice_s: must be a number of seconds"),
            ({"spot_restart_limit": 1.0}, "spot_restart_limit: must be an integer"),
            ({"spot_preemptions_per_hour": 3601}, "spot_preemptions_per_hour: must be from 0 to 3600"),
        ]:
            status, err = admin(em, "PUT", "/emulator/capacity", bad)
            assert status == 400 and err["error"]["status"] == "INVALID_ARGUMENT", (bad, err)
            assert fragment in err["error"]["message"], (bad, err)
        for text, name in [
            ('{"stockout_after_s": NaN}', "stockout_after_s: must be a finite number"),
            ('{"spot_notice_s": Infinity}', "spot_notice_s: must be a finite number"),
            (
                '{"spot_preemptions_per_hour": -Infinity}',
                "spot_preemptions_per_hour: must be a finite number",
            ),
        ]:
            status, err = _put_raw(em, text)
            assert status == 400 and name in err["error"]["message"], err
        assert admin(em, "GET", "/emulator/capacity") == (200, settings)  # a bad PUT changes nothing


def test_the_capacity_file_and_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "capacity.json"
    path.write_text(
        json.dumps(
            {
                "quota": {"us-central1": {A100: 8}, "europe-west4": {"NVIDIA_L4": 2}},
                "stock": {"us-central1": {A100: 0}},
                "stockout_after_s": 600,
                "spot_restart_limit": 3,
            }
        )
    )
    config = parse_config(
        [
            "--capacity-file",
            str(path),
            "--quota",
            "us-central1/NVIDIA_L4=4",
            "--quota",
            f"us-central1/{A100}=16",
            "--spot-stock",
            f"us-east1/{A100}=2",
            "--stockout-after",
            "5",
            "--over-quota",
            "refuse",
            "--spot-preempt-after",
            "120",
        ]
    )
    assert capacity_to_json(config.capacity) == {
        **DEFAULTS,
        "quota": {"us-central1": {A100: 16, "NVIDIA_L4": 4}, "europe-west4": {"NVIDIA_L4": 2}},
        "stock": {"us-central1": {A100: 0}},
        "spot_stock": {"us-east1": {A100: 2}},
        "stockout_after_s": 5.0,
        "over_quota": "refuse",
        "spot_preempt_after_s": 120.0,
        "spot_restart_limit": 3,
    }
    assert capacity_to_json(parse_config([]).capacity) == DEFAULTS  # default: unlimited

    for argv, fragment in [
        (
            ["--quota", "us-central1/A100=1"],
            "--quota (quota).us-central1: 'A100' is not an AcceleratorType name",
        ),
        (["--stock", "us-central1=1"], "expected REGION/ACCELERATOR=N"),
        (["--stockout-after", "nan"], "--stockout-after (stockout_after_s): must be a finite number"),
        (["--capacity-file", str(tmp_path / "missing.json")], "--capacity-file: cannot read"),
    ]:
        with pytest.raises(SystemExit):
            parse_config(argv)
        assert fragment in capsys.readouterr().err, argv
    path.write_text('{"stock": {"us-central1": {"NVIDIA_TESLA_A100": "lots"}}}')
    with pytest.raises(SystemExit):
        parse_config(["--capacity-file", str(path)])
    assert f"stock.us-central1.{A100}: must be an integer" in capsys.readouterr().err


def test_quota_metric_names_and_gpu_counts() -> None:
    """The metric names the service's quota errors carry: Google's notebook helper's suffixes, and the
    names users quote for the others (K80, P4, TPU v2)."""
    prefix = "aiplatform.googleapis.com/custom_model_training_"
    assert quota_metric("NVIDIA_L4") == prefix + "nvidia_l4_gpus"
    assert quota_metric("NVIDIA_H100_80GB") == prefix + "nvidia_h100_gpus"
    assert quota_metric("NVIDIA_A100_80GB", preemptible=True) == prefix + "preemptible_nvidia_a100_80gb_gpus"
    assert quota_metric("NVIDIA_TESLA_K80") == prefix + "nvidia_k80_gpus"
    assert quota_metric("NVIDIA_TESLA_P4") == prefix + "nvidia_p4_gpus"
    assert quota_metric("TPU_V2") == prefix + "tpu_v2"
    spec = {
        "workerPoolSpecs": [
            {
                "machineSpec": {
                    "machineType": "a2-highgpu-2g",
                    "acceleratorType": A100,
                    "acceleratorCount": 2,
                },
                "replicaCount": "1",
            },
            {
                "machineSpec": {
                    "machineType": "a2-highgpu-2g",
                    "acceleratorType": A100,
                    "acceleratorCount": 2,
                },
                "replicaCount": "3",
            },
            {},
            {"machineSpec": {"machineType": "n1-highcpu-16"}, "replicaCount": "2"},
        ]
    }
    assert spec_gpus(spec) == {A100: 8}
    assert capacity_to_json(Capacity()) == DEFAULTS  # unlimited by default: every map empty


def test_the_settings_table_of_the_page_is_the_code() -> None:
    """docs/emulator.md's capacity table: one row per setting, its flag is the CLI's (the flag's
    ``dest`` is the field), and its default is the dataclass's."""
    from vertex_emulator.cli import build_parser

    page = (Path(__file__).resolve().parents[2] / "docs" / "emulator.md").read_text()
    table = page.split("## Capacity\n", 1)[1].split("| field | flag | default |", 1)[1].split("\n\n", 1)[0]
    rows = [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in table.splitlines()[2:]]
    dests = {opt: action.dest for action in build_parser()._actions for opt in action.option_strings}
    shown: dict[str, Any] = {"unlimited": {}, "never": None, "`queue`": "queue"}
    assert [row[0].strip("`") for row in rows] == list(DEFAULTS)
    for field, flag, default, _ in rows:
        name = field.strip("`")
        assert dests[flag.strip("`").split()[0]] == name, flag
        expected = shown[default] if default in shown else float(default)
        assert DEFAULTS[name] == expected, (name, default)


def test_the_pytest_plugin_starts_an_emulator_with_capacity(vertex_emulator_factory: Any) -> None:
    import vertex_emulator

    capacity = vertex_emulator.Capacity(stock={"us-central1": {A100: 0}}, stockout_after_s=5)
    em = vertex_emulator_factory(capacity=capacity)
    status, settings = admin(em, "GET", "/emulator/capacity")
    assert status == 200 and settings["stock"] == {"us-central1": {A100: 0}}
    assert settings["stockout_after_s"] == 5
