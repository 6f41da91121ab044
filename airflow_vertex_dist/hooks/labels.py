"""Labels that tie a Vertex AI job to the Airflow task instance that launched it.

Pure: no Google or Airflow imports, so DAG files and operators can use it at parse time.

The Vertex AI label rules live in ``airflow_vertex_dist.common.labels`` (shared with the specs):
at most 64 labels; keys and values at most 63 lowercase (or caseless) letters, numbers, ``_`` and
``-``, international letters included, and at most 127 bytes in UTF-8; keys start with a letter or a
number. The project also makes every value
it writes start with a letter, so a value is never mistaken for a number by filter parsers.

Airflow identifiers do not always fit those rules. ``sanitize_label_value`` keeps one that fits
and maps any other into the alphabet with a short hash of the original appended (see its docstring
for what that guarantees). ``airflow-run`` is always a hash of the whole task instance key (dag id,
task id, run id, map index): it is the find-again handle, and ``airflow-dag``/``airflow-task`` are
for people reading the console. ``airflow-spec`` is the fingerprint of the rendered spec
(``spec_fingerprint``): a job is only adopted by a task whose spec has the same one. ``airflow-rung``
(``r1``, ``r2``...) names the rung of a capacity ladder a job was made for (``rung_label``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from airflow_vertex_dist.common.labels import (
    MAX_LABEL_BYTES,
    MAX_LABEL_LENGTH,
    MAX_LABELS,
    is_label_char,
    is_label_letter,
    labels_error,
)
from airflow_vertex_dist.common.regex import LazyRegex

__all__ = [
    "BUDGET_LABEL",
    "DAG_LABEL",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_VALUE",
    "MAX_LABELS",
    "MAX_LABEL_LENGTH",
    "PROVIDER_LABELS",
    "RUNG_LABEL",
    "RUN_LABEL",
    "SPEC_LABEL",
    "TASK_LABEL",
    "label_filter",
    "merge_labels",
    "run_hash",
    "retry_budget",
    "run_labels",
    "rung_label",
    "rung_of",
    "sanitize_label_value",
    "spec_fingerprint",
    "task_labels",
    "validate_labels",
]

MANAGED_BY_LABEL = "managed-by"
MANAGED_BY_VALUE = "airflow-vertex-dist"
DAG_LABEL = "airflow-dag"
TASK_LABEL = "airflow-task"
RUN_LABEL = "airflow-run"
SPEC_LABEL = "airflow-spec"
BUDGET_LABEL = "airflow-budget"
RUNG_LABEL = "airflow-rung"
#: The one-off token of a Create call (``CREATE_TOKEN_LABEL``).
_CREATE_TOKEN_LABEL = "create-token"

#: The labels the provider itself writes: left out of ``spec_fingerprint``.
PROVIDER_LABELS = frozenset(
    {
        MANAGED_BY_LABEL,
        DAG_LABEL,
        TASK_LABEL,
        RUN_LABEL,
        SPEC_LABEL,
        BUDGET_LABEL,
        RUNG_LABEL,
        _CREATE_TOKEN_LABEL,
    }
)

_HASH_LEN = 8
#: What a lossy ``sanitize_label_value`` ends with; a value that fits but looks like it is hashed too.
_HASHED_TAIL = LazyRegex(r".*-[0-9a-f]{8}")


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _fits(value: str) -> bool:
    return (
        0 < len(value) <= MAX_LABEL_LENGTH
        and _utf8_size(value) <= MAX_LABEL_BYTES
        and is_label_letter(value[0])
        and all(map(is_label_char, value))
    )


def _cut(text: str, chars: int, size: int) -> str:
    """The longest start of ``text`` with at most ``chars`` code points and ``size`` UTF-8 bytes."""
    out = text[:chars]
    while _utf8_size(out) > size:
        out = out[:-1]
    return out


def _replace_invalid_runs(text: str) -> str:
    """``text`` with every run of characters a label may not hold replaced by one ``-``."""
    out: list[str] = []
    in_run = False
    for ch in text:
        if is_label_char(ch):
            out.append(ch)
            in_run = False
        elif not in_run:
            out.append("-")
            in_run = True
    return "".join(out)


def sanitize_label_value(value: str) -> str:
    """Map ``value`` into a valid label value that starts with a letter.

    The result is ``value`` itself when it already is one (international letters included) and does
    not end like a hashed value (``-`` and 8 lowercase hex digits). Otherwise it is the lowercased
    value with every run of characters a label may not hold replaced by ``-``, prefixed with ``x``
    when it does not start with a letter, cut so that ``-<first 8 hex digits of sha256(value)>`` fits
    in 63 characters and 127 UTF-8 bytes, and that suffix.

    What is guaranteed: two different values give different results unless both were hashed and
    their SHA-256 digests share the first 32 bits (about one pair in 4 billion). A kept value never
    ends like a hashed one, so it never equals a hashed result (``"My_DAG"`` and
    ``"my_dag-fec1e61d"`` differ). The labels are for reading; finding a run's job again relies on
    ``airflow-run`` (``run_hash``, 160 bits), not on these.
    """
    if _fits(value) and not _HASHED_TAIL.fullmatch(value):
        return value
    base = _replace_invalid_runs(value.lower())
    if not base or not is_label_letter(base[0]):
        base = "x" + base
    suffix = "-" + _digest(value, _HASH_LEN)
    return _cut(base, MAX_LABEL_LENGTH - len(suffix), MAX_LABEL_BYTES - len(suffix)).rstrip("-") + suffix


def run_hash(dag_id: str, task_id: str, run_id: str, map_index: int = -1) -> str:
    """The ``airflow-run`` label value: ``r`` + 40 hex digits of sha256 over the task instance key."""
    key = json.dumps([dag_id, task_id, run_id, int(map_index)], separators=(",", ":"))
    return "r" + _digest(key, 40)


def run_labels(dag_id: str, task_id: str, run_id: str, map_index: int = -1) -> dict[str, str]:
    """The four labels every job launched by this provider carries."""
    return {
        MANAGED_BY_LABEL: MANAGED_BY_VALUE,
        DAG_LABEL: sanitize_label_value(dag_id),
        TASK_LABEL: sanitize_label_value(task_id),
        RUN_LABEL: run_hash(dag_id, task_id, run_id, map_index),
    }


def task_labels(labels: dict[str, str], body: dict[str, Any], retry_budget: str | None) -> dict[str, str]:
    """The labels that make a job a task's: the run's (``run_labels``), the spec fingerprint
    (``spec_fingerprint``) and the retry budget (``retry_budget``), when known."""
    out = {**labels, SPEC_LABEL: spec_fingerprint(body)}
    if retry_budget is not None:
        out[BUDGET_LABEL] = retry_budget
    return out


def retry_budget(max_tries: int) -> str:
    """The ``airflow-budget`` label value of a try: ``m`` + the task instance's ``max_tries``.

    Airflow stores ``max_tries`` with the task instance: a retry keeps it, and clearing the task
    sets it to ``try_number + retries``, so it names the retry budget a try belongs to, and the
    label on a job is the durable record of the budget of the try that made it. Unlike
    ``max_tries - retries + 1`` it does not depend on the ``retries`` of the DAG file now: lowering
    ``retries`` between two tries does not make the second one look like the first after a clear.
    One case it cannot tell apart: a clear that comes with ``retries`` lowered by exactly the number
    of tries run since the budget began gives the same value again, and is taken for a retry.
    """
    if max_tries < 0:
        return "m-" + str(-max_tries)
    return f"m{max_tries}"


def rung_label(number: int) -> dict[str, str]:
    """The label of a capacity ladder's rung ``number`` (1-based): ``{"airflow-rung": "r<number>"}``."""
    if number < 1:
        raise ValueError(f"rung number: must be at least 1 (got {number})")
    return {RUNG_LABEL: f"r{number}"}


def rung_of(labels: Mapping[str, str] | None) -> int | None:
    """The rung number a job's labels record, or ``None`` (no ladder, or a value this package does not
    write)."""
    value = (labels or {}).get(RUNG_LABEL, "")
    if len(value) > 1 and value[0] == "r" and value[1:].isdigit() and value[1] != "0":
        return int(value[1:])
    return None


def validate_labels(labels: Mapping[str, str], *, field: str = "labels") -> None:
    """Raise ``ValueError`` naming ``field`` (or ``field.<key>``) and the rule for the first label that
    breaks one (``airflow_vertex_dist.common.labels``: the specs' rule too)."""
    error = labels_error(field, labels)
    if error is not None:
        raise ValueError(error)


def spec_fingerprint(body: Mapping[str, Any]) -> str:
    """The ``airflow-spec`` label value of a job request body: ``s`` + 40 hex digits of SHA-256.

    What is hashed: the request body as the hook sends it to Create (the v1 JSON of the rendered
    spec: camelCase keys, enum names), with the provider's own labels (``PROVIDER_LABELS``:
    ``managed-by``, ``airflow-dag``, ``airflow-task``, ``airflow-run``, ``airflow-spec``,
    ``airflow-budget``, ``airflow-rung`` and ``create-token``, which differ per run or per call)
    removed from ``labels``, written as canonical
    JSON (keys sorted, no whitespace, UTF-8, non-ASCII kept as is). The user's own labels count: they
    are part of the spec. Two bodies that differ in any other field -- a machine type, an argument,
    an environment variable, the display name -- have different fingerprints.
    """
    labels = {k: v for k, v in (body.get("labels") or {}).items() if k not in PROVIDER_LABELS}
    canonical = {**body, "labels": labels} if labels else {k: v for k, v in body.items() if k != "labels"}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "s" + _digest(text, 40)


def merge_labels(
    base: Mapping[str, str] | None, extra: Mapping[str, str], *, field: str = "labels"
) -> dict[str, str]:
    """``base`` updated with ``extra`` (``extra`` wins), validated."""
    merged = dict(base or {})
    merged.update(extra)
    validate_labels(merged, field=field)
    return merged


def label_filter(labels: Mapping[str, str]) -> str:
    """The JobService List filter matching every one of ``labels``: ``labels.k="v" AND ...``.

    Keys are sorted so the same labels always give the same filter.
    """
    if not labels:
        raise ValueError("labels: at least one label is needed to build a filter")
    validate_labels(labels)
    return " AND ".join(f'labels.{key}="{labels[key]}"' for key in sorted(labels))
