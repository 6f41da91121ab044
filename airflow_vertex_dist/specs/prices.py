"""Prices per hour of Vertex AI custom training, from the machine catalog (``_generated/catalog.py``,
generated from ``catalog/vertex_catalog.json``, whose ``prices_about`` says how each figure was obtained).

``price_per_hour`` prices one replica: its machine type and, where the machine type does not include
them, its accelerators. It answers ``None`` where any part of that price is unknown rather than a partial
sum: a cost estimate or a price ceiling must not treat a missing GPU price as free.

```python
price_per_hour("n1-standard-4", None, 0, "us-central1")  # 0.21849885
price_per_hour("a3-highgpu-8g", "NVIDIA_H100_80GB", 8, "us-central1")  # the machine's: it includes its GPUs
price_per_hour("n1-standard-8", "NVIDIA_TESLA_T4", 1, "us-central1")  # None: no T4 price could be read
```
"""

from __future__ import annotations

from airflow_vertex_dist._generated import catalog

__all__ = ["NO_ACCELERATOR", "price_per_hour"]

#: the values of a machine spec's ``acceleratorType`` that name no accelerator
NO_ACCELERATOR = frozenset({"", "ACCELERATOR_TYPE_UNSPECIFIED"})


def _figure(item: str, region: str, spot: bool) -> float | None:
    on_demand, spot_price, *_ = catalog.PRICES.get(item, {}).get(region, (None, None))
    return spot_price if spot else on_demand


def price_per_hour(
    machine_type: str,
    accelerator_type: str | None,
    accelerator_count: int,
    region: str,
    spot: bool = False,
) -> float | None:
    """USD per hour of one replica of ``machine_type`` with ``accelerator_count`` x ``accelerator_type``
    in ``region``, on-demand or Spot; ``None`` where the catalog has no figure for the machine type, for
    an accelerator it does not include, or for this combination.

    A machine type with built-in accelerators (A2, A3, G2: ``catalog.PRICED_WITH_ACCELERATORS``) is
    priced with them, so naming its own accelerators and count adds nothing; naming others is no
    combination the catalog prices (``None``). Other machine types add ``accelerator_count`` times the
    accelerator's own price. No Spot price of Vertex AI training could be read, so ``spot=True`` answers
    ``None`` until the catalog records one.
    """
    if accelerator_count < 0:
        raise ValueError(f"accelerator_count must not be negative (got {accelerator_count})")
    machine = _figure(machine_type, region, spot)
    if machine is None:
        return None
    if accelerator_type is None or accelerator_type in NO_ACCELERATOR or accelerator_count == 0:
        return machine
    if machine_type in catalog.PRICED_WITH_ACCELERATORS:
        return (
            machine if catalog.BUILT_IN.get(machine_type) == (accelerator_type, accelerator_count) else None
        )
    accelerator = _figure(accelerator_type, region, spot)
    if accelerator is None:
        return None
    return round(machine + accelerator_count * accelerator, 8)
