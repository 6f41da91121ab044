"""Finding 6 of issue 37: Logging pages bounded by bytes as well as entries.

40 lines of 250 KiB made one ``entries.list`` page of about 10 MB, over gRPC's 4 MiB default receive
limit: the stock client could not read it, and a reader retrying that page never got past it. A page
now ends before its entries pass ``MAX_PAGE_BYTES`` (below the transport limit), with a
``nextPageToken`` for the rest, so every line is served, on gRPC and REST alike.
"""

from __future__ import annotations

import json

from logging_support import gapic
from probes import JSON, PARENT, Http, record
from test_emulator_log_records import job_logs

from vertex_emulator.app import Emulator
from vertex_emulator.cloud_logging.api import MAX_PAGE_BYTES
from vertex_emulator.runtime.log_records import records_path
from vertex_emulator.runtime.replica_output import RecordLog

PROJECT = PARENT.split("/")[1]
LINES = 40
LINE = 250 * 1024
GRPC_LIMIT = 4 * 1024 * 1024


def big_lines_job(em: Emulator) -> str:
    job_id, folder = job_logs(em)
    log = RecordLog(str(records_path(folder, "workerpool0-0")))
    log.append("stdout", [f"{i:03d}" + "x" * (LINE - 3) for i in range(LINES)])
    log.close()
    return job_id


def test_big_lines_are_served_in_pages_below_the_transport_limit_over_grpc(emulator: Emulator) -> None:
    job_id = big_lines_job(emulator)
    request = {
        "resource_names": [f"projects/{PROJECT}"],
        "filter": f"resource.labels.job_id={job_id}",
        "page_size": 1000,
    }
    pages = list(gapic(emulator).list_log_entries(request=request).pages)
    served = [entry.json_payload["message"][:3] for page in pages for entry in page.entries]
    assert served == [f"{i:03d}" for i in range(LINES)]
    sizes = [type(page).pb(page).ByteSize() for page in pages]
    assert max(sizes) < GRPC_LIMIT and len(pages) > 1, sizes
    record(
        "log_page_bytes",
        f"entries.list (gRPC, pageSize 1000) over {LINES} replica lines of 250 KiB",
        f"{len(pages)} pages of at most {max(sizes) // 1024:,} KiB, every line served (was one page of "
        "about 10 MB: RESOURCE_EXHAUSTED 'Received message larger than max')",
    )


def test_big_lines_are_served_in_bounded_pages_over_rest(emulator: Emulator, web: Http) -> None:
    job_id = big_lines_job(emulator)
    token, served, sizes = "", [], []
    for _ in range(LINES + 1):
        body: dict[str, object] = {
            "resourceNames": [f"projects/{PROJECT}"],
            "filter": f"resource.labels.job_id={job_id}",
            "pageSize": 1000,
        }
        if token:
            body["pageToken"] = token
        status, data = web.request("POST", "/v2/entries:list", json.dumps(body).encode(), JSON)
        assert status == 200, data
        sizes.append(len(json.dumps(data)))
        served += [entry["jsonPayload"]["message"][:3] for entry in data.get("entries", [])]
        token = data.get("nextPageToken", "")
        if not token:
            break
    assert served == [f"{i:03d}" for i in range(LINES)]
    assert max(sizes) <= MAX_PAGE_BYTES + LINE + 4096, sizes
