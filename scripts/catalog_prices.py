"""The rules of the catalog's prices (``prices`` and ``price_factors`` of ``catalog/vertex_catalog.json``;
see its ``prices_about``): every figure dated, sourced, positive, Spot below on-demand; a derived figure
is its base times a known factor, and each factor is verified by a quoted figure. Part of the rules of
``scripts/catalog_gen.py`` (``catalog_rules.py`` runs them last)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["FACTOR_TOLERANCE", "price_problems"]

_PRICE_FIELDS = {
    "quoted": {
        "item",
        "region",
        "on_demand_usd_per_hour",
        "spot_usd_per_hour",
        "date",
        "source",
        "method",
        "quote",
    },
    "derived": {
        "item",
        "region",
        "on_demand_usd_per_hour",
        "spot_usd_per_hour",
        "date",
        "source",
        "method",
        "factor",
        "base_usd_per_hour",
        "base_spot_usd_per_hour",
        "includes_accelerators",
        "base_local_ssd_gb",
    },
}
#: how far a factor may be from the quoted figure that verifies it (0.1 %)
FACTOR_TOLERANCE = 0.001


def _times(base: float, factor: float) -> float:
    """A derived figure: the base times the factor, to the 1e-8 dollar (as the catalog writes them)."""
    return round(base * factor, 8)


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _factor_problems(data: dict[str, Any], quoted: dict[tuple[str, str], float]) -> list[str]:
    """Each factor: positive, applied to on-demand and/or Spot, verified by a quoted figure within 0.1 %."""
    out: list[str] = []
    sources = data.get("sources", {})
    for key, factor in data.get("price_factors", {}).items():
        where = f"price_factors.{key}"
        value = factor.get("factor")
        if not _positive(value):
            out.append(f"{where}: factor must be positive")
            continue
        if not factor.get("applies_to") or not set(factor["applies_to"]) <= {"on_demand", "spot"}:
            out.append(f"{where}: applies_to must name on_demand and/or spot")
        if not factor.get("sources") or not set(factor["sources"]) <= set(sources):
            out.append(f"{where}: cites no source or an unknown one")
        checks = factor.get("verified_by") or []
        if not checks:
            out.append(f"{where}: verified by no quoted figure")
        for check in checks:
            pair = (check.get("item", ""), check.get("region", ""))
            base = check.get("base_usd_per_hour")
            if pair not in quoted:
                out.append(f"{where}: no quoted on-demand price of {pair[0]} in {pair[1]} verifies it")
            elif not _positive(base) or abs(base * value - quoted[pair]) > FACTOR_TOLERANCE * quoted[pair]:
                out.append(f"{where}: {base} x {value} is not the quoted {quoted[pair]} (0.1 %)")
    return out


def price_problems(
    data: dict[str, Any], machines: set[str], kinds: dict[str, str], training: set[str]
) -> list[str]:
    """What is wrong with ``prices`` and ``price_factors`` (see the catalog's ``prices_about``)."""
    out: list[str] = []
    prices = data.get("prices", ())
    factors = data.get("price_factors", {})
    built_in = {n for spec in data.get("series", {}).values() for n in spec.get("built_in", {})}
    quoted = {
        (p.get("item", ""), p.get("region", "")): p["on_demand_usd_per_hour"]
        for p in prices
        if p.get("method") == "quoted" and _positive(p.get("on_demand_usd_per_hour"))
    }
    out += _factor_problems(data, quoted)
    seen: set[tuple[Any, Any]] = set()
    for i, price in enumerate(prices):
        where = f"prices[{i}]"
        out += _listing_problems(where, price, machines | set(kinds), training, seen)
        out += _source_problems(where, price, data.get("sources", {}))
        method = price.get("method")
        if method not in _PRICE_FIELDS:
            out.append(f"{where}: method must be quoted or derived")
            continue
        out += _figure_problems(where, price, method)
        if method == "derived":
            out += _derived_problems(where, price, factors.get(price.get("factor", "")))
        out += _accelerator_problems(where, price, method, built_in)
    return out


def _listing_problems(
    where: str, price: dict[str, Any], items: set[str], training: set[str], seen: set[tuple[Any, Any]]
) -> list[str]:
    """A price of a known item in a training region, its first there; ``seen`` takes it in."""
    out: list[str] = []
    item = price.get("item")
    if item not in items:
        out.append(f"{where}: {item!r} is neither a machine type nor an accelerator")
    if price.get("region") not in training:
        out.append(f"{where}: region {price.get('region')!r} is not a training region")
    if (item, price.get("region")) in seen:
        out.append(f"{where}: a second price of {item} in {price.get('region')}")
    seen.add((item, price.get("region")))
    return out


def _source_problems(where: str, price: dict[str, Any], sources: dict[str, Any]) -> list[str]:
    """A date (YYYY-MM-DD) and a known source."""
    out: list[str] = []
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(price.get("date") or "")):
        out.append(f"{where}: no date (YYYY-MM-DD)")
    if not price.get("source"):
        out.append(f"{where}: cites no source")
    elif price["source"] not in sources:
        out.append(f"{where}: unknown source {price['source']!r}")
    return out


def _figure_problems(where: str, price: dict[str, Any], method: str) -> list[str]:
    """The fields of its method only; a positive figure, Spot below on-demand; a quoted one's quote."""
    out: list[str] = []
    if set(price) - _PRICE_FIELDS[method]:
        out.append(f"{where}: fields {sorted(set(price) - _PRICE_FIELDS[method])} do not belong to {method}")
    on_demand, spot = price.get("on_demand_usd_per_hour"), price.get("spot_usd_per_hour")
    if (on_demand is None and spot is None) or any(
        f is not None and not _positive(f) for f in (on_demand, spot)
    ):
        out.append(f"{where}: needs a positive on-demand or Spot figure")
    elif on_demand is not None and spot is not None and not spot < on_demand:
        out.append(f"{where}: Spot {spot} is not below on-demand {on_demand}")
    if method == "quoted" and not price.get("quote"):
        out.append(f"{where}: a quoted figure needs its quote")
    return out


def _accelerator_problems(where: str, price: dict[str, Any], method: str, built_in: set[str]) -> list[str]:
    """``includes_accelerators`` only of a machine type with built-in accelerators, and always on a
    derived price of one."""
    out: list[str] = []
    item = price.get("item")
    if price.get("includes_accelerators") and item not in built_in:
        out.append(f"{where}: {item} has no built-in accelerators to include")
    if method == "derived" and item in built_in and price.get("includes_accelerators") is not True:
        out.append(f"{where}: {item} is priced with its GPUs: includes_accelerators must be true")
    return out


def _derived_problems(where: str, price: dict[str, Any], factor: dict[str, Any] | None) -> list[str]:
    """A derived figure is its base times a known factor; Spot only where the factor applies to Spot."""
    if factor is None:
        return [f"{where}: factor {price.get('factor')!r} is not one of price_factors"]
    out: list[str] = []
    value, applies = factor["factor"], factor.get("applies_to", ())
    base: Any = price.get("base_usd_per_hour")
    base_spot: Any = price.get("base_spot_usd_per_hour")
    on_demand: Any = price.get("on_demand_usd_per_hour")
    spot: Any = price.get("spot_usd_per_hour")
    if not _positive(base) or not _positive(on_demand) or abs(on_demand - _times(base, value)) > 1e-8:
        out.append(f"{where}: on_demand_usd_per_hour must be base_usd_per_hour x {value}")
    if base_spot is not None and (not _positive(base_spot) or not _positive(base) or not base_spot < base):
        out.append(f"{where}: base_spot_usd_per_hour must be positive and below base_usd_per_hour")
    want_spot = _times(base_spot, value) if "spot" in applies and _positive(base_spot) else None
    if (
        want_spot is None
        and spot is not None
        or want_spot is not None
        and abs((spot or 0) - want_spot) > 1e-8
    ):
        out.append(
            f"{where}: spot_usd_per_hour must be base_spot_usd_per_hour x {value} where the factor applies"
        )
    ssd = price.get("base_local_ssd_gb")
    if ssd is not None and not (isinstance(ssd, int) and ssd > 0):
        out.append(f"{where}: base_local_ssd_gb must be a positive integer")
    return out
