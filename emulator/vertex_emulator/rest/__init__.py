"""The JobService over HTTP/JSON (the v1 REST mapping), plus the emulator's web pages and admin API.

Built on the standard library's HTTP server (HTTP/1.1 keep-alive), one thread per connection within
the listener's ceilings (server/httpserve.py: connections, idle, header and body deadlines): the emulator
serves a handful of local clients, so no web framework is needed.

REST mapping, as the stock client's REST transport (``transports/rest_base.py``) sends it::

    POST   /v1/{parent=projects/*/locations/*}/customJobs            body: CustomJob
    GET    /v1/{name=projects/*/locations/*/customJobs/*}
    GET    /v1/{parent=projects/*/locations/*}/customJobs?filter=&pageSize=&pageToken=&readMask=
    POST   /v1/{name=projects/*/locations/*/customJobs/*}:cancel     body: {}
    DELETE /v1/{name=projects/*/locations/*/customJobs/*}            -> Operation

and the same with ``hyperparameterTuningJobs``. Query and body fields are accepted in camelCase or
snake_case; ``$alt=json;enum-encoding=int`` (what the client sends) makes enums integers in the
response, otherwise they are names (what curl users read). Errors use the Google JSON error shape
``{"error": {"code": 404, "message": "...", "status": "NOT_FOUND"}}``.

Other paths:

* ``GET /web/<job-name>/<replica-key>``: a replica's web access page (state and log tail; JSON with
  ``?format=json``), from ``runner.replica_view``.
* ``GET /ui/<job-name>``: a job page (state, output directory, pools, replicas, trial chart and trials,
  error; it reloads itself while the job runs); ``GET /ui/`` (or ``/``):
  the index of every job, finished ones too, newest first (``INDEX_LIMIT``). (The HTML: the pages package.)
* ``GET /emulator/stats``: calls per method, Cancel calls per job and injected faults, as JSON.
* ``GET``/``PUT /emulator/faults``: read or change the fault settings at runtime (JSON; PUT takes a
  partial object).
* ``GET``/``PUT /emulator/capacity``: read or change the GPU capacity settings at runtime (quotas,
  free GPUs, Spot; capacity/settings.py; PUT takes a partial object and wakes the jobs waiting);
  ``POST /emulator/capacity/preempt`` ``{"job": NAME, "replica": KEY}`` preempts a replica of a
  running Spot job now (``replica`` defaults to ``workerpool0-0``).
* ``GET``/``PUT /emulator/scenario``: the scenario playing (its time, the steps played so far); a PUT
  (a scenario as JSON, scenario/model.py) stops it and plays another.
* ``GET /emulator/clock``: the service's time (``now``, ``now_ns``) and its ``compression`` (service
  seconds per real second; above 1 while a scenario plays a night faster).
* ``GET /emulator/faults/schema``, ``GET /emulator/capacity/schema``, ``GET /emulator/scenario/schema``:
  the JSON schema of those settings (the pydantic models every PUT, flag and file is validated by).
* ``POST /emulator/state:snapshot`` ``{"name": NAME, "replace": false}``, ``POST /emulator/state:restore``
  ``{"name": NAME}``, ``POST /emulator/state:reset`` ``{"keep_objects": false}``, ``GET
  /emulator/state/snapshots`` and ``GET``/``DELETE /emulator/state/snapshots/NAME``: the whole state
  (jobs, logs, objects, capacity and fault settings) kept as a named snapshot under the state directory
  and put back, or reset to empty; a restore or reset stops every job's replicas first (state.py,
  app/state.py, core/snapshots.py).

Every request passes ``RestHandler._check_caller`` (handler.py) first, because the emulator runs the commands
its jobs name: a ``Host`` that is not a loopback name or the address served is refused (DNS
rebinding), so is an ``Origin`` other than the emulator's own, a write whose body is not
``application/json`` (a web page's form or "simple request"), and, when the server has an access
token, a request without ``Authorization: Bearer <token>`` -- without one, a connection from
another local account than the emulator's (server/callers.py). A body is bounded by its
``Content-Length`` before it is read (``MAX_BODY_BYTES``, 413) and by its nesting
(``MAX_JSON_DEPTH``, 400, counted in linear time by server/jsonlimits.py). A ``Transfer-Encoding`` (chunked)
body is refused with 411 and the connection closed, so it cannot be read as a next request.

The package: the HTTP side, who may call and the routing (``handler``), the v1 REST mapping of the
JobService (``v1``), the admin API (``admin``; the state's: ``state``), the web pages' routes (``web``),
and ``RestServer``, the listener in its thread (``server``).
"""

from vertex_emulator.rest.handler import MAX_BODY_BYTES, MAX_JSON_DEPTH, json_depth
from vertex_emulator.rest.server import LISTEN_BACKLOG, RestServer
from vertex_emulator.rest.web import INDEX_LIMIT

__all__ = [
    "INDEX_LIMIT",
    "LISTEN_BACKLOG",
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "RestServer",
    "json_depth",
]
