"""The state of the task instance a trigger waits for, read through the triggerer's Task SDK channel.

Airflow's triggerer (3.3) calls a trigger's ``on_kill`` whenever it stops running a trigger that is no
longer assigned to it, with the same "user action" cancel message in two different cases:

* a user ended the deferred task (marked it failed or successful, or cleared it): its trigger is
  deleted, and the job must be cancelled;
* the trigger moved to another triggerer, which took it over because this triggerer's heartbeat was
  older than ``[triggerer] triggerer_health_check_threshold`` (a busy or briefly stalled triggerer,
  with two or more running): the task still waits, on the other triggerer, and its job must run on.

Cancelling in the second case cancels a job another triggerer is waiting on: the task then fails
with a cancelled job and its retry starts a second, billed job. The task instance tells the cases
apart: a task ended or cleared by a user is no longer DEFERRED; one whose trigger only moved still is.
``task_instance_state`` reads that state the way triggers read their XComs, through the
supervisor channel (the triggerer's, or the in-process one of ``dag.test()``): the Task SDK's task
states lookup, which Airflow has no public form of for trigger code (``_compat.task_state``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from airflow_vertex_dist._compat import task_state

__all__ = ["STATE_TIMEOUT_S", "task_instance_state"]

log = logging.getLogger(__name__)

#: bound on the state lookup: on_kill runs within the triggerer's ``on_kill_timeout`` (30 s)
STATE_TIMEOUT_S = 10.0


async def task_instance_state(trigger: Any) -> str | None:
    """The current state of ``trigger``'s task instance (``"deferred"``, ``"failed"``, ...; ``""``
    when it has none, as after a clear, or no longer exists), or ``None`` when it cannot be known: the
    trigger has no task instance or there is no supervisor channel (outside a triggerer), or the
    lookup failed or took over ``STATE_TIMEOUT_S`` seconds (logged)."""
    ti = getattr(trigger, "task_instance", None)
    dag_id, task_id, run_id = (getattr(ti, name, None) for name in ("dag_id", "task_id", "run_id"))
    if not (isinstance(dag_id, str) and isinstance(task_id, str) and isinstance(run_id, str)):
        return None
    raw_index = getattr(ti, "map_index", None)
    map_index = -1 if raw_index is None else int(raw_index)
    try:
        return await asyncio.wait_for(task_state(dag_id, task_id, run_id, map_index), timeout=STATE_TIMEOUT_S)
    except Exception as exc:
        log.warning("Could not read the state of %s.%s of run %s: %r", dag_id, task_id, run_id, exc)
        return None
