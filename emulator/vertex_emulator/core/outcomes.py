"""Job outcomes by rule: what a scenario's ``job_outcome`` events put in force (scenario/player.py) and
the runtime reads where it starts a CustomJob's replicas (runtime/custom_job.py). A job that matches a
rule in force is *played*: its replicas run no code; after ``after_s`` service seconds (core/clock.py)
it ends with the rule's state, exit status or message, its replica having written the rule's log lines.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["JobOutcomes", "PlayedOutcome"]


@dataclass(frozen=True)
class PlayedOutcome:
    """How a matched job ends: ``state`` (``SUCCEEDED``, ``FAILED`` or ``CANCELLED``) after ``after_s``
    service seconds of RUNNING, having waited ``queued_s`` PENDING first, with the primary replica's
    ``exit_status`` (None: the job's error is ``message`` alone), the error's ``error_code`` (None: 3)
    and the ``log_lines`` it wrote."""

    state: str
    after_s: float
    exit_status: int | None = None
    message: str | None = None
    log_lines: tuple[str, ...] = ()
    queued_s: float = 0.0
    error_code: int | None = None


@dataclass
class _Rule:
    matches: Callable[[dict[str, Any]], bool]
    outcome: PlayedOutcome
    left: int | None  # how many more jobs it may match (None: every one)


class JobOutcomes:
    """The rules in force, first added first tried; ``claim(job)`` takes the outcome of the first that
    matches (counting it against the rule's ``first``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: dict[int, _Rule] = {}
        self._next = 0

    def add(
        self, matches: Callable[[dict[str, Any]], bool], outcome: PlayedOutcome, first: int | None = None
    ) -> Callable[[], None]:
        """Put a rule in force; the function that takes it out again."""
        with self._lock:
            key, self._next = self._next, self._next + 1
            self._rules[key] = _Rule(matches, outcome, first)

        def remove() -> None:
            with self._lock:
                self._rules.pop(key, None)

        return remove

    def claim(self, job: dict[str, Any]) -> PlayedOutcome | None:
        """The outcome ``job`` is played with, or None: its replicas run."""
        with self._lock:
            for rule in self._rules.values():
                if rule.left == 0 or not rule.matches(job):
                    continue
                if rule.left is not None:
                    rule.left -= 1
                return rule.outcome
        return None

    def clear(self) -> None:
        """No rule in force (a reset or restore of the emulator's state)."""
        with self._lock:
            self._rules.clear()
