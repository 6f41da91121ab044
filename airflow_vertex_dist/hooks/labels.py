"""Labels that tie a Vertex AI job to the Airflow task instance that launched it.

Pure: no Google or Airflow imports, so DAG files and operators can use it at parse time.

Vertex AI label rules (vertex-facts.md): at most 64 labels; keys and values at most 63 characters of
lowercase letters, digits, ``_`` and ``-``; keys start with a letter. The project also makes every value
it writes start with a letter, so a value is never mistaken for a number by filter parsers.

Airflow identifiers do not fit those rules as they are. :func:`sanitize_label_value` maps them into the
alphabet and, whenever that loses information (case, characters, length), appends a short hash of the
original, so two different DAG ids never share a label value. ``airflow-run`` is always a hash of the
whole task instance key (dag id, task id, run id, map index): it is the find-again handle.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from airflow_vertex_dist._regex import LazyRegex

__all__ = [
    "DAG_LABEL",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_VALUE",
    "MAX_LABELS",
    "MAX_LABEL_LENGTH",
    "RUN_LABEL",
    "TASK_LABEL",
    "label_filter",
    "merge_labels",
    "run_hash",
    "run_labels",
    "sanitize_label_value",
    "validate_labels",
]

MANAGED_BY_LABEL = "managed-by"
MANAGED_BY_VALUE = "airflow-vertex-dist"
DAG_LABEL = "airflow-dag"
TASK_LABEL = "airflow-task"
RUN_LABEL = "airflow-run"

MAX_LABELS = 64
MAX_LABEL_LENGTH = 63

_KEY_RE = LazyRegex(r"^[a-z][a-z0-9_-]{0,62}$")
_VALUE_RE = LazyRegex(r"^[a-z0-9_-]{0,63}$")
_INVALID_CHARS = LazyRegex(r"[^a-z0-9_-]+")
_HASH_LEN = 8


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def sanitize_label_value(value: str) -> str:
    """Map ``value`` into a valid label value that starts with a letter.

    The result equals ``value`` when it already fits; otherwise it is the lowercased value with
    invalid runs replaced by ``-``, prefixed with ``x`` when it does not start with a letter, cut so
    that ``-<8 hex digits of sha256(value)>`` fits in 63 characters.
    """
    if value and _VALUE_RE.match(value) and value[0].isalpha():
        return value
    base = _INVALID_CHARS.sub("-", value.lower())
    if not base or not ("a" <= base[0] <= "z"):
        base = "x" + base
    suffix = "-" + _digest(value, _HASH_LEN)
    return base[: MAX_LABEL_LENGTH - len(suffix)].rstrip("-") + suffix


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


def validate_labels(labels: Mapping[str, str], *, field: str = "labels") -> None:
    """Raise ``ValueError`` naming ``field.<key>`` and the rule for the first label that breaks one."""
    if len(labels) > MAX_LABELS:
        raise ValueError(f"{field}: at most {MAX_LABELS} labels are allowed (got {len(labels)})")
    for key, value in labels.items():
        if not isinstance(key, str) or not _KEY_RE.match(key):
            raise ValueError(
                f"{field}: key {key!r} must be 1-63 lowercase letters, digits, '_' or '-', "
                "starting with a letter"
            )
        if not isinstance(value, str) or not _VALUE_RE.match(value):
            raise ValueError(
                f"{field}.{key}: value {value!r} must be at most 63 lowercase letters, digits, '_' or '-'"
            )


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
