"""Fault injection for API calls: error rates per method, drawn status codes, added latency, and
answers lost after the call took effect (``lost_answer_rate``: the handler runs, then the response is
replaced by an error, as when a proxy drops the answer to a Create the backend did execute).

The ``Faults`` object is shared with the runner (which
reads its scheduling and replica-crash settings); this module applies its API part, and converts
Faults to and from the JSON the admin endpoint (``/emulator/faults``) and the CLI speak.
Random draws come from one ``random.Random`` seeded with ``Faults.seed``, so with a seed and a
fixed call sequence the injected failures are repeatable.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

from vertex_emulator.core.config import Faults

__all__ = [
    "STATUS_CODE_NAMES",
    "FaultInjector",
    "FaultsError",
    "faults_from_json",
    "faults_to_json",
    "update_faults",
]

#: google.rpc.Code names a fault may inject (OK is not a fault).
STATUS_CODE_NAMES = (
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)

_JSON_FIELDS = tuple(f.name for f in fields(Faults) if f.name != "lock")


class FaultsError(ValueError):
    """Fault settings that break a rule; the message names the field."""


class FaultInjector:
    """Decides, per API call, whether to fail it and with which code; applies added latency."""

    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self._lock = threading.Lock()
        self._seed: int | None = faults.seed
        self._rng = random.Random(faults.seed)
        self.injected: dict[str, int] = {}

    def draw(self, method: str) -> str | None:
        """Sleep the configured latency, then return a status code name to fail ``method`` with, or None."""
        with self.faults.lock:
            latency = self.faults.latency_s
            rate = self.faults.error_rate.get(method, self.faults.error_rate.get("*", 0.0))
            codes = list(self.faults.error_codes) or ["UNAVAILABLE"]
            seed = self.faults.seed
        if latency > 0:
            time.sleep(latency)  # the injected fault itself, not a wait for state
        return self._draw_code(rate, codes, seed, method)

    def draw_lost(self, method: str) -> str | None:
        """After ``method`` ran: a status code name to replace its answer with, or None."""
        with self.faults.lock:
            rate = self.faults.lost_answer_rate.get(method, self.faults.lost_answer_rate.get("*", 0.0))
            codes = list(self.faults.error_codes) or ["UNAVAILABLE"]
            seed = self.faults.seed
        return self._draw_code(rate, codes, seed, f"{method} (answer lost)")

    def _draw_code(self, rate: float, codes: list[str], seed: int | None, key: str) -> str | None:
        """With probability ``rate`` (from the seeded generator), one of ``codes``, counted under ``key``."""
        if rate <= 0:
            return None
        with self._lock:
            if seed != self._seed:
                self._seed, self._rng = seed, random.Random(seed)
            if self._rng.random() >= rate:
                return None
            code = codes[self._rng.randrange(len(codes))] if len(codes) > 1 else codes[0]
            self.injected[key] = self.injected.get(key, 0) + 1
            return code

    def injected_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.injected)


def faults_to_json(faults: Faults) -> dict[str, Any]:
    """The Faults as a JSON object (field names as in the dataclass)."""
    with faults.lock:
        out: dict[str, Any] = {name: getattr(faults, name) for name in _JSON_FIELDS}
    out["error_rate"] = dict(out["error_rate"])
    out["lost_answer_rate"] = dict(out["lost_answer_rate"])
    out["error_codes"] = list(out["error_codes"])
    out["crash_replicas"] = list(out["crash_replicas"])
    return out


def _number(name: str, value: Any, *, lo: float = 0.0, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FaultsError(f"{name}: must be a number (got {value!r})")
    if not math.isfinite(value):  # NaN compares false with every bound; Infinity sleeps forever
        raise FaultsError(f"{name}: must be a finite number (got {value!r})")
    if value < lo or (hi is not None and value > hi):
        bound = f"between {lo:g} and {hi:g}" if hi is not None else f"at least {lo:g}"
        raise FaultsError(f"{name}: must be {bound} (got {value!r})")
    return float(value)


def _rates(key: str, value: Any) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise FaultsError(f"{key}: must map a method name (or '*') to a probability")
    return {str(m): _number(f"{key}.{m}", p, hi=1.0) for m, p in value.items()}


def _error_codes(key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise FaultsError("error_codes: must be a non-empty list of status code names")
    for i, code in enumerate(value):
        if code not in STATUS_CODE_NAMES:
            known = ", ".join(STATUS_CODE_NAMES)
            raise FaultsError(f"error_codes[{i}]: unknown status code {code!r} (one of {known})")
    return list(value)


def _crash_replicas(key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise FaultsError("crash_replicas: must be a list of replica keys like 'workerpool1-0'")
    return list(value)


def _crash_exit_code(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 255:
        raise FaultsError(f"crash_exit_code: must be an integer from 1 to 255 (got {value!r})")
    return value


def _seed(key: str, value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise FaultsError(f"seed: must be an integer or null (got {value!r})")
    return value


#: each setting's check (it returns the value to store); the others (latency_s, queued_s, pending_s,
#: provisioning_s, crash_after_s) are non-negative numbers
_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "error_rate": _rates,
    "lost_answer_rate": _rates,
    "error_codes": _error_codes,
    "crash_replicas": _crash_replicas,
    "crash_exit_code": _crash_exit_code,
    "seed": _seed,
}


def _validated(changes: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(changes, Mapping):
        raise FaultsError(f"faults: must be a JSON object (got {type(changes).__name__})")
    out: dict[str, Any] = {}
    for key, value in changes.items():
        if key not in _JSON_FIELDS:
            raise FaultsError(f"{key}: unknown fault setting (known: {', '.join(_JSON_FIELDS)})")
        check = _CHECKS.get(key)
        out[key] = _number(key, value) if check is None else check(key, value)
    return out


def update_faults(faults: Faults, changes: Mapping[str, Any]) -> None:
    """Validate ``changes`` (a partial Faults JSON object) and apply them in place, atomically."""
    checked = _validated(changes)
    with faults.lock:
        for key, value in checked.items():
            setattr(faults, key, value)


def faults_from_json(data: Mapping[str, Any]) -> Faults:
    """A new Faults from a (partial) JSON object, validated."""
    faults = Faults()
    update_faults(faults, data)
    return faults
