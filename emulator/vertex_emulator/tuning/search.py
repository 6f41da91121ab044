"""Search algorithms for the emulator's tuning jobs (pure: no I/O, no threads).

- ``GRID_SEARCH`` enumerates the feasible space (INTEGER, CATEGORICAL, DISCRETE parameters only) in
  a fixed order -- the first parameter varies slowest -- and stops when it is exhausted or when the
  job's ``maxTrialCount`` is reached, whichever comes first.
- ``RANDOM_SEARCH`` samples every parameter independently, honouring ``scaleType`` (linear, log,
  reverse log) for DOUBLE, INTEGER and DISCRETE parameters; a parameter set already tried is drawn
  again (a finite space that is used up ends the study early).
- ``ALGORITHM_UNSPECIFIED`` means Vertex AI's Bayesian optimisation, which is not available offline.
  The local stand-in is an explore/exploit search: the first ``max(2, parallel)`` trials are random;
  after that each trial is, with probability 0.7, a perturbation of the best completed trial so far
  (numeric values moved by a Gaussian step in the scaled unit interval, of deviation
  ``0.2 / sqrt(1 + completed / 2)``; categorical values kept with probability 0.75) and otherwise
  a random draw. It is good enough to make a study converge on a smooth metric, which is what a
  local rehearsal needs; it is not Vizier.
- Conditional parameters: a child is part of a trial only when its parent's value is in the child's
  ``parentIntValues`` / ``parentCategoricalValues`` / ``parentDiscreteValues``.

Random draws come from ``random.Random(seed)``; the tuning driver picks the seed (see runtime/tuning_job.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Observation",
    "ParamSpec",
    "Search",
    "Value",
    "format_value",
    "grid_points",
    "parse_parameters",
    "sample_point",
]

Value = float | int | str
Kind = Literal["DOUBLE", "INTEGER", "CATEGORICAL", "DISCRETE"]

_SPEC_KEYS: dict[str, Kind] = {
    "doubleValueSpec": "DOUBLE",
    "integerValueSpec": "INTEGER",
    "categoricalValueSpec": "CATEGORICAL",
    "discreteValueSpec": "DISCRETE",
}
_SCALES = ("SCALE_TYPE_UNSPECIFIED", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE")
_ALGORITHMS = ("ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH")


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of a study spec, with its conditional children."""

    id: str
    kind: Kind
    low: float = 0.0
    high: float = 0.0
    values: tuple[Value, ...] = ()
    scale: str = "SCALE_TYPE_UNSPECIFIED"
    #: (parent values that activate the child, child spec)
    children: tuple[tuple[frozenset[Value], ParamSpec], ...] = field(default=())

    # -- scaled unit interval ------------------------------------------------------------------

    def _bounds(self) -> tuple[float, float]:
        if self.kind == "DISCRETE":
            return float(min(self.values)), float(max(self.values))
        return self.low, self.high

    def _log_scaled(self, lo: float, hi: float) -> bool:
        """A log scale, over a range whose logs differ (a range a few ulps wide can have equal logs:
        it is mapped linearly, as a log scale that narrow is linear to the last bit anyway)."""
        return self.scale in ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE") and math.log(hi) != math.log(lo)

    def from_unit(self, u: float) -> float:
        lo, hi = self._bounds()
        u = min(1.0, max(0.0, u))
        if hi == lo:
            return lo
        if not self._log_scaled(lo, hi):
            return lo + u * (hi - lo)
        if self.scale == "UNIT_LOG_SCALE":
            return math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
        if self.scale == "UNIT_REVERSE_LOG_SCALE":
            return hi + lo - math.exp(math.log(lo) + (1.0 - u) * (math.log(hi) - math.log(lo)))
        return lo + u * (hi - lo)

    def to_unit(self, v: float) -> float:
        lo, hi = self._bounds()
        if hi == lo:
            return 0.0
        if not self._log_scaled(lo, hi):
            return (v - lo) / (hi - lo)
        if self.scale == "UNIT_LOG_SCALE":
            return (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo))
        if self.scale == "UNIT_REVERSE_LOG_SCALE":
            return 1.0 - (math.log(hi + lo - v) - math.log(lo)) / (math.log(hi) - math.log(lo))
        return (v - lo) / (hi - lo)

    def snap(self, x: float) -> Value:
        """The feasible value nearest to ``x`` (in the scaled unit interval for DISCRETE)."""
        if self.kind == "INTEGER":
            return int(min(self.high, max(self.low, round(x))))
        if self.kind == "DISCRETE":
            ux = self.to_unit(x)
            return min(self.values, key=lambda v: abs(self.to_unit(float(v)) - ux))
        return min(self.high, max(self.low, x))

    def active_children(self, value: Value) -> list[ParamSpec]:
        return [child for cond, child in self.children if value in cond]


def _num(raw: Any, path: str) -> float:
    try:
        out = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{path}: must be a number (got {raw!r})") from None
    if math.isnan(out) or math.isinf(out):
        raise ValueError(f"{path}: must be finite (got {raw!r})")
    return out


def _range(kind: Kind, spec: Mapping[str, Any], where: str) -> tuple[float, float]:
    """A DOUBLE or INTEGER parameter's ``(minValue, maxValue)``."""
    low = _num(spec.get("minValue", 0), f"{where}.minValue")
    high = _num(spec.get("maxValue", 0), f"{where}.maxValue")
    if kind == "INTEGER" and (low != int(low) or high != int(high)):
        raise ValueError(f"{where}: minValue and maxValue must be integers")
    if low > high:
        raise ValueError(f"{where}: minValue must be <= maxValue (got {low} > {high})")
    return low, high


def _categories(spec: Mapping[str, Any], where: str) -> tuple[Value, ...]:
    """A CATEGORICAL parameter's values."""
    values = tuple(str(v) for v in spec.get("values") or [])
    if not values:
        raise ValueError(f"{where}.values: at least one value is required")
    if len(set(values)) != len(values):
        raise ValueError(f"{where}.values: values must be distinct")
    return values


def _discrete(spec: Mapping[str, Any], where: str) -> tuple[Value, ...]:
    """A DISCRETE parameter's values."""
    nums = [_num(v, f"{where}.values[{i}]") for i, v in enumerate(spec.get("values") or [])]
    if not nums:
        raise ValueError(f"{where}.values: at least one value is required")
    if len(nums) > 1000:
        raise ValueError(f"{where}.values: at most 1000 values (got {len(nums)})")
    if any(b <= a for a, b in zip(nums, nums[1:], strict=False)):
        raise ValueError(f"{where}.values: must be strictly increasing")
    return tuple(nums)


def _check_scale(scale: str, kind: Kind, low: float, values: tuple[Value, ...], path: str) -> None:
    """A log scale needs a numeric, strictly positive feasible space."""
    if scale not in ("UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"):
        return
    if kind == "CATEGORICAL":
        raise ValueError(f"{path}.scaleType: must be unset for a categorical parameter")
    lo = min(values) if kind == "DISCRETE" else low
    if float(lo) <= 0:
        raise ValueError(f"{path}.scaleType: {scale} needs a strictly positive feasible space")


def _parent_values(cond: Mapping[str, Any], kind: Kind, cpath: str) -> frozenset[Value]:
    """The parent values a conditional parameter applies for (the field its parent's kind names)."""
    matches: frozenset[Value]
    if kind == "INTEGER" and cond.get("parentIntValues") is not None:
        matches = frozenset(int(v) for v in cond["parentIntValues"].get("values") or [])
    elif kind == "CATEGORICAL" and cond.get("parentCategoricalValues") is not None:
        matches = frozenset(str(v) for v in cond["parentCategoricalValues"].get("values") or [])
    elif kind == "DISCRETE" and cond.get("parentDiscreteValues") is not None:
        matches = frozenset(float(v) for v in cond["parentDiscreteValues"].get("values") or [])
    else:
        want = {"INTEGER": "parentIntValues", "CATEGORICAL": "parentCategoricalValues"}.get(
            kind, "parentDiscreteValues"
        )
        raise ValueError(f"{cpath}: a {kind} parent needs {want}")
    if not matches:
        raise ValueError(f"{cpath}: the parent value condition lists no values")
    return matches


def _parse_one(raw: Mapping[str, Any], path: str) -> ParamSpec:
    pid = raw.get("parameterId")
    if not isinstance(pid, str) or not pid or any(c.isspace() for c in pid):
        raise ValueError(f"{path}.parameterId: required, without whitespace (got {pid!r})")
    present = [k for k in _SPEC_KEYS if raw.get(k) is not None]
    if len(present) != 1:
        raise ValueError(f"{path}: exactly one of {', '.join(_SPEC_KEYS)} is required (got {present})")
    key = present[0]
    kind = _SPEC_KEYS[key]
    spec = raw[key]
    scale = str(raw.get("scaleType") or "SCALE_TYPE_UNSPECIFIED")
    if scale not in _SCALES:
        raise ValueError(f"{path}.scaleType: must be one of {', '.join(_SCALES)} (got {scale!r})")
    low = high = 0.0
    values: tuple[Value, ...] = ()
    if kind in ("DOUBLE", "INTEGER"):
        low, high = _range(kind, spec, f"{path}.{key}")
    elif kind == "CATEGORICAL":
        values = _categories(spec, f"{path}.{key}")
    else:
        values = _discrete(spec, f"{path}.{key}")
    _check_scale(scale, kind, low, values, path)
    children: list[tuple[frozenset[Value], ParamSpec]] = []
    for j, cond in enumerate(raw.get("conditionalParameterSpecs") or []):
        cpath = f"{path}.conditionalParameterSpecs[{j}]"
        child_raw = cond.get("parameterSpec")
        if not child_raw:
            raise ValueError(f"{cpath}.parameterSpec: required")
        matches = _parent_values(cond, kind, cpath)
        children.append((matches, _parse_one(child_raw, f"{cpath}.parameterSpec")))
    return ParamSpec(pid, kind, low, high, values, scale, tuple(children))


def parse_parameters(raw: Sequence[Mapping[str, Any]], path: str = "studySpec.parameters") -> list[ParamSpec]:
    """Parse the v1 JSON ``parameters`` list; ValueError names the field path and the rule."""
    if not raw:
        raise ValueError(f"{path}: at least one parameter is required")
    out = [_parse_one(p, f"{path}[{i}]") for i, p in enumerate(raw)]
    top = [p.id for p in out]
    if len(set(top)) != len(top):
        raise ValueError(f"{path}: parameterId values must be unique")
    return out


# -- grid -----------------------------------------------------------------------------------------


def _grid_values(p: ParamSpec) -> Sequence[Value]:
    """The values a grid walks for ``p``; an integer range stays a lazy ``range`` (a grid over
    ``[0, 2**62]`` is valid and runs its first trials without listing the rest)."""
    if p.kind == "INTEGER":
        return range(int(p.low), int(p.high) + 1)
    if p.kind in ("CATEGORICAL", "DISCRETE"):
        return list(p.values)
    raise ValueError(
        f"studySpec.parameters: GRID_SEARCH needs INTEGER, CATEGORICAL or DISCRETE parameters "
        f"({p.id!r} is DOUBLE)"
    )


def grid_points(params: Sequence[ParamSpec]) -> Iterator[dict[str, Value]]:
    """Every point of the feasible space, conditional children included, first parameter slowest."""
    for p in params:  # fail here, not at the first next()
        _check_grid(p)
    return _grid_iter(list(params))


def _grid_iter(params: list[ParamSpec]) -> Iterator[dict[str, Value]]:
    def expand(specs: Sequence[ParamSpec]) -> Iterator[list[tuple[str, Value]]]:
        if not specs:
            yield []
            return
        first, rest = specs[0], specs[1:]
        for v in _grid_values(first):
            for head in expand(first.active_children(v)):
                for tail in expand(rest):
                    yield [(first.id, v), *head, *tail]

    for point in expand(params):
        yield dict(point)


def _check_grid(p: ParamSpec) -> None:
    _grid_values(p)
    for _, child in p.children:
        _check_grid(child)


# -- sampling -------------------------------------------------------------------------------------


def _sample_one(p: ParamSpec, rng: random.Random) -> Value:
    if p.kind == "CATEGORICAL":
        return rng.choice(p.values)
    if p.kind == "DISCRETE" and p.scale in ("SCALE_TYPE_UNSPECIFIED", "UNIT_LINEAR_SCALE"):
        return rng.choice(p.values)
    if p.kind == "INTEGER" and p.scale in ("SCALE_TYPE_UNSPECIFIED", "UNIT_LINEAR_SCALE"):
        return rng.randint(int(p.low), int(p.high))
    return p.snap(p.from_unit(rng.random()))


def sample_point(
    params: Sequence[ParamSpec],
    rng: random.Random,
    base: Mapping[str, Value] | None = None,
    *,
    step: float = 0.15,
    keep_categorical: float = 0.75,
) -> dict[str, Value]:
    """A random point; with ``base``, a perturbation of ``base`` (stand-in algorithm's exploit step)."""
    out: dict[str, Value] = {}

    def visit(specs: Sequence[ParamSpec]) -> None:
        for p in specs:
            if base is not None and p.id in base:
                v = base[p.id]
                if p.kind == "CATEGORICAL":
                    value = v if rng.random() < keep_categorical else rng.choice(p.values)
                else:
                    u = p.to_unit(float(v)) + rng.gauss(0.0, step)
                    value = p.snap(p.from_unit(u))
            else:
                value = _sample_one(p, rng)
            out[p.id] = value
            visit(p.active_children(value))

    visit(params)
    return out


def format_value(p: ParamSpec, value: Value) -> str:
    """How the service writes a value into ``--<parameter_id>=<value>``.

    INTEGER as an integer (``4``); DOUBLE with Python's shortest round-trip form; DISCRETE as a float
    (``128.0`` -- the service sends discrete values as floats, integral or not); CATEGORICAL as is.
    """
    if p.kind == "INTEGER":
        return str(int(value))
    if p.kind in ("DOUBLE", "DISCRETE"):
        return repr(float(value))
    return str(value)


# -- the search driver's view ---------------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    """A trial the search has seen: its parameters and its objective (None while running/infeasible)."""

    parameters: Mapping[str, Value]
    objective: float | None = None


def _key(point: Mapping[str, Value]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in point.items()))


class Search:
    """Suggests the next trial's parameters for a study spec (v1 JSON), or None when it is done."""

    def __init__(self, study_spec: Mapping[str, Any], *, seed: int, parallel: int = 1) -> None:
        self.params = parse_parameters(study_spec.get("parameters") or [])
        algorithm = str(study_spec.get("algorithm") or "ALGORITHM_UNSPECIFIED")
        if algorithm not in _ALGORITHMS:
            choices = ", ".join(_ALGORITHMS)
            raise ValueError(f"studySpec.algorithm: must be one of {choices} (got {algorithm!r})")
        self.algorithm = algorithm
        metrics = study_spec.get("metrics") or []
        goal = str((metrics[0] if metrics else {}).get("goal") or "MAXIMIZE")
        self.maximize = goal != "MINIMIZE"
        self.rng = random.Random(seed)
        self.n_init = max(2, parallel)
        self._grid = grid_points(self.params) if algorithm == "GRID_SEARCH" else None

    def suggest(self, history: Sequence[Observation]) -> dict[str, Value] | None:
        if self._grid is not None:
            return next(self._grid, None)
        tried = {_key(h.parameters) for h in history}
        done = [h for h in history if h.objective is not None]
        for _ in range(200):
            base: Mapping[str, Value] | None = None
            if self.algorithm == "ALGORITHM_UNSPECIFIED" and len(history) >= self.n_init and done:
                if self.rng.random() < 0.7:
                    pick = max if self.maximize else min
                    base = pick(done, key=lambda h: float(h.objective or 0.0)).parameters
            # the exploit step shrinks as results come in: 0.2, then 0.2/sqrt(1 + n/2)
            step = 0.2 / math.sqrt(1 + len(done) / 2)
            point = sample_point(self.params, self.rng, base, step=step)
            if _key(point) not in tried:
                return point
        return None
