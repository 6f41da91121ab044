"""The catalog's machine types derived from Google's "Configure compute resources" page stored as data
(``catalog/configure_compute_page.json``, read by ``scripts/catalog_page.py``): the generated catalogs
hold exactly what the page gives (every machine type it lists, none it does not; the GPUs and counts of
its table; its TPU machine types, topologies, counts and pool rule; its boot disk options), and what the
page does not give is refused on both sides."""

from __future__ import annotations

import copy
import sys
from typing import Any

import pytest

from tests.test_catalog import GEN

_URL = "https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/configure-compute"


def _page_module() -> Any:
    return sys.modules["catalog_page"]


def _page() -> dict[str, Any]:
    return copy.deepcopy(_page_module().load_page())


def _catalogs() -> list[Any]:
    from airflow_vertex_dist._generated import catalog as provider
    from vertex_emulator._generated import catalog as emulator

    return [provider, emulator]


def test_the_stored_page_names_its_address_and_the_date_read() -> None:
    page = _page()
    assert page["url"] == _URL and page["read"] == "2026-12-07"
    for key, table in page["tables"].items():
        assert table["section"], key
        for row in table.get("rows", ()) if "columns" in table else ():
            assert len(row) == len(table["columns"]), (key, row)


@pytest.mark.parametrize("side", ["provider", "emulator"])
def test_every_machine_type_the_page_gives_and_none_it_does_not(side: str) -> None:
    catalog = _catalogs()[side == "emulator"]
    derived = _page_module().derive(_page())
    listed = [row[0] for row in _page()["tables"]["machine_types"]["rows"]]
    assert len(listed) == 113 and len(set(listed)) == 113
    assert set(catalog.MACHINE_SERIES) == set(derived["machine_types"])
    assert set(derived["machine_types"]) - set(listed) == {
        "ct6e-standard-1t",
        "ct6e-standard-4t",
        "ct6e-standard-8t",
        "tpu7x-standard-4t",
    }  # the TPU v6e and 7x sections name their machine types in their tables only


@pytest.mark.parametrize("side", ["provider", "emulator"])
def test_the_gpus_and_counts_are_the_pages_table(side: str) -> None:
    catalog = _catalogs()[side == "emulator"]
    table = dict(_page()["tables"]["gpu_counts"]["rows"])
    taken = {m: {g: tuple(c) for g, c in row.items()} for m, row in table.items()}
    assert {m: dict(t) for m, t in catalog.ATTACHABLE.items()} == {
        m: t for m, t in taken.items() if catalog.MACHINE_SERIES[m] == "n1"
    }
    assert catalog.BUILT_IN == {
        m: next(iter((g, c[0]) for g, c in t.items()))
        for m, t in taken.items()
        if m not in catalog.ATTACHABLE
    }
    assert catalog.ATTACHABLE["n1-standard-32"]["NVIDIA_TESLA_T4"] == (2, 4)
    assert catalog.BUILT_IN["g4-standard-384"] == ("NVIDIA_RTX_PRO_6000", 8)


def test_each_value_of_the_gpu_table_is_in_the_column_the_copy_has_it_in_order() -> None:
    """The stored copy drops the table's empty cells: each resolved row, read in column order, is the row
    as stored."""
    table = _page()["tables"]["gpu_counts"]
    for machine, row in table["rows"]:
        cells = [", ".join(map(str, row[g])) for g in table["gpu_columns"] if g in row]
        assert cells == table["as_stored"][machine], machine
    assert set(table["as_stored"]) == {machine for machine, _ in table["rows"]}


def test_an_n1_row_lacks_p100_exactly_where_the_pages_p100_limit_says() -> None:
    """The page: 4 x P100 'only provides up to 64 virtual CPUs and up to 208 GB of memory'; the N1
    shapes' memory per vCPU are Compute Engine's (the catalog's n1 series)."""
    table = _page()["tables"]["gpu_counts"]
    limit = table["p100_limit"]
    ratios = GEN.json.loads(GEN.SOURCE.read_text())["series"]["n1"]["memory_gb_per_vcpu"]
    n1 = [(machine, row) for machine, row in table["rows"] if machine.startswith("n1-")]
    assert len(n1) == 17
    for machine, row in n1:
        shape, vcpus = machine.split("-")[1], int(machine.split("-")[2])
        fits = vcpus <= limit["vcpus"] and vcpus * ratios[shape] <= limit["memory_gb"]
        assert ("NVIDIA_TESLA_P100" in row) == fits, machine


@pytest.mark.parametrize("side", ["provider", "emulator"])
def test_the_tpu_machines_topologies_counts_and_pools_are_the_pages(side: str) -> None:
    catalog = _catalogs()[side == "emulator"]
    derived = _page_module().derive(_page())
    assert catalog.TPU_TOPOLOGIES == {name: vm["topologies"] for name, vm in derived["tpu_vms"].items()}
    for name, vm in derived["tpu_vms"].items():
        assert catalog.TPU_MACHINES[name][1:] == (vm["chips"], False)
    assert catalog.TPU_MACHINES["cloud-tpu"] == (("TPU_V2", "TPU_V3"), 8, True)
    assert catalog.CLOUD_TPU_COUNTS == {"TPU_V2": (8, 32, 32), "TPU_V3": (8, 32, 1)}
    assert catalog.TPU_POOLS == (1, 1)
    assert catalog.TPU_TOPOLOGIES["tpu7x-standard-4t"]["8x8x16"] == 256
    assert catalog.TPU_TOPOLOGIES["ct5lp-hightpu-4t"]["16x16"] == 64
    assert catalog.TPU_MACHINES["ct5lp-hightpu-8t"] == (("TPU_V5_LITEPOD",), 8, False)
    assert catalog.TPU_MACHINES["tpu7x-standard-4t"] == ((), 4, False)


@pytest.mark.parametrize("side", ["provider", "emulator"])
def test_the_boot_disk_options_are_the_pages(side: str) -> None:
    catalog = _catalogs()[side == "emulator"]
    disk = _page()["tables"]["boot_disk"]
    assert set(catalog.BOOT_DISK_TYPES) == set(disk["types"])
    assert catalog.DEFAULT_BOOT_DISK_TYPE == disk["default"]
    assert catalog.BOOT_DISK_SIZE_GB == tuple(disk["size_gb"])
    assert catalog.BOOT_DISK_SIZE_DEFAULT_GB == disk["size_default_gb"]
    for machine, default in disk["default_for"].items():
        assert catalog.SERIES_BOOT_DISK_DEFAULT[catalog.MACHINE_SERIES[machine]] == default


def test_a_topology_whose_chips_are_not_its_rows_is_an_error() -> None:
    page = _page()
    page["tables"]["tpu7x"]["rows"][0][2] = 8  # 2x2x1 is 4 chips
    with pytest.raises(ValueError, match="tpu7x-standard-4t 2x2x1"):
        _page_module().derive(page)


def test_a_machine_type_no_series_claims_is_an_error() -> None:
    page = _page()
    page["tables"]["machine_types"]["rows"].append(["z9-standard-4", False])
    raw = GEN.json.loads(GEN.SOURCE.read_text())
    with pytest.raises(ValueError, match="z9-standard-4, which no series"):
        _page_module().merge(raw, _page_module().derive(page))


def test_a_series_the_page_gives_nothing_is_an_error() -> None:
    raw = GEN.json.loads(GEN.SOURCE.read_text())
    raw["series"]["n9"] = {"prefixes": ["n9-"], "gpus": "none", "boot_disk_types": ["pd-ssd"], "sources": []}
    with pytest.raises(ValueError, match="series.n9: the page gives none"):
        _page_module().merge(raw, _page_module().derive(_page()))


def test_a_built_in_gpu_row_of_two_gpus_is_an_error() -> None:
    page = _page()
    rows = dict(page["tables"]["gpu_counts"]["rows"])
    rows["g2-standard-4"]["NVIDIA_TESLA_T4"] = [1]
    page["tables"]["gpu_counts"]["rows"] = list(rows.items())
    raw = GEN.json.loads(GEN.SOURCE.read_text())
    with pytest.raises(ValueError, match="g2-standard-4: series g2 comes with its GPUs"):
        _page_module().merge(raw, _page_module().derive(page))


@pytest.mark.parametrize(
    "machine_type",
    [
        "ct5p-hightpu-4t",
        "ct4p-hightpu-4t",
        "n4-standard-96",
        "e2-standard-2",
        "n1-standard-2",
        "n2d-standard-4",
        "c2d-standard-4",
        "c3-standard-4",
        "a3-edgegpu-8g",
    ],
)
def test_machine_types_the_page_does_not_give_are_refused_on_both_sides(machine_type: str) -> None:
    """TPU v5p and v4 have no section on the page; N4 goes up to 80 vCPUs, E2 and N1 standard start at 4;
    N2D, C2D, C3 and A3 Edge are not on the page (docs/emulator.md names them)."""
    from airflow_vertex_dist.specs._catalog_rules import machine_type_rule
    from vertex_emulator.rules import machines

    assert machine_type_rule(machine_type) is not None
    found = machines.machine_problems({"machineType": machine_type}, "us-central1", "m")
    assert found == [f'm.machine_type: Machine type "{machine_type}" is not supported.']


@pytest.mark.parametrize(
    "spec",
    [
        {"machineType": "n4-highmem-80"},
        {"machineType": "tpu7x-standard-4t", "tpuTopology": "4x4x4"},
        {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "8x16"},
        {"machineType": "g4-standard-96", "acceleratorType": "NVIDIA_RTX_PRO_6000", "acceleratorCount": 2},
        {"machineType": "cloud-tpu", "acceleratorType": "TPU_V2", "acceleratorCount": 96},
    ],
)
def test_machines_the_page_gives_are_accepted_on_both_sides(spec: dict[str, Any]) -> None:
    from airflow_vertex_dist.specs import Machine
    from vertex_emulator.rules import machines

    Machine.model_validate(
        {
            "machine_type": spec["machineType"],
            "accelerator_type": spec.get("acceleratorType"),
            "accelerator_count": spec.get("acceleratorCount", 0),
            "tpu_topology": spec.get("tpuTopology"),
        }
    )
    assert machines.machine_problems(spec, "us-central1", "m") == []
