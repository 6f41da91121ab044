"""Extra link of the operators and sensors: the job's page.

The Vertex AI console, or the emulator's own job page when the connection points at the emulator
(the hook's ``console_url``). The operators push ``{"name", "console_url"}`` to XCom under
``vertex_job`` as soon as the job is known; the link reads it back, so it works for a running
(deferred) task as well as a finished one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey

__all__ = ["LINK_XCOM_KEY", "OWNER_XCOM_KEY", "VertexJobLink"]

#: The XCom key of ``{"name", "console_url"}`` (defined here, below the operators, which re-export it
#: from ``airflow_vertex_dist.operators.outputs``).
LINK_XCOM_KEY = "vertex_job"
#: The XCom key of ``{"name", "conn_id"}``: pushed by an operator that owns its job and cancels it when
#: killed (``cancel_on_kill``); :mod:`airflow_vertex_dist.listeners` cancels that job when a user marks
#: the task failed or successful by hand.
OWNER_XCOM_KEY = "vertex_job_owner"


class VertexJobLink(BaseOperatorLink):
    """The "Vertex AI job" button: the job in the Vertex AI console (or the emulator's job page)."""

    name = "Vertex AI job"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        if getattr(operator, "job_known", True) is False:
            # This try never got to a job (a spec error, say): there is no link to read, and asking
            # for it would log a misleading "XCom not found" after the real error.
            return ""
        value: Any = XCom.get_value(ti_key=ti_key, key=LINK_XCOM_KEY)
        if isinstance(value, dict) and isinstance(value.get("console_url"), str):
            return str(value["console_url"])
        return ""
