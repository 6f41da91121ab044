"""The Airflow version notes of the package, in one place, each with the reason it matters.

The package supports Airflow 3.1, 3.2 and 3.3 (pyproject; every one is tested: ``tests/compat/matrix.py``).
No code path branches on the version: the names that moved are imported here, once, from where the
running Airflow keeps them, and the rest of the package imports them from this module.

- Airflow 3.1 moved ``BaseHook`` into the Task SDK (``airflow.sdk``); that is the supported import.
- Airflow 3.2 moved ``conf`` into the Task SDK (``airflow.sdk.conf``) and gave it its own exception
  classes (``airflow.sdk.exceptions``: ``AirflowException``, ``AirflowFailException``,
  ``AirflowTaskTimeout``, ``TaskDeferralTimeout``). Airflow 3.1's Task SDK has neither: there ``conf``
  is ``airflow.configuration.conf`` and the exceptions are ``airflow.exceptions``' (the ones 3.1's task
  runner raises and catches), so ``conf`` and the four exceptions below fall back to those.
- Airflow >= 3.2 reads the connection form declaratively from the provider info ("conn-fields",
  "ui-field-behaviour"); older versions only call the hook's ``get_connection_form_widgets()``. The
  hook keeps both, built from one declaration in ``hooks/connection.py``.
- Airflow 3.3 added ``BaseTrigger.on_kill()``: the triggerer calls it when it stops a trigger "by
  user action": when a user kills a deferred task (mark failed / clear / mark success), and also when
  another triggerer took the trigger over (two or more triggerers, this one's heartbeat late), never on
  a triggerer restart. ``VertexJobTrigger.on_kill`` tells the two apart by the task instance's state
  (``triggers/task_state.py``: still deferred means the trigger only moved). Before 3.3 it is never
  called; the operator's own ``on_kill`` still covers non-deferred waits.
- Even on 3.3 the triggerer only calls ``on_kill`` for a trigger it had started: a deferred task
  marked by hand in the second or two before the triggerer's next loop loses its trigger unstarted.
  The package's listener (``listeners.py``, an ``airflow.plugins`` entry point) covers that: the REST
  API fires ``on_task_instance_failed``/``_success`` with ``previous_state=None`` for a state set by
  hand (3.1, 3.2 and 3.3 do; the stack suite checks it on 3.3), and the listener cancels the job the
  try owns. Marking a whole run by hand fires only ``on_dag_run_failed``/``_success`` before 3.3
  (``msg=""``); the listener handles those too.

- Airflow 3.3 moved the secrets masker to ``airflow.sdk._shared.secrets_masker`` and left a
  deprecated alias (a ``DeprecatedImportWarning`` on import) at ``airflow.sdk.execution_time.secrets_masker``,
  its only home in 3.1 and 3.2. ``redact`` imports it from where the running Airflow keeps it, newest first.

And one Python version note:

- Python 3.10 (supported): ``asyncio.wait_for`` raises ``asyncio.TimeoutError``, which only became an
  alias of the built-in ``TimeoutError`` in 3.11. The triggers catch ``ASYNC_TIMEOUT`` instead.
"""

from __future__ import annotations

import asyncio

from airflow.sdk import BaseHook

try:  # Airflow >= 3.2 (see above)
    from airflow.sdk import conf
    from airflow.sdk.exceptions import (
        AirflowException,
        AirflowFailException,
        AirflowTaskTimeout,
        TaskDeferralTimeout,
    )
except ImportError:  # Airflow 3.1: the core's configuration and exceptions, which its task runner uses
    from airflow.configuration import conf  # type: ignore[no-redef,assignment,unused-ignore]
    from airflow.exceptions import (  # type: ignore[no-redef,assignment,attr-defined,unused-ignore]
        AirflowException,
        AirflowFailException,
        AirflowTaskTimeout,
        TaskDeferralTimeout,
    )

__all__ = [
    "ASYNC_TIMEOUT",
    "AirflowException",
    "AirflowFailException",
    "AirflowTaskTimeout",
    "BaseHook",
    "TaskDeferralTimeout",
    "conf",
    "redact",
]

#: What ``asyncio.wait_for`` raises on a timeout, on every supported Python (see above).
ASYNC_TIMEOUT: tuple[type[BaseException], ...] = (TimeoutError, asyncio.TimeoutError)


def redact(text: str) -> str:
    """``text`` with every secret Airflow's secrets masker knows replaced (see the module notes)."""
    try:
        from airflow.sdk._shared.secrets_masker import redact as _redact
    except ImportError:  # Airflow 3.1 and 3.2
        from airflow.sdk.execution_time.secrets_masker import (  # type: ignore[no-redef,unused-ignore]
            redact as _redact,
        )
    return str(_redact(text))
