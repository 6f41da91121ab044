"""Every Airflow version branch of the package, in one place, each with the reason it exists.

The package supports Airflow >= 3.1 (pyproject). Import from here instead of testing versions in place.
"""

from __future__ import annotations

from importlib.metadata import version as _dist_version

__all__ = [
    "AIRFLOW_VERSION",
    "AIRFLOW_V_3_2_PLUS",
    "AIRFLOW_V_3_3_PLUS",
    "DECLARATIVE_CONNECTION_FORM",
    "TRIGGER_ON_KILL",
    "BaseHook",
]


def _version_tuple(text: str) -> tuple[int, int, int]:
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) or "0"
        parts.append(int(digits))
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


AIRFLOW_VERSION = _version_tuple(_dist_version("apache-airflow-core"))
AIRFLOW_V_3_2_PLUS = AIRFLOW_VERSION >= (3, 2, 0)
AIRFLOW_V_3_3_PLUS = AIRFLOW_VERSION >= (3, 3, 0)

# Airflow 3.1 moved BaseHook into the Task SDK (``airflow.sdk``); that is the supported import since.
from airflow.sdk import BaseHook  # noqa: E402

# Airflow >= 3.2 reads the connection form declaratively from the provider info ("conn-fields",
# "ui-field-behaviour") and warns when a hook defines get_connection_form_widgets(); older versions
# only call the hook methods. The hook keeps both (built from one declaration in hooks/connection.py).
DECLARATIVE_CONNECTION_FORM = AIRFLOW_V_3_2_PLUS

# Airflow 3.3 added ``BaseTrigger.on_kill()``: the triggerer calls it only when a user kills a deferred
# task (mark failed / clear / mark success), never on a triggerer restart or redistribution. Before
# 3.3 a trigger cannot tell a kill from a restart, so cancelling there would cancel jobs on every
# triggerer deploy: on older versions VertexJobTrigger does not cancel (the operator's on_kill still
# covers non-deferred waits).
TRIGGER_ON_KILL = AIRFLOW_V_3_3_PLUS
