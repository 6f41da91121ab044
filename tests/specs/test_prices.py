"""``price_per_hour``: one replica's price per hour from the machine catalog, ``None`` where any part of
it is unknown."""

from __future__ import annotations

import pytest

from airflow_vertex_dist.specs import catalog
from airflow_vertex_dist.specs.prices import price_per_hour


def test_a_quoted_machine_price() -> None:
    assert price_per_hour("n1-standard-4", None, 0, "us-central1") == 0.21849885


def test_a_derived_machine_price_is_compute_engines_times_the_factor() -> None:
    # Compute Engine's n1-standard-8 in us-central1: 0.379998 per hour (the catalog's base figure)
    assert price_per_hour("n1-standard-8", None, 0, "us-central1") == pytest.approx(0.379998 * 1.15, abs=1e-8)
    assert price_per_hour("n1-standard-8", None, 0, "europe-west4") == pytest.approx(
        0.418336 * 1.15, abs=1e-8
    )


@pytest.mark.parametrize("no_accelerator", [None, "", "ACCELERATOR_TYPE_UNSPECIFIED"])
def test_no_accelerator_is_the_machine_price(no_accelerator: str | None) -> None:
    assert (
        price_per_hour("e2-standard-4", no_accelerator, 0, "us-east1")
        == catalog.PRICES["e2-standard-4"]["us-east1"][0]
    )
    assert price_per_hour("e2-standard-4", "NVIDIA_TESLA_T4", 0, "us-east1") is not None


def test_a_machine_with_built_in_gpus_is_priced_with_them_and_not_twice() -> None:
    """a3-highgpu-8g's price includes its eight H100s: the quoted H100 price is not added on top."""
    machine = catalog.PRICES["a3-highgpu-8g"]["us-central1"][0]
    assert "NVIDIA_H100_80GB" in catalog.PRICES and machine is not None
    assert price_per_hour("a3-highgpu-8g", "NVIDIA_H100_80GB", 8, "us-central1") == machine
    assert price_per_hour("a3-highgpu-8g", None, 0, "us-central1") == machine
    assert (
        price_per_hour("g2-standard-24", "NVIDIA_L4", 2, "us-central1")
        == catalog.PRICES["g2-standard-24"]["us-central1"][0]
    )


def test_a_built_in_machine_with_other_accelerators_has_no_price() -> None:
    assert price_per_hour("a3-highgpu-8g", "NVIDIA_H100_80GB", 4, "us-central1") is None
    assert price_per_hour("a2-highgpu-1g", "NVIDIA_A100_80GB", 1, "us-central1") is None


def test_an_attached_gpu_without_a_price_makes_the_whole_price_unknown() -> None:
    """No T4 price could be read: the replica's price is unknown, not the machine's alone."""
    assert "NVIDIA_TESLA_T4" not in catalog.PRICES
    assert price_per_hour("n1-standard-8", "NVIDIA_TESLA_T4", 1, "us-central1") is None


def test_an_attached_gpu_with_a_price_is_added_per_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        catalog.PRICES, "NVIDIA_TESLA_T4", {"us-central1": (0.4, 0.1, "2026-12-02", "pricing", "quoted")}
    )
    machine = catalog.PRICES["n1-standard-8"]["us-central1"][0]
    assert machine is not None
    assert price_per_hour("n1-standard-8", "NVIDIA_TESLA_T4", 2, "us-central1") == pytest.approx(
        machine + 0.8
    )
    assert price_per_hour("n1-standard-8", "NVIDIA_TESLA_T4", 2, "us-east1") is None  # no T4 price there


def test_spot_prices_are_unknown_until_the_catalog_has_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert price_per_hour("n1-standard-4", None, 0, "us-central1", spot=True) is None
    monkeypatch.setitem(
        catalog.PRICES,
        "n1-standard-4",
        {"us-central1": (0.21849885, 0.06, "2026-12-02", "pricing", "quoted")},
    )
    assert price_per_hour("n1-standard-4", None, 0, "us-central1", spot=True) == 0.06
    assert price_per_hour("n1-standard-4", None, 0, "us-central1") == 0.21849885


def test_unknown_machine_types_and_regions_have_no_price() -> None:
    assert price_per_hour("n9-standard-4", None, 0, "us-central1") is None
    assert price_per_hour("n1-standard-4", None, 0, "us-west8") is None
    assert price_per_hour("a4-highgpu-8g", "NVIDIA_B200", 8, "us-central1") is None  # no figure could be read


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        price_per_hour("n1-standard-4", "NVIDIA_TESLA_T4", -1, "us-central1")
