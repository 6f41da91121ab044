"""Every google.rpc.Code the emulator can raise, on the wire of each port: the HTTP status is the one
``google.api_core.exceptions`` maps it to (Google's own documented 500 where api_core gives none), the
JSON error body is ``{"error": {"code", "message", "status"}}``, and a gRPC call fails with that very
code and message. Each code is injected through the fault settings (core/faults.py), which accept every
name the emulator raises anywhere (``STATUS_CODE_NAMES``)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.api_core import exceptions
from logging_support import gapic
from logging_support import post as post_entries_list
from test_api_rest_raw import http

from vertex_emulator.app import Emulator
from vertex_emulator.core.errors import ApiError, http_status
from vertex_emulator.core.faults import STATUS_CODE_NAMES
from vertex_emulator.testing import PARENT

#: google/rpc/code.proto's "HTTP Mapping" for the codes api_core maps to no HTTP status (its classes
#: ``Unknown`` and ``DataLoss`` have ``code = None``); cloud.google.com/apis/design/errors agrees.
GOOGLE_ONLY = {"UNKNOWN": 500, "DATA_LOSS": 500}


def test_every_code_the_emulator_raises_is_a_google_rpc_code() -> None:
    assert set(STATUS_CODE_NAMES) == {code.name for code in grpc.StatusCode} - {"OK"}


@pytest.mark.parametrize("name", STATUS_CODE_NAMES)
def test_api_error_is_api_cores_exception_for_its_code(name: str) -> None:
    api_core_class = exceptions.exception_class_for_grpc_status(grpc.StatusCode[name])
    error = ApiError(name, "why")
    assert isinstance(error, api_core_class) and isinstance(error, exceptions.GoogleAPICallError)
    assert error.grpc_status_code is grpc.StatusCode[name] and error.status == name
    assert error.code == http_status(name) == (api_core_class.code or GOOGLE_ONLY[name])
    assert error.message == "why" and error.body() == {
        "error": {"code": error.code, "message": "why", "status": name}
    }


def _inject(emulator: Emulator, method: str, name: str) -> None:
    change = {"error_rate": {method: 1.0}, "error_codes": [name]}
    assert http(emulator, "PUT", "/emulator/faults", change)[0] == 200


def test_every_code_on_the_wire_of_the_jobservice(emulator: Emulator, grpc_client: Any) -> None:
    job = f"{PARENT}/customJobs/1"
    for name in STATUS_CODE_NAMES:
        _inject(emulator, "GetCustomJob", name)
        message = f"injected fault: GetCustomJob failed with {name} (emulator fault injection)"
        status, body, _ = http(emulator, "GET", f"/v1/{job}")
        expected = exceptions.exception_class_for_grpc_status(grpc.StatusCode[name]).code or GOOGLE_ONLY[name]
        assert (status, body) == (expected, {"error": {"code": expected, "message": message, "status": name}})
        with pytest.raises(exceptions.GoogleAPICallError) as raised:
            grpc_client.get_custom_job(name=job, retry=None)
        assert (raised.value.grpc_status_code, raised.value.message) == (grpc.StatusCode[name], message)


def test_every_code_on_the_wire_of_cloud_logging(emulator: Emulator) -> None:
    client = gapic(emulator)
    request = {"resource_names": [f"projects/{PARENT.split('/')[1]}"]}
    for name in STATUS_CODE_NAMES:
        _inject(emulator, "ListLogEntries", name)
        message = f"injected fault: ListLogEntries failed with {name}"
        status, body = post_entries_list(emulator, {"resourceNames": request["resource_names"]})
        expected = exceptions.exception_class_for_grpc_status(grpc.StatusCode[name]).code or GOOGLE_ONLY[name]
        assert (status, body) == (expected, {"error": {"code": expected, "message": message, "status": name}})
        with pytest.raises(exceptions.GoogleAPICallError) as raised:
            client.list_log_entries(request=request, retry=None)
        assert (raised.value.grpc_status_code, raised.value.message) == (grpc.StatusCode[name], message)
    client.transport.close()
