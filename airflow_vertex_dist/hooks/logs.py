"""Reading a Vertex AI job's replica logs from Cloud Logging.

Vertex AI writes what each replica prints to Cloud Logging as entries of the monitored resource
``ml_job`` with the labels ``project_id``, ``job_id`` and ``task_name`` (the replica key,
``workerpool0-0``); a hyperparameter tuning trial's entries carry the tuning job's id as ``job_id``
and the trial id in the entry label ``ml.googleapis.com/trial_id``; stdout lines are INFO and stderr
lines ERROR. Sources: Cloud Logging's monitored-resource list (cloud.google.com/logging/docs/api/v2/
resource-list, ``ml_job``) and the gcloud CLI's ``ai custom-jobs stream-logs`` / ``ai hp-tuning-jobs
stream-logs`` (``command_lib/ai/log_util.py``), which filter on ``resource.labels.job_id`` and read
``task_name`` and ``trial_id`` the same way.

``VertexLogsHook`` reads them with the official ``google-cloud-logging`` client: the generated
``LoggingServiceV2Client`` over gRPC, or the library's HTTP client for a REST endpoint. Importing this
module loads no ``google.cloud`` module (the clients are imported when first used).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from airflow_vertex_dist.common.rfc3339 import format_rfc3339
from airflow_vertex_dist.hooks.connection import DEFAULT_CONN_ID, RetryPolicy
from airflow_vertex_dist.hooks.hook_base import VertexHookBase

__all__ = [
    "PRIMARY",
    "TRIAL_LABEL",
    "LogLine",
    "ReplicaSelection",
    "VertexLogsHook",
    "jobs_filter",
    "line_from_entry",
    "replicas_clause",
    "time_clauses",
]

PRIMARY = "workerpool0-0"
TRIAL_LABEL = "ml.googleapis.com/trial_id"
#: Cloud Logging's largest page.
MAX_PAGE_SIZE = 1000

#: ``"default"`` (the primary's lines and every replica's warnings and errors), ``"all"``, or replica keys.
ReplicaSelection = Literal["default", "all"] | Sequence[str]


@dataclass(frozen=True)
class LogLine:
    """One replica log line as read from Cloud Logging."""

    job_id: str
    replica: str
    trial_id: str | None
    severity: str
    #: RFC 3339 (UTC, ``Z``); as precise as the transport gives it (nanoseconds over gRPC).
    timestamp: str
    insert_id: str
    text: str

    @property
    def key(self) -> str:
        """The replica key the task log prefixes a line with (``trial 3/workerpool1-0`` for a trial)."""
        return f"trial {self.trial_id}/{self.replica}" if self.trial_id else self.replica


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def time_clauses(since: str | None = None, until: str | None = None) -> list[str]:
    """The filter clauses of a timestamp range (RFC 3339, both ends included; None: open)."""
    clauses = []
    if since:
        clauses.append(f"timestamp>={_quote(since)}")
    if until:
        clauses.append(f"timestamp<={_quote(until)}")
    return clauses


def replicas_clause(selection: ReplicaSelection) -> str:
    """The filter clause choosing which replicas' lines to read ("" means every line)."""
    if selection == "all":
        return ""
    if selection == "default":
        return f"(resource.labels.task_name={_quote(PRIMARY)} OR severity>=WARNING)"
    if isinstance(selection, str):
        raise ValueError(f"stream_logs: must be 'all', a list of replica keys or False (got {selection!r})")
    keys = list(selection)
    if not keys:
        raise ValueError(
            "stream_logs: an empty list of replica keys selects nothing; use False to turn it off"
        )
    return "(" + " OR ".join(f"resource.labels.task_name={_quote(key)}" for key in keys) + ")"


def jobs_filter(
    job_ids: Iterable[str],
    *,
    since: str | None = None,
    selection: ReplicaSelection = "all",
    min_severity: str | None = None,
    until: str | None = None,
) -> str:
    """A Logging filter for the replica lines of ``job_ids`` (at or after ``since`` and at or before
    ``until``, RFC 3339)."""
    ids = sorted(set(job_ids))
    if not ids:
        raise ValueError("job_ids: at least one job id is needed")
    parts = ['resource.type="ml_job"']
    parts.append("(" + " OR ".join(f"resource.labels.job_id={_quote(i)}" for i in ids) + ")")
    parts += time_clauses(since, until)
    clause = replicas_clause(selection)
    if clause:
        parts.append(clause)
    if min_severity:
        parts.append(f"severity>={min_severity}")
    return " AND ".join(parts)


def _rfc3339(value: Any) -> str:
    """An entry's timestamp: the client's ``DatetimeWithNanoseconds`` keeps its nanoseconds (its own
    ``rfc3339()``); a plain aware datetime goes through the package's one RFC 3339 writer."""
    rfc = getattr(value, "rfc3339", None)
    if callable(rfc):
        return str(rfc())
    return format_rfc3339(value)


def _severity_name(value: Any) -> str:
    if isinstance(value, str):
        return value or "DEFAULT"
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    from google.cloud.logging_v2.types import LogEntry

    return str(
        LogEntry.pb()().DESCRIPTOR.fields_by_name["severity"].enum_type.values_by_number[int(value)].name
    )


def _payload_text(entry: Any) -> str:
    text = getattr(entry, "text_payload", None)
    if text:
        return str(text)
    payload = getattr(entry, "payload", None)
    if isinstance(payload, str):
        return payload
    data: Any = payload
    if data is None:
        json_payload = getattr(entry, "json_payload", None)
        if json_payload is not None:
            from google.protobuf import json_format

            # a generated (proto-plus) LogEntry gives the Struct as a mapping: read its protobuf form
            pb = getattr(type(entry), "pb", None)
            data = json_format.MessageToDict(pb(entry).json_payload if callable(pb) else json_payload)
    if isinstance(data, dict):
        message = data.get("message")
        if isinstance(message, str):
            return message
        import json

        return json.dumps(data, sort_keys=True)
    return "" if data is None else str(data)


def line_from_entry(entry: Any) -> LogLine:
    """A ``LogLine`` from a GAPIC ``LogEntry`` or a ``google.cloud.logging`` entry object."""
    resource_labels = dict(entry.resource.labels or {})
    labels = dict(entry.labels or {})
    return LogLine(
        job_id=str(resource_labels.get("job_id", "")),
        replica=str(resource_labels.get("task_name", "")),
        trial_id=labels.get(TRIAL_LABEL) or None,
        severity=_severity_name(entry.severity),
        timestamp=_rfc3339(entry.timestamp),
        insert_id=str(entry.insert_id),
        text=_payload_text(entry),
    )


class VertexLogsHook(VertexHookBase):
    """Reads replica logs of Vertex AI jobs from Cloud Logging (sync; one client, made on first use).

    :param vertex_dist_conn_id: a ``vertex_dist`` connection; its ``logging_endpoint`` (or, with
        ``emulator``, its ``api_endpoint``) says where Cloud Logging is.
    :param project_id: overrides the connection's project.
    :param retry_policy: backoff and deadline for transient errors (RESOURCE_EXHAUSTED included).
    :param impersonation_chain: replaces the connection's impersonation chain (the task's own, as the
        job hook takes it): the Logging client's credentials are those of the chain's last account.
    """

    def __init__(
        self,
        vertex_dist_conn_id: str = DEFAULT_CONN_ID,
        *,
        project_id: str | None = None,
        retry_policy: RetryPolicy | None = None,
        impersonation_chain: str | Sequence[str] | None = None,
    ) -> None:
        super().__init__(
            vertex_dist_conn_id,
            project_id=project_id,
            retry_policy=retry_policy,
            impersonation_chain=impersonation_chain,
        )
        self._client: Any = None
        self._rest = False
        self._rest_url = ""
        self._address = ""  # where the client calls, for the retry warnings
        self._transport = "grpc"

    def get_conn(self) -> Any:
        """The Logging client: a ``LoggingServiceV2Client`` (gRPC) or an authorized HTTP session (REST)."""
        if self._client is None:
            self._client = self._build_client()
        return self._client

    def _build_client(self) -> Any:
        """The emulator's Logging API (anonymous, plain channel) with ``emulator``; else Cloud Logging
        or the ``logging_endpoint`` override, over TLS with the connection's credentials. A URL
        endpoint is read over REST; the emulator's own (no ``logging_endpoint``) over its transport."""
        conn = self.connection
        target = conn.logging_target
        emulator = conn.is_emulator
        if emulator and conn.logging_endpoint is None:
            rest = conn.transport == "rest"
        else:
            rest = target is not None and "://" in target and not target.startswith(("grpc://", "dns:"))
        self._rest = rest
        self._transport = "rest" if rest else "grpc"
        self._address = target or "logging.googleapis.com"

        if rest:
            # the Logging v2 REST API, read through the library's own proto types (its generated
            # client has no REST transport; its HTTP client pages on its own and hides the tokens)
            from google.auth.transport.requests import AuthorizedSession

            assert target is not None
            url = target if "://" in target else f"{'http' if emulator else 'https'}://{target}"
            creds = self._credentials()  # the emulator's: anonymous, or its access token
            self._rest_url = url.rstrip("/") + "/v2/entries:list"
            return AuthorizedSession(creds)  # type: ignore[no-untyped-call]
        from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client

        if emulator and target is not None:
            from google.cloud.logging_v2.services.logging_service_v2.transports.grpc import (
                LoggingServiceV2GrpcTransport,
            )

            from airflow_vertex_dist.hooks._clients import emulator_channel

            host = target.split("://", 1)[1] if "://" in target else target
            channel = emulator_channel(self.connection, host)  # with its access token, if any
            return LoggingServiceV2Client(transport=LoggingServiceV2GrpcTransport(channel=channel))
        options = {"api_endpoint": target} if target else None
        return LoggingServiceV2Client(credentials=self._credentials(), client_options=options)

    def _credentials(self) -> Any:
        from airflow_vertex_dist.hooks._clients import build_credentials

        return build_credentials(self.connection)[0]

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close() if self._rest else client.transport.close()

    def list_page(
        self,
        filter_text: str,
        *,
        page_size: int = MAX_PAGE_SIZE,
        page_token: str = "",
        descending: bool = False,
    ) -> tuple[list[LogLine], str]:
        """One ``entries.list`` page of this hook's project: (lines, next page token or "")."""
        from airflow_vertex_dist.hooks._clients import sync_retry

        client = self.get_conn()
        order = "timestamp desc" if descending else "timestamp asc"
        resource = f"projects/{self.project_id}"
        if self._rest:
            return self._rest_page(resource, filter_text, order, page_size, page_token)
        pager = client.list_log_entries(
            request={
                "resource_names": [resource],
                "filter": filter_text,
                "order_by": order,
                "page_size": page_size,
                "page_token": page_token,
            },
            retry=sync_retry(self.retry_policy, self._retry_warnings(self._address, self._transport)),
            timeout=self.retry_policy.rpc_timeout_s,
        )
        return [line_from_entry(e) for e in pager.entries], str(pager.next_page_token)

    def _rest_page(
        self, resource: str, filter_text: str, order: str, page_size: int, page_token: str
    ) -> tuple[list[LogLine], str]:
        from google.api_core import exceptions
        from google.cloud.logging_v2.types import ListLogEntriesResponse

        from airflow_vertex_dist.hooks._clients import sync_retry

        body: dict[str, Any] = {
            "resourceNames": [resource],
            "filter": filter_text,
            "orderBy": order,
            "pageSize": page_size,
        }
        if page_token:
            body["pageToken"] = page_token

        def post() -> Any:
            response = self.get_conn().post(
                self._rest_url, json=body, timeout=self.retry_policy.rpc_timeout_s
            )
            if response.status_code >= 400:
                raise exceptions.from_http_response(response)  # type: ignore[no-untyped-call]
            return ListLogEntriesResponse.from_json(response.text, ignore_unknown_fields=True)

        result = sync_retry(self.retry_policy, self._retry_warnings(self._address, self._transport))(post)()
        return [line_from_entry(e) for e in result.entries], str(result.next_page_token)

    def read_lines(
        self,
        job_ids: Iterable[str],
        *,
        since: str | None = None,
        selection: ReplicaSelection = "all",
        max_pages: int = 10,
    ) -> list[LogLine]:
        """The selected lines of ``job_ids`` from ``since`` on, oldest first (``max_pages`` pages at most)."""
        text = jobs_filter(job_ids, since=since, selection=selection)
        lines: list[LogLine] = []
        token = ""
        for _ in range(max_pages):
            page, token = self.list_page(text, page_token=token)
            lines.extend(page)
            if not token:
                break
        return lines

    def tail(
        self, job_id: str, replica: str, *, lines: int = 20, trial_id: str | None = None
    ) -> list[LogLine]:
        """The last ``lines`` lines of one replica of ``job_id`` (of one trial's, for a tuning job)."""
        if lines <= 0:
            return []
        text = jobs_filter([job_id], selection=[replica])
        if trial_id is not None:
            text += f" AND labels.{_quote(TRIAL_LABEL)}={_quote(trial_id)}"
        size = min(lines, MAX_PAGE_SIZE)
        while True:
            try:
                page, _ = self.list_page(text, page_size=size, descending=True)
                return list(reversed(page))
            except Exception as exc:
                # a page of big lines past the transport's limit: fewer lines, never the same page again
                if size <= 1 or "larger than max" not in str(exc).lower():
                    raise
                size //= 2
