"""The catalog's machine types derived from Google's pages stored as data
(``catalog/configure_compute_page.json``, read by ``scripts/catalog_page.py``): the generated catalogs
hold exactly what the stored tables give, and what no stored table gives is refused on both sides."""

from __future__ import annotations

import copy
import sys
from typing import Any

import pytest

from tests.test_catalog import GEN


@pytest.fixture
def data() -> dict[str, Any]:
    return copy.deepcopy(GEN.load())


def _page_module() -> Any:
    return sys.modules["catalog_page"]


def test_the_stored_page_names_its_address_the_date_read_and_what_it_could_not_read() -> None:
    page = _page_module().load_page()
    assert page["url"] == "https://docs.cloud.google.com/vertex-ai/docs/training/configure-compute"
    assert page["read"] == "2026-12-06"
    for key, table in {**page["tables"], **page["related"]}.items():
        assert table["section"], key
        assert table["complete"] or table["missing"], f"{key}: an incomplete table says what is missing"
        if "columns" in table:
            assert all(len(row) == len(table["columns"]) for row in table["rows"]), key


def test_the_tpu_vm_machine_types_and_topologies_are_derived_from_the_stored_page() -> None:
    """Re-derive from the stored tables: the generated catalogs hold exactly that, no more, no less."""
    from airflow_vertex_dist._generated import catalog

    derived = _page_module().derive(_page_module().load_page())
    assert catalog.TPU_TOPOLOGIES == {name: e["topologies"] for name, e in derived.items()}
    for name, entry in derived.items():
        assert catalog.TPU_MACHINES[name] == (tuple(entry["accelerators"]), entry["chips"], False)
        assert catalog.MACHINE_SERIES[name] == "tpu-vm"
    hand_kept = GEN.json.loads(GEN.SOURCE.read_text())["series"]["tpu-vm"]["tpu"]
    assert not set(hand_kept) & set(derived), "a derived machine type must not be kept by hand too"


def test_the_derivation_follows_the_tables_rows() -> None:
    derived = _page_module().derive(_page_module().load_page())
    assert derived["ct6e-standard-4t"]["topologies"] == {
        "2x2": 1,
        "4x4": 4,
        "4x8": 8,
        "8x8": 16,
        "8x16": 32,
        "16x16": 64,
    }  # 2x4 on two VMs is the GKE API's only
    assert derived["ct6e-standard-8t"] == {"accelerators": [], "chips": 8, "topologies": {"2x4": 1}}
    assert derived["ct5lp-hightpu-4t"] == {
        "accelerators": ["TPU_V5_LITEPOD"],
        "chips": 4,
        "topologies": {"2x2": 1},
    }


def test_a_table_not_read_in_full_derives_nothing() -> None:
    page = copy.deepcopy(_page_module().load_page())
    page["related"]["tpu_v6e_slices"]["complete"] = False
    assert not any(name.startswith("ct6e") for name in _page_module().derive(page))


def test_a_machine_type_both_hand_kept_and_derived_is_an_error(data: dict[str, Any]) -> None:
    derived = _page_module().derive(_page_module().load_page())
    raw = GEN.json.loads(GEN.SOURCE.read_text())
    raw["series"]["tpu-vm"]["tpu"]["ct6e-standard-1t"] = [[], 1, False]
    with pytest.raises(ValueError, match="ct6e-standard-1t"):
        _page_module().merge(raw, derived)


@pytest.mark.parametrize("machine_type", ["n4-standard-4", "ct5p-hightpu-4t", "tpu7x-standard-4t"])
def test_machine_types_no_stored_table_gives_are_refused_on_both_sides(machine_type: str) -> None:
    """docs/emulator.md: the page's machine-type list could not be read, so N4, TPU v5p and TPU7x are
    not in the catalog, and both sides refuse them (until a stored table gives them)."""
    from airflow_vertex_dist.specs._catalog_rules import machine_type_rule
    from vertex_emulator.rules import machines

    assert machine_type_rule(machine_type) is not None
    found = machines.machine_problems({"machineType": machine_type}, "us-central1", "m")
    assert found == [f'm.machine_type: Machine type "{machine_type}" is not supported.']
