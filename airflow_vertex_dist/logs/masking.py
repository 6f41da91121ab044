"""Airflow's secrets masked in every replica or job line a task log gets, in the worker and in the
triggerer alike.

A replica prints what its spec gave it: a value rendered from a sensitive Variable or a connection's
password reaches it through the job's spec (an environment variable, an argument). The worker that
rendered the spec knows the value (the Task SDK told its secrets masker when it read it); the
triggerer, where a deferred task's lines are written, never read it. Handing the values to the
trigger in its kwargs would store them in the metadata database in clear, so the task hands it only
*where* they are: ``secret_spans`` lists, for every string of the job (as the service returned it)
that the worker's masker changes, its JSON pointer and the character spans the masker hid --
positions, never values. The trigger reads the same job from the service anyway (the shared job
poller), takes the values at those spans (``secrets_at``) and teaches them to its own process's masker
(``TriggerSecrets``) before its log stream writes a line; every line is then passed through the
masker (``redact``) as it is written, in the triggerer as in the worker. A secret the spec does not
carry (a replica reading it from elsewhere) is no more known to the worker's masker than to the
triggerer's.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from airflow_vertex_dist._compat import mask_in_trigger, redact

__all__ = ["TriggerSecrets", "secret_spans", "secrets_at"]


def _strings(value: Any, pointer: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _strings(item, f"{pointer}/{index}")


def secret_spans(job: Mapping[str, Any]) -> list[str]:
    """Where the secrets Airflow's masker knows sit in ``job`` (its JSON as the service returns it):
    ``"<start>:<end>:<JSON pointer>"`` for every span of a string the masker hides (no values)."""
    spans: list[str] = []
    for pointer, text in _strings(job):
        masked = redact(text)
        if masked == text:
            continue
        matcher = difflib.SequenceMatcher(None, text, masked, autojunk=False)
        for tag, i1, i2, _, _ in matcher.get_opcodes():
            if tag in ("replace", "delete") and i2 > i1:
                spans.append(f"{i1}:{i2}:{pointer}")
    return spans


def _at(job: Any, pointer: str) -> Any:
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(job, Mapping):
            job = job.get(key)
        elif isinstance(job, list) and key.isdigit() and int(key) < len(job):
            job = job[int(key)]
        else:
            return None
    return job


def secrets_at(job: Mapping[str, Any], spans: Sequence[str]) -> list[str]:
    """The values at ``spans`` (``secret_spans``) of ``job``; spans that no longer fit are left out."""
    values: list[str] = []
    for span in spans:
        start, end, pointer = str(span).split(":", 2)
        text = _at(job, pointer)
        if isinstance(text, str) and 0 <= int(start) < int(end) <= len(text):
            values.append(text[int(start) : int(end)])
    return values


class TriggerSecrets:
    """A trigger's secrets: learnt from its job at the first update, before a line is written."""

    def __init__(self, spans: Sequence[str]) -> None:
        self.spans = [str(span) for span in spans]
        self.ready = asyncio.Event()
        if not self.spans:
            self.ready.set()

    async def learn(self, job: Mapping[str, Any]) -> None:
        """Teach the masker of this process the values at the spans of ``job``."""
        if self.ready.is_set():
            return
        try:
            for value in secrets_at(job, self.spans):
                await mask_in_trigger(value)
        finally:
            self.ready.set()

    @staticmethod
    def mask(text: str) -> str:
        return redact(text)
