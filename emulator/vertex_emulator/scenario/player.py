"""Playing a scenario: each event applied at start + ``at`` / ``compression`` (real time) and reverted
at ``until``, through the update paths the admin API uses (``GpuCapacity.update`` for capacity,
``update_faults`` for faults, ``GpuCapacity.preempt`` for a preemption), so a scenario's change and an
admin PUT are one rule.

``ScenarioClock`` tells scenario time (``now()``); its monotonic source is injectable, so a test moves
time and calls ``ScenarioPlayer.step()`` instead of sleeping. Played by an emulator, the clock reads the
service's clock (core/clock.py), which the scenario paces: the waits the service times itself (queued,
pending, provisioning, the stockout wait, the Spot timers) and the times it writes are in scenario time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vertex_emulator.capacity.ledger import GpuCapacity
from vertex_emulator.capacity.settings import COUNT_MAPS
from vertex_emulator.core.clock import ServiceClock
from vertex_emulator.core.config import Faults
from vertex_emulator.core.errors import ApiError
from vertex_emulator.core.faults import faults_to_json, update_faults
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.core.outcomes import PlayedOutcome
from vertex_emulator.scenario.model import Event, Gpus, JobOutcome, Preempt, Scenario

__all__ = ["ScenarioClock", "ScenarioPlayer", "ScenarioSlot"]

Undo = Callable[[], None]


class ScenarioClock:
    """Scenario seconds since ``start()``: real seconds times ``compression``; or, with ``service``,
    that clock's seconds, ``start()`` setting its pace to ``compression`` (one clock for the timeline
    and the service's own waits)."""

    def __init__(
        self,
        compression: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
        service: ServiceClock | None = None,
    ) -> None:
        self.compression = compression
        self._service = service
        self._monotonic = monotonic if service is None else service.monotonic
        self._scale = compression if service is None else 1.0
        self._t0: float | None = None

    def start(self) -> None:
        if self._service is not None:
            self._service.set_compression(self.compression)
        self._t0 = self._monotonic()

    def stop(self) -> None:
        """Back to real time (service time goes on from where it is)."""
        if self._service is not None:
            self._service.set_compression(1.0)

    def now(self) -> float:
        """Scenario seconds since the start (0 before it)."""
        return 0.0 if self._t0 is None else (self._monotonic() - self._t0) * self._scale

    def real_seconds_until(self, scenario_s: float) -> float:
        """Real seconds from now until scenario time ``scenario_s`` (0 when it is past)."""
        return max(0.0, (scenario_s - self.now()) / self.compression)


@dataclass(frozen=True)
class _Step:
    at_s: float
    index: int
    revert: bool


class ScenarioPlayer:
    """Plays ``scenario`` on ``gpus`` (its settings) and ``faults``; ``store`` reads the jobs a
    preemption rule matches. ``start()`` runs it on a thread; ``step()`` applies what is due now."""

    def __init__(
        self,
        scenario: Scenario,
        gpus: GpuCapacity,
        faults: Faults,
        store: JobStore | None = None,
        clock: ScenarioClock | None = None,
    ) -> None:
        self.scenario = scenario
        self.gpus = gpus
        self.faults = faults
        self.store = store
        self.clock = clock if clock is not None else ScenarioClock(scenario.compression)
        steps = [_Step(event.at, i, False) for i, event in enumerate(scenario.timeline)]
        steps += [_Step(e.until, i, True) for i, e in enumerate(scenario.timeline) if e.until is not None]
        # at one time, reverts first (an event ending as another starts leaves the new one in force)
        self._steps = sorted(steps, key=lambda s: (s.at_s, not s.revert, s.index))
        self._next = 0
        self._undo: dict[int, Undo] = {}
        self._log: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- running -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the clock, apply what is due at time 0 (in force when this returns), play the rest."""
        self.clock.start()
        self.step()
        self._thread = threading.Thread(target=self._run, name="vertex-emulator-scenario", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.clock.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.step()
            with self._lock:
                if self._next >= len(self._steps):
                    return
                due = self._steps[self._next].at_s
            self._stop.wait(self.clock.real_seconds_until(due))

    def step(self) -> int:
        """Apply (or revert) every step due by the clock's now; how many were."""
        done = 0
        with self._lock:
            while self._next < len(self._steps) and self._steps[self._next].at_s <= self.clock.now():
                self._play(self._steps[self._next])
                self._next += 1
                done += 1
        return done

    def _play(self, step: _Step) -> None:
        event = self.scenario.timeline[step.index]
        entry: dict[str, Any] = {
            "at_s": step.at_s,
            "played_at_s": round(self.clock.now(), 3),
            "event": step.index,
            "kind": event.kind,
            "action": "revert" if step.revert else "apply",
        }
        try:
            if step.revert:
                self._undo.pop(step.index, lambda: None)()
            else:
                undo, detail = self._apply(event)
                if undo is not None:
                    self._undo[step.index] = undo
                if detail:
                    entry["detail"] = detail
        except (ApiError, ValueError) as exc:  # a rule the running emulator refused: told, not fatal
            entry["error"] = str(exc)
        self._log.append(entry)

    # -- each kind ---------------------------------------------------------------------------------

    def _apply(self, event: Event) -> tuple[Undo | None, str]:
        kind = event.kind
        if kind in COUNT_MAPS:
            gpus = getattr(event, kind)
            return self._set_count(kind, gpus), f"{gpus.region} {gpus.accelerator}: {gpus.count}"
        if kind in ("stockout_after_s", "spot_preemptions_per_hour"):
            return self._set_capacity({kind: getattr(event, kind)}), ""
        if event.preempt is not None:
            return None, self._preempt(event.preempt)
        if event.job_outcome is not None:
            return self._job_outcome(event.job_outcome)
        part = event.delays if kind == "delays" else event.api_faults
        assert part is not None
        return self._set_faults({name: getattr(part, name) for name in part.model_fields_set}), ""

    def _set_count(self, field: str, gpus: Gpus) -> Undo:
        def put(count: int | None) -> int | None:
            with self.gpus.settings.lock:
                current: dict[str, dict[str, int]] = getattr(self.gpus.settings, field)
                table = {region: dict(counts) for region, counts in current.items()}
            counts = table.setdefault(gpus.region, {})
            before = counts.pop(gpus.accelerator, None)
            if count is not None:
                counts[gpus.accelerator] = count
            if not counts:
                del table[gpus.region]
            self.gpus.update({field: table})
            return before

        before = put(gpus.count)

        def undo() -> None:
            put(before)

        return undo

    def _set_capacity(self, changes: dict[str, Any]) -> Undo:
        with self.gpus.settings.lock:
            before = {name: getattr(self.gpus.settings, name) for name in changes}
        self.gpus.update(changes)
        return lambda: self.gpus.update(before)

    def _set_faults(self, changes: dict[str, Any]) -> Undo:
        current = faults_to_json(self.faults)
        before = {name: current[name] for name in changes}
        update_faults(self.faults, changes)
        return lambda: update_faults(self.faults, before)

    def _preempt(self, rule: Preempt) -> str:
        preempted = []
        for name in self.gpus.snapshot()["spot_jobs"]:
            job = self._job(name)
            if job is not None and rule.matches(job):
                self.gpus.preempt(name, rule.replica)
                preempted.append(name)
        return f"preempted {rule.replica} of {len(preempted)} job(s): {', '.join(preempted) or '-'}"

    def _job_outcome(self, rule: JobOutcome) -> tuple[Undo, str]:
        if self.store is None:
            raise ValueError("job_outcome needs the emulator's job store")
        played = PlayedOutcome(
            state=rule.state,
            after_s=rule.after,
            exit_status=rule.exit_status,
            message=rule.message,
            log_lines=tuple(rule.log_lines),
            queued_s=rule.queued,
            error_code=rule.error_code,
        )
        first = "" if rule.first is None else f" (the first {rule.first})"
        detail = f"jobs matching {rule.display_name!r}{first} end {rule.state} after {rule.after:g}s"
        return self.store.outcomes.add(rule.matches, played, rule.first), detail

    def _job(self, name: str) -> dict[str, Any] | None:
        if self.store is None:
            return {}
        try:
            return self.store.get(name)
        except (KeyError, ApiError):
            return None

    # -- views -------------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """``GET /emulator/scenario``: scenario time, the steps played so far and how many are left."""
        with self._lock:
            played = [dict(entry) for entry in self._log]
            left = len(self._steps) - self._next
        return {
            "time_s": round(self.clock.now(), 3),
            "compression": self.clock.compression,
            "events": len(self.scenario.timeline),
            "played": played,
            "steps_left": left,
            "done": left == 0,
        }


class ScenarioSlot:
    """The scenario an emulator plays (none at first): ``play`` stops the one playing (what it set stays
    in force) and plays another from its time 0; ``status`` is ``GET /emulator/scenario``'s answer."""

    def __init__(self, gpus: GpuCapacity, faults: Faults, store: JobStore | None = None) -> None:
        self.gpus = gpus
        self.faults = faults
        self.store = store
        self.player: ScenarioPlayer | None = None
        self._lock = threading.Lock()

    def play(self, scenario: Scenario) -> ScenarioPlayer:
        service = self.store.clock if self.store is not None else None
        clock = ScenarioClock(scenario.compression, service=service)
        player = ScenarioPlayer(scenario, self.gpus, self.faults, self.store, clock)
        with self._lock:
            old, self.player = self.player, player
        if old is not None:
            old.stop()
        player.start()
        return player

    def stop(self) -> None:
        with self._lock:
            player = self.player
        if player is not None:
            player.stop()

    def clear(self) -> None:
        """Stop the scenario playing and forget it (``status``: not playing); what it set stays until
        the caller sets it back (a reset or restore of the emulator's state)."""
        with self._lock:
            player, self.player = self.player, None
        if player is not None:
            player.stop()

    def status(self) -> dict[str, Any]:
        with self._lock:
            player = self.player
        return {"playing": False} if player is None else {"playing": True, **player.status()}
