"""Fault injection for API calls: error rates per method, drawn status codes, added latency, and
answers lost after the call took effect (``lost_answer_rate``: the handler runs, then the response is
replaced by an error, as when a proxy drops the answer to a Create the backend did execute).

The ``Faults`` object is shared with the runner (which
reads its scheduling and replica-crash settings); this module applies its API part, and converts
Faults to and from the JSON the admin endpoint (``/emulator/faults``) and the CLI speak, validated by
one pydantic model, ``FaultSettings`` (an error names the field: ``error_rate.GetCustomJob: must be
between 0 and 1 (got 2)``).
Random draws come from one ``random.Random`` seeded with ``Faults.seed``, so with a seed and a
fixed call sequence the injected failures are repeatable.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import fields
from typing import Annotated, Any, Literal, get_args

from pydantic import Field

from vertex_emulator.core.config import Faults
from vertex_emulator.core.validation import SettingsModel, rule, validated_changes

__all__ = [
    "STATUS_CODE_NAMES",
    "ErrorCodes",
    "FaultInjector",
    "FaultSettings",
    "FaultsError",
    "Rates",
    "Seconds",
    "StatusCodeName",
    "faults_from_json",
    "faults_to_json",
    "update_faults",
]

#: google.rpc.Code names a fault may inject (OK is not a fault).
StatusCodeName = Literal[
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
]
STATUS_CODE_NAMES: tuple[str, ...] = get_args(StatusCodeName)

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

    def reseed(self) -> None:
        """Draw again from the start of ``Faults.seed``'s sequence (a reset or restore of the state)."""
        with self.faults.lock:
            seed = self.faults.seed
        with self._lock:
            self._seed, self._rng = seed, random.Random(seed)

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


def _number(value: Any, *, hi: float | None = None) -> float:
    """A finite number from 0 (to ``hi``): the rule of every number of the fault settings."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number (got {value!r})")
    if not math.isfinite(value):  # NaN compares false with every bound; Infinity sleeps forever
        raise ValueError(f"must be a finite number (got {value!r})")
    if value < 0 or (hi is not None and value > hi):
        bound = f"between 0 and {hi:g}" if hi is not None else "at least 0"
        raise ValueError(f"must be {bound} (got {value!r})")
    return float(value)


def _rates(value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise ValueError("must map a method name (or '*') to a probability")
    return {str(method): p for method, p in value.items()}


def _error_codes(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise ValueError("must be a non-empty list of status code names")
    return value


def _status_code(value: Any) -> Any:
    if value not in STATUS_CODE_NAMES:
        raise ValueError(f"unknown status code {value!r} (one of {', '.join(STATUS_CODE_NAMES)})")
    return value


def _crash_replicas(value: Any) -> Any:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError("must be a list of replica keys like 'workerpool1-0'")
    return value


def _crash_exit_code(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 255:
        raise ValueError(f"must be an integer from 1 to 255 (got {value!r})")
    return value


def _seed(value: Any) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"must be an integer or null (got {value!r})")
    return value


#: a probability (0..1) that a call fails or loses its answer
Probability = Annotated[float, Field(ge=0, le=1), rule(lambda v: _number(v, hi=1.0))]
#: a method name (``CreateCustomJob``...) or ``"*"`` -> its probability
Rates = Annotated[dict[str, Probability], rule(_rates)]
#: seconds (finite, not negative)
Seconds = Annotated[float, Field(ge=0), rule(_number)]
#: status code names a failing call is drawn from (at least one)
ErrorCodes = Annotated[
    list[Annotated[StatusCodeName, rule(_status_code)]], Field(min_length=1), rule(_error_codes)
]


class FaultSettings(SettingsModel):
    """The fault settings as the CLI flags, the admin API (``/emulator/faults``) and its JSON schema
    (``/emulator/faults/schema``) speak them; ``config.Faults`` documents each field, and holds them
    while the emulator runs."""

    error_rate: Rates = {}
    lost_answer_rate: Rates = {}
    error_codes: ErrorCodes = ["UNAVAILABLE"]
    latency_s: Seconds = 0.0
    queued_s: Seconds = 0.0
    pending_s: Seconds = 0.0
    provisioning_s: Seconds = 0.0
    crash_replicas: Annotated[list[Annotated[str, Field(min_length=1)]], rule(_crash_replicas)] = []
    crash_after_s: Seconds = 0.0
    crash_exit_code: Annotated[int, Field(ge=1, le=255), rule(_crash_exit_code)] = 137
    seed: Annotated[int | None, rule(_seed)] = None


def update_faults(faults: Faults, changes: Mapping[str, Any]) -> None:
    """Validate ``changes`` (a partial Faults JSON object, by ``FaultSettings``) and apply them in
    place, atomically: the keys not given keep their values."""
    checked = validated_changes(FaultSettings, changes, FaultsError, name="faults", what="fault")
    with faults.lock:
        for key, value in checked.items():
            setattr(faults, key, value)


def faults_from_json(data: Mapping[str, Any]) -> Faults:
    """A new Faults from a (partial) JSON object, validated."""
    faults = Faults()
    update_faults(faults, data)
    return faults
