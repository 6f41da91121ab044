"""The Airflow version notes of the package, and its only uses of Airflow internals, in one place.

The package supports Airflow 3.1, 3.2 and 3.3 (pyproject; every one is tested: ``tests/compat/matrix.py``).
No code path branches on the version: the names that moved are imported here, once, from where the
running Airflow keeps them, and the rest of the package imports them from this module.

Everywhere else the package uses Airflow's public interface only: the Task SDK (``airflow.sdk``), the
trigger, listener and plugin base classes, and the Task SDK's ``XCom``, which Airflow's "Public
Interface" page lists as a public utility under its own path (``airflow.sdk.execution_time.xcom``).
``tests/test_architecture.py`` fails when a module other than this one imports an Airflow module
outside that list (its ``PUBLIC_AIRFLOW``, which also names the OpenLineage provider's API). The
internals the package needs, where no public API serves, are the functions at the end of this
module; ``tests/compat/test_internals.py`` exercises each against the installed Airflow on every cell
of the support matrix (through ``dag.test()``'s in-process supervisor; the triggerer's own channel is
the stack suite's, on 3.3), so an internal that moves fails there first.

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
- The secrets masker's ``redact`` is re-exported by the Task SDK's ``airflow.sdk.log`` (the module of
  the documented ``mask_secret``) on 3.1.8, 3.2.2 and 3.3.2, from the masker's home since 3.1
  (``airflow.sdk._shared.secrets_masker``); the older path ``airflow.sdk.execution_time.secrets_masker``
  warns as deprecated on 3.3. ``redact`` is neither in the Task SDK's reference nor an explicit export of
  that module, hence its place here.

The internals (Task SDK and core modules outside the public interface), each the same on 3.1, 3.2 and
3.3:

- **The supervisor channel** (``airflow.sdk.execution_time.task_runner.SUPERVISOR_COMMS``): whether this
  process has one (a task in a worker, a trigger in a triggerer, ``dag.test()``'s in-process one), and
  whether it carries the Task SDK's async calls (the triggerer's does; the in-process one answers sync
  calls only). The log cursor (``logs/cursor.py``) needs both: outside a supervised process
  there are no XComs to keep it in, and the async XCom calls (Airflow >= 3.3) fail on a sync-only
  channel. The Task SDK has no public "am I supervised" question.
- **Where a trigger runs** (``resume_race_possible``): a triggerer, or ``dag.test()``'s in-process
  runner (its channel is the internal ``InProcessSupervisorComms`` of
  ``airflow.sdk.execution_time.supervisor``). Only in a triggerer can Airflow's resume-after-defer race
  fail a resumed try (``triggers/base.py``'s ``RESUME_HOLD_S``), so only there is the event held.
- **A task instance's state, read from a trigger** (``task_state``): the Task SDK's public
  ``RuntimeTaskInstanceProtocol.get_task_states`` is a method of the running task's own instance
  (``context["ti"]``), which a trigger does not have; its implementation is a static method of the
  internal ``RuntimeTaskInstance`` (``airflow.sdk.execution_time.task_runner``), called here as the
  Kubernetes provider's pod trigger calls it, off the event loop, through the same channel.
- **The DAGs a DAG file defines** (``dags_in_file``, for ``airflow-vertex-dist render``): the DAG
  processor's own ``DagBag`` (re-exported by ``airflow.models`` from ``airflow.models.dagbag`` on 3.1 and
  ``airflow.dag_processing.dagbag`` on 3.2 and 3.3), so that render finds what Airflow finds: the
  module's DAG globals and the DAGs ``with DAG(...)`` and a called ``@dag`` function register
  themselves (the Task SDK's ``DagContext``), with Airflow's import errors. The Task SDK has no public
  "load this DAG file".
- **The XComs of a run, read by the listener and the view** (``xcom_rows``): the listener runs in the API
  server and the scheduler, which have no supervisor channel, so the Task SDK's ``XCom`` cannot serve
  it, and the REST API would need credentials; it reads the metadata DB through the core's
  ``XComModel`` and ``create_session`` (``airflow.models.xcom``, ``airflow.utils.session``).

And one Python version note:

- Python 3.10 (supported): ``asyncio.wait_for`` raises ``asyncio.TimeoutError``, which only became an
  alias of the built-in ``TimeoutError`` in 3.11. The triggers catch ``ASYNC_TIMEOUT`` instead.
"""

from __future__ import annotations

import asyncio
from typing import Any

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
    "async_supervisor_channel",
    "conf",
    "dags_in_file",
    "has_supervisor_channel",
    "mask_in_trigger",
    "redact",
    "resume_race_possible",
    "task_state",
]

#: What ``asyncio.wait_for`` raises on a timeout, on every supported Python (see above).
ASYNC_TIMEOUT: tuple[type[BaseException], ...] = (TimeoutError, asyncio.TimeoutError)


def redact(text: str) -> str:
    """``text`` with every secret Airflow's secrets masker knows replaced (see the module notes)."""
    from airflow.sdk.log import redact as _redact  # type: ignore[attr-defined,unused-ignore]

    return str(_redact(text))


async def mask_in_trigger(value: str) -> None:
    """Teach ``value`` to the secrets masker of a trigger's process (and, where the Task SDK carries
    it, to its triggerer's: ``amask_secret``, 3.3); on older versions to the process's own masker, which
    ``redact`` reads (the sync ``mask_secret`` would send on the supervisor channel from the loop)."""
    import airflow.sdk.log as sdk_log

    amask = getattr(sdk_log, "amask_secret", None)
    if amask is not None:
        await amask(value)
    else:
        sdk_log._secrets_masker().add_mask(value)  # type: ignore[attr-defined,unused-ignore]


# --- Airflow internals: no public API serves these (the module notes say why; each is exercised on
# --- every cell of the support matrix by tests/compat/test_internals.py).


def _supervisor_channel() -> Any:
    # Internal: the Task SDK's channel to the process's supervisor, a module global of the task runner
    # (unset outside a supervised process). Airflow 3.1, 3.2 and 3.3.
    from airflow.sdk.execution_time import task_runner

    return getattr(task_runner, "SUPERVISOR_COMMS", None)


def has_supervisor_channel() -> bool:
    """Whether this process has a Task SDK channel to a supervisor (a task in a worker, a trigger in a
    triggerer, ``dag.test()``'s in-process one): the Task SDK's XCom, Connection and Variable calls
    work only there."""
    return _supervisor_channel() is not None


def async_supervisor_channel() -> bool:
    """Whether the supervisor channel carries the Task SDK's async calls (``XCom.aget_one``, ...):
    the triggerer's does; ``dag.test()``'s in-process one answers sync calls only."""
    return hasattr(_supervisor_channel(), "asend")


def resume_race_possible() -> bool:
    """Whether a trigger runs where its event resumes the task through a scheduler and an executor (a
    triggerer), which is where Airflow's resume-after-defer race lives (``triggers/base.py``'s
    ``RESUME_HOLD_S``): a supervisor channel that is not ``dag.test()``'s in-process one."""
    channel = _supervisor_channel()
    if channel is None:
        return False
    from airflow.sdk.execution_time.supervisor import InProcessSupervisorComms

    return not isinstance(channel, InProcessSupervisorComms)


def _task_states(dag_id: str, task_id: str, run_id: str, map_index: int) -> dict[str, Any]:
    # Internal: RuntimeTaskInstance is the task runner's implementation of the public
    # RuntimeTaskInstanceProtocol; get_task_states is a static method that asks the supervisor
    # (GetTaskStates over the channel). Airflow 3.1, 3.2 and 3.3, same signature.
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    return RuntimeTaskInstance.get_task_states(
        dag_id=dag_id, task_ids=[task_id], run_ids=[run_id], map_index=None if map_index < 0 else map_index
    )


async def task_state(dag_id: str, task_id: str, run_id: str, map_index: int = -1) -> str | None:
    """The current state of one task instance (``"deferred"``, ``"failed"``, ...; ``""`` when it has
    none, as after a clear, or does not exist), read from trigger code through the supervisor channel;
    ``None`` when this process has no channel. A failed lookup raises.

    The call blocks until the supervisor answers, so it runs in a thread of its own
    (``thread_sensitive=False``: not queued behind other triggers' sync Task SDK calls); the channel
    hands it to the triggerer's loop."""
    if not has_supervisor_channel():
        return None
    from asgiref.sync import sync_to_async

    states = await sync_to_async(_task_states, thread_sensitive=False)(dag_id, task_id, run_id, map_index)
    # The answer is keyed by run id, then by task id, suffixed ``_<map_index>`` for a mapped instance.
    key = task_id if map_index < 0 else f"{task_id}_{map_index}"
    state = ((states or {}).get(run_id) or {}).get(key)
    return "" if state is None else str(getattr(state, "value", state))


def dags_in_file(path: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The DAGs the Python file ``path`` defines, by DAG id, found as Airflow's DAG processor finds them,
    and the file's import errors as Airflow reports them (file path -> message or traceback)."""
    # Internal: the DAG processor's DagBag; one file, no folder scan, no example DAGs, no "safe mode"
    # guess (the file is named). Airflow 3.1, 3.2 and 3.3, same signatures.
    from airflow.models import DagBag

    bag = DagBag(dag_folder=path, collect_dags=False)
    bag.process_file(path, only_if_updated=False, safe_mode=False)  # type: ignore[no-untyped-call,unused-ignore]
    return dict(bag.dags), {str(k): str(v) for k, v in bag.import_errors.items()}


# --- The job view (ui/app.py): internals of Airflow's API server. A plugin's FastAPI app is not
# --- protected by Airflow's auth (Airflow's plugin docs); the view uses the API server's own
# --- dependencies so that Airflow's auth manager decides, as for its REST API.


def ui_auth_dependencies() -> tuple[Any, Any]:
    """``(read_task_instances, user)``: the API server's dependency that lets through only a user
    who may read the task instances of the path's ``dag_id`` (403 otherwise, 401 without a login),
    and the one that resolves the logged-in user (``GetUserDep``'s)."""
    # Internal: airflow.api_fastapi.core_api.security (requires_access_dag, get_user) and the
    # DagAccessEntity of the auth manager's models. Airflow 3.1, 3.2 and 3.3.
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import get_user, requires_access_dag

    return requires_access_dag("GET", DagAccessEntity.TASK_INSTANCE), get_user


def readable_dag_ids(user: Any) -> set[str]:
    """The DAG ids whose task instances ``user`` may read, per the configured auth manager."""
    # Internal: the API server's auth manager instance (airflow.api_fastapi.app). Airflow 3.1-3.3.
    from airflow.api_fastapi.app import get_auth_manager

    return set(get_auth_manager().get_authorized_dag_ids(user=user, method="GET"))


def xcom_rows(
    key: str,
    *,
    dag_ids: set[str] | None = None,
    dag_id: str | None = None,
    run_id: str | None = None,
    task_id: str | None = None,
    map_index: int | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """The XComs ``key`` stored in the metadata DB, newest first (at most ``limit``), each
    ``{dag_id, run_id, task_id, map_index, timestamp, value}``; for the API server, which has no
    supervisor channel for the Task SDK's XCom."""
    # Internal: the core's XCom table model and its session factory. Airflow 3.1, 3.2 and 3.3.
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    query = select(XComModel).where(XComModel.key == key)
    for column, value in (
        (XComModel.dag_id, dag_id),
        (XComModel.run_id, run_id),
        (XComModel.task_id, task_id),
        (XComModel.map_index, map_index),
    ):
        if value is not None:
            query = query.where(column == value)
    if dag_ids is not None:
        query = query.where(XComModel.dag_id.in_(sorted(dag_ids)))
    query = query.order_by(XComModel.timestamp.desc()).limit(limit)
    with create_session(scoped=False) as session:
        return [
            {
                "dag_id": row.dag_id,
                "run_id": row.run_id,
                "task_id": row.task_id,
                "map_index": row.map_index,
                "timestamp": row.timestamp.isoformat() if row.timestamp else "",
                "value": XComModel.deserialize_value(row),
            }
            for row in session.scalars(query)
        ]


__all__ += ["readable_dag_ids", "ui_auth_dependencies", "xcom_rows"]


def rendered_task_fields(
    dag_id: str, run_id: str, task_id: str, map_index: int = -1
) -> dict[str, Any] | None:
    """The rendered template fields Airflow stored for one task instance (its connection id,
    impersonation chain, watched job name...), or None when none are stored. The task's own run writes
    them (through the Execution API, with the task's token) before it executes: no call of the public
    REST API can change them, unlike an XCom, which an API user with edit rights on the DAG can PATCH."""
    # Internal: the core's RenderedTaskInstanceFields model and its session factory. Airflow 3.1-3.3.
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.utils.session import create_session
    from sqlalchemy import select

    table = RenderedTaskInstanceFields
    query = select(table.rendered_fields).where(
        table.dag_id == dag_id, table.run_id == run_id, table.task_id == task_id, table.map_index == map_index
    )
    with create_session(scoped=False) as session:
        value = session.scalar(query)
    return dict(value) if isinstance(value, dict) else None


__all__ += ["rendered_task_fields"]


# --- A rehearsal's Airflow process (rehearse/child.py): a metadata DB of its own, the DAG stored as
# --- the DAG processor stores it (dag.test() needs it), and what a run did, read back from the DB.


def migrate_metadata_db() -> None:
    """Create the tables of the configured (new, SQLite) metadata DB and its DAG bundles' rows."""
    # Internal: airflow.utils.db.initdb and the bundles manager, as `airflow db migrate` and the demo
    # use them. Airflow 3.1, 3.2 and 3.3.
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.utils import db

    db.initdb()
    DagBundlesManager().sync_bundles_to_db()  # type: ignore[no-untyped-call,unused-ignore]


def store_dag(dag: Any) -> None:
    """Store ``dag`` in the metadata DB as the DAG processor does (``dag.test()`` runs a stored DAG)."""
    # Internal: the DAG processor's collection helper and the lazy serialized form. Airflow 3.1-3.3.
    from airflow.dag_processing.collection import update_dag_parsing_results_in_db
    from airflow.serialization.serialized_objects import LazyDeserializedDAG
    from airflow.utils.session import create_session

    with create_session() as session:
        update_dag_parsing_results_in_db(
            "dags-folder", None, [LazyDeserializedDAG.from_dag(dag)], {}, None, set(), session=session
        )


def run_task_instances(dag_run: Any) -> list[dict[str, Any]]:
    """The task instances of a DAG run ``dag.test()`` returned: ``{task_id, map_index, state,
    try_number}`` each."""
    # Internal: the core DagRun's get_task_instances needs a session. Airflow 3.1, 3.2 and 3.3.
    from airflow.utils.session import create_session

    with create_session() as session:
        return [
            {
                "task_id": ti.task_id,
                "map_index": ti.map_index,
                "state": str(ti.state),
                "try_number": ti.try_number,
            }
            for ti in dag_run.get_task_instances(session=session)
        ]


def schedule_dates(dag: Any, start: Any, end: Any, limit: int = 1000) -> list[Any]:
    """The logical dates of ``dag``'s timetable from ``start`` to ``end`` (both included), as a backfill
    of that range creates them (catchup on)."""
    # Timetables are a public interface, but the Task SDK's DAG holds the SDK's timetable, which has no
    # next_dagrun_info: the core one comes from the DAG's serialized form (LazyDeserializedDAG, as the
    # DAG processor stores it), and takes a TimeRestriction of pendulum DateTimes. Airflow 3.1-3.3.
    import pendulum
    from airflow.serialization.serialized_objects import LazyDeserializedDAG
    from airflow.timetables.base import TimeRestriction

    timetable = LazyDeserializedDAG.from_dag(dag).timetable

    restriction = TimeRestriction(
        earliest=pendulum.instance(start), latest=pendulum.instance(end), catchup=True
    )
    found: list[Any] = []
    last = None
    while len(found) < limit:
        info = timetable.next_dagrun_info(last_automated_data_interval=last, restriction=restriction)
        if info is None or info.logical_date is None:
            break
        found.append(info.logical_date)
        last = info.data_interval
    return found


__all__ += ["migrate_metadata_db", "run_task_instances", "schedule_dates", "store_dag"]
