"""A scenario: a timeline of the settings the emulator already has (GPU stock and quota, the stockout
wait, Spot preemptions, job outcomes by rule, scheduling delays, API faults), each event applied at a
scenario time and, with ``until``, reverted at another. One pydantic model, ``Scenario``, in the
emulator's settings style: its field rules are those of ``CapacitySettings`` (capacity/settings.py)
and ``FaultSettings`` (core/faults.py), imported, never copied, so a stock count or an error rate
breaks the same rule whichever way it arrives.

Times (``at``, ``until``) are offsets from the scenario's start, in scenario seconds: a number of
seconds, ``"HH:MM"`` or ``"HH:MM:SS"`` (hours may pass 24), or ``"+90m"`` (``h``, ``m``, ``s``
parts, as ``"+1h30m"``). ``compression`` is scenario seconds per real second.
"""

from __future__ import annotations

import fnmatch
import math
import re
from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from vertex_emulator.capacity.settings import COUNT_MAPS, Accelerator, Count, PerHour, Region
from vertex_emulator.capacity.settings import Seconds as CapacitySeconds
from vertex_emulator.core.faults import ErrorCodes, Rates
from vertex_emulator.core.faults import Seconds as FaultSeconds
from vertex_emulator.core.validation import SettingsModel, rule

__all__ = [
    "KINDS",
    "MAX_COMPRESSION",
    "MAX_EVENTS",
    "ApiFaults",
    "Delays",
    "Event",
    "Gpus",
    "JobOutcome",
    "Preempt",
    "Scenario",
    "parse_time",
]

#: events one scenario may hold (the emulator bounds every input)
MAX_EVENTS = 1000
#: the most scenario seconds per real second
MAX_COMPRESSION = 10_000.0
_MAX_TIME_S = 10 * 365 * 24 * 3600.0  # ten years, as the capacity settings' "never"
_CLOCK_RE = re.compile(r"(\d{1,5}):([0-5]\d)(?::([0-5]\d(?:\.\d+)?))?")
_RELATIVE_RE = re.compile(r"\+(?=\d)(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?")


def parse_time(value: Any) -> float:
    """Scenario seconds from the start of ``value`` (a number, ``"HH:MM[:SS]"`` or ``"+1h30m"``)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"must be seconds, 'HH:MM' or '+90m' (got {value!r})")
    if isinstance(value, str):
        clock, relative = _CLOCK_RE.fullmatch(value), _RELATIVE_RE.fullmatch(value)
        if clock:
            seconds = int(clock[1]) * 3600 + int(clock[2]) * 60 + float(clock[3] or 0)
        elif relative and value != "+":
            hours, minutes, secs = (float(part or 0) for part in relative.groups())
            seconds = hours * 3600 + minutes * 60 + secs
        else:
            raise ValueError(f"must be seconds, 'HH:MM', 'HH:MM:SS' or '+90m' (got {value!r})")
    else:
        seconds = float(value)
    if not math.isfinite(seconds) or not 0 <= seconds <= _MAX_TIME_S:
        raise ValueError(f"must be from 0 to {_MAX_TIME_S:g} seconds (got {value!r})")
    return seconds


def _version(value: Any) -> Any:
    if value != 1 or isinstance(value, bool):
        raise ValueError(f"must be 1, the only scenario format (got {value!r})")
    return value


def _compression(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"must be a finite number (got {value!r})")
    if not 1 <= value <= MAX_COMPRESSION:
        raise ValueError(f"must be from 1 to {MAX_COMPRESSION:g} (got {value!r})")
    return float(value)


_TIME_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0, "maximum": _MAX_TIME_S},
        {"type": "string", "pattern": r"^(\d{1,5}:[0-5]\d(:[0-5]\d(\.\d+)?)?|\+.+)$"},
    ],
    "description": "seconds from the start, 'HH:MM[:SS]' or '+90m' ('+1h30m', '+20s')",
}
#: a scenario time, as seconds from the start (the rule parses the text)
Time = Annotated[float, WithJsonSchema(_TIME_SCHEMA), rule(parse_time)]


class Gpus(SettingsModel):
    """A count of GPUs of one accelerator type in one region (a stock or a quota)."""

    region: Annotated[Region, Field(description="the region, as `us-central1`")]
    accelerator: Annotated[
        Accelerator, Field(description="an `AcceleratorType` name, as `NVIDIA_TESLA_A100`")
    ]
    count: Annotated[Count, Field(description="GPUs, from 0 to 2147483647")]


class Preempt(SettingsModel):
    """Preempt a replica of every running Spot job that matches (``display_name``: a glob;
    ``labels``: each given label equal), as ``POST /emulator/capacity/preempt`` does."""

    display_name: Annotated[
        str, Field(min_length=1, max_length=128, description="a glob the job's display name matches")
    ] = "*"
    labels: Annotated[
        dict[str, str], Field(max_length=64, description="labels the job carries, each with this value")
    ] = {}
    replica: Annotated[
        str, Field(min_length=1, max_length=64, description="the replica preempted, as `workerpool1-0`")
    ] = "workerpool0-0"

    def matches(self, job: dict[str, Any]) -> bool:
        labels = job.get("labels") or {}
        if not fnmatch.fnmatchcase(str(job.get("displayName", "")), self.display_name):
            return False
        return all(labels.get(key) == value for key, value in self.labels.items())


class JobOutcome(SettingsModel):
    """While in force, every CustomJob whose display name (a glob) and labels match (the ``first`` N
    of them when given) is played, not run: no replica process starts; the primary replica writes
    ``log_lines``, and ``after`` (scenario time) after RUNNING the job ends ``state``, with
    ``exit_status`` (worded as a replica's exit) and/or ``message`` as its error when FAILED (code
    ``error_code``, 3 when not given) or CANCELLED (code 1). ``queued`` (scenario time) holds the job
    PENDING before it runs, on top of the scheduling's own delays (a job of a history that queued)."""

    display_name: Annotated[
        str, Field(min_length=1, max_length=128, description="a glob the job's display name matches")
    ] = "*"
    labels: Annotated[
        dict[str, str], Field(max_length=64, description="labels the job carries, each with this value")
    ] = {}
    state: Annotated[
        Literal["FAILED", "SUCCEEDED", "CANCELLED"], Field(description="the state the played job ends in")
    ] = "FAILED"
    after: Annotated[Time, Field(description="how long the job runs (scenario time) before it ends")] = 0.0
    queued: Annotated[
        Time, Field(description="how long the job is held PENDING (scenario time) before it runs")
    ] = 0.0
    error_code: Annotated[
        Annotated[int, Field(ge=1, le=16)] | None,
        Field(description="the error's code, 1 to 16 (FAILED only; 3 when not given)"),
    ] = None
    exit_status: Annotated[
        Annotated[int, Field(ge=0, le=255)] | None,
        Field(description="the primary replica's exit status the error is worded as (FAILED: not 0)"),
    ] = None
    message: Annotated[
        Annotated[str, Field(min_length=1, max_length=4096)] | None,
        Field(description="the error's message (FAILED or CANCELLED)"),
    ] = None
    log_lines: Annotated[
        list[Annotated[str, Field(max_length=4096)]],
        Field(max_length=1000, description="lines the primary replica writes to its log and Cloud Logging"),
    ] = []
    first: Annotated[
        Annotated[int, Field(ge=1, le=2_147_483_647)] | None,
        Field(description="only the first N matching jobs are played; the rest run their code"),
    ] = None

    def matches(self, job: dict[str, Any]) -> bool:
        return Preempt(display_name=self.display_name, labels=self.labels).matches(job)

    @model_validator(mode="after")
    def _consistent(self) -> JobOutcome:
        problem = None
        if self.state == "SUCCEEDED" and (self.message is not None or self.exit_status not in (None, 0)):
            problem = "a SUCCEEDED outcome takes no message and no exit_status but 0"
        if self.state == "FAILED" and self.exit_status == 0:
            problem = "a FAILED outcome's exit_status must not be 0"
        if self.state != "FAILED" and self.error_code is not None:
            problem = "only a FAILED outcome takes an error_code (CANCELLED's is 1)"
        if self.state == "CANCELLED" and self.exit_status is not None:
            problem = "a CANCELLED outcome takes no exit_status"
        if problem is not None:
            raise PydanticCustomError("emulator_setting", "{text}", {"text": problem})
        return self


class Delays(SettingsModel):
    """Seconds a new job stays QUEUED, then PENDING, and PENDING once granted (``config.Faults``);
    only the keys given change."""

    queued_s: Annotated[FaultSeconds, Field(description="seconds a new job stays QUEUED")] = 0.0
    pending_s: Annotated[FaultSeconds, Field(description="seconds it then stays PENDING")] = 0.0
    provisioning_s: Annotated[
        FaultSeconds, Field(description="seconds it stays PENDING once its capacity is granted")
    ] = 0.0


class ApiFaults(SettingsModel):
    """API faults (``config.Faults``): error rates per method (or ``*``), the codes drawn, added
    latency; only the keys given change, a map given replaces the whole map."""

    error_rate: Annotated[
        Rates, Field(description="per method name (or `*`), the share of calls that fail, 0 to 1")
    ] = {}
    lost_answer_rate: Annotated[
        Rates, Field(description="per method name (or `*`), the share of calls done whose answer is lost")
    ] = {}
    error_codes: Annotated[ErrorCodes, Field(description="the status codes a failing call is drawn from")] = [
        "UNAVAILABLE"
    ]
    latency_s: Annotated[FaultSeconds, Field(description="seconds added to every call")] = 0.0


#: the kinds of event, each a field of ``Event`` (the capacity maps first)
KINDS = (
    *COUNT_MAPS,
    "stockout_after_s",
    "spot_preemptions_per_hour",
    "preempt",
    "job_outcome",
    "delays",
    "api_faults",
)


class Event(SettingsModel):
    """One change at ``at`` (scenario time), reverted at ``until`` when given. Exactly one kind."""

    at: Annotated[Time, Field(description="when the change is made")]
    until: Annotated[Time | None, Field(description="when it is set back (not for `preempt`)")] = None
    quota: Annotated[
        Gpus | None, Field(description="the on-demand quota of one accelerator type in one region")
    ] = None
    preemptible_quota: Annotated[
        Gpus | None, Field(description="the same, the quota of Spot and flex-start jobs")
    ] = None
    stock: Annotated[
        Gpus | None,
        Field(description="free on-demand GPUs (0: a stockout); `until` sets the entry back, or removes it"),
    ] = None
    spot_stock: Annotated[Gpus | None, Field(description="free Spot GPUs")] = None
    flex_start_stock: Annotated[Gpus | None, Field(description="free flex-start GPUs")] = None
    stockout_after_s: Annotated[
        CapacitySeconds | None,
        Field(description="seconds a job waits PENDING for free GPUs before the stockout"),
    ] = None
    spot_preemptions_per_hour: Annotated[
        PerHour | None, Field(description="preemptions per running Spot replica and hour, 0 to 3600")
    ] = None
    preempt: Annotated[
        Preempt | None, Field(description="preempt one replica of every running Spot job that matches, once")
    ] = None
    job_outcome: Annotated[
        JobOutcome | None,
        Field(description="while in force, CustomJobs that match are played, not run"),
    ] = None
    delays: Annotated[Delays | None, Field(description="the scheduling delays of new jobs")] = None
    api_faults: Annotated[
        ApiFaults | None, Field(description="errors, lost answers and latency of the API")
    ] = None

    @property
    def kind(self) -> str:
        return next(name for name in KINDS if getattr(self, name) is not None)

    @model_validator(mode="after")
    def _one_kind(self) -> Event:
        try:
            self._check()
        except ValueError as exc:  # in the emulator's words, without pydantic's "Value error, "
            raise PydanticCustomError("emulator_setting", "{text}", {"text": str(exc)}) from None
        return self

    def _check(self) -> None:
        given = [name for name in KINDS if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                f"must set exactly one kind of event (got {', '.join(given) or 'none'}; "
                f"kinds: {', '.join(KINDS)})"
            )
        if self.until is not None and self.until <= self.at:
            raise ValueError(f"until ({self.until:g}s) must come after at ({self.at:g}s)")
        if self.until is not None and given[0] == "preempt":
            raise ValueError("a preempt event happens once: it takes no until")


class Scenario(SettingsModel):
    """A scenario file: ``version: 1``, ``compression`` (scenario seconds per real second) and the
    ``timeline`` of events (docs/emulator.md, "Scenarios")."""

    version: Annotated[Literal[1], Field(description="the file's format: 1"), rule(_version)]
    compression: Annotated[
        float,
        Field(ge=1, le=MAX_COMPRESSION, description="scenario seconds per real second, 1 to 10000"),
        rule(_compression),
    ] = 1.0
    timeline: Annotated[
        list[Event], Field(max_length=MAX_EVENTS, description="the events, at most 1000")
    ] = []
