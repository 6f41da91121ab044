"""The security table of ``docs/reliability.md``: one row per probe of the emulator, in a fixed order,
"not run" where a probe left no figure."""

from __future__ import annotations

from typing import Any

# scripts/stack/ is on the path: run as a script, or by the tests
from reliability_cells import escape

__all__ = ["PROBES", "probe_rows"]

#: the security probes (emulator/tests/security/, emulator/tests/test_package_install.py and the
#: provider's tests/security/), in the order of the table.
PROBES = [
    ("cross_site_post", "a web page posts a job (CORS simple request)"),
    ("non_json_post", "a write that is not JSON"),
    ("dns_rebinding", "DNS rebinding (a foreign Host name)"),
    ("non_loopback_without_token", "a non-loopback address without a token"),
    ("rest_without_token", "REST call without the token"),
    ("grpc_without_token", "gRPC call without the token"),
    ("another_account_jobs", "another local account: the JobService"),
    ("another_account_logging", "another local account: Cloud Logging"),
    ("another_account_storage", "another local account: Cloud Storage"),
    ("another_account_pages", "another local account: the pages"),
    ("storage_token", "Cloud Storage of an emulator with an access token"),
    ("another_account_for_real", "another local account, for real (`nobody`, when the tests run as root)"),
    ("caller_check_race_jobs", "another account's padded request closed at once (the JobService)"),
    ("caller_check_race_storage", "another account's padded upload closed at once (Cloud Storage)"),
    ("caller_check_race_grpc", "another account's gRPC call closed at once"),
    ("ipv6_loopback", "IPv6 loopback (--host ::1)"),
    ("wildcard_filter", "many wildcards in a List filter"),
    ("deep_filter_rest", "deep filter (REST)"),
    ("deep_filter_grpc", "deep filter (gRPC)"),
    ("huge_body", "huge body (REST)"),
    ("huge_grpc_message", "huge message (gRPC)"),
    ("deep_json_array", "deep JSON arrays"),
    ("deep_json_object", "deep JSON objects"),
    ("deep_proto", "deep proto message"),
    ("parallel_creates", "a burst of Creates"),
    ("output_dir_escape", "output directory out of --gcs-root"),
    ("package_uri_escape", "package URI out of --gcs-root"),
    ("symlink_escape", "a symlink out of --gcs-root"),
    ("setup_py_environment", "a package's setup.py reads its environment"),
    ("setup_py_daemon", "a package's setup.py leaves a daemon"),
    ("escaped_quotes_body", "a body of escaped quotes (JSON depth guard)"),
    ("fraction_digits_filter", "a create time of 400,000 fraction digits in a filter"),
    ("or_terms_filter", "a filter of many OR terms"),
    ("log_filter_terms", "a Cloud Logging filter of many OR terms"),
    ("deep_page_token", "a deeply nested page token"),
    ("nan_faults", "NaN in /emulator/faults"),
    ("chunked_smuggling", "a chunked body smuggling a Create"),
    ("replica_ceiling_create", "a Create of 2,147,483,648 replicas"),
    ("replica_ceiling_env", "the replica environment of the largest job allowed"),
    ("replica_ceiling_get", "the Get of the largest job allowed"),
    ("idle_sockets_rest", "1,100 idle sockets (REST)"),
    ("idle_sockets_storage", "1,100 idle sockets (Cloud Storage)"),
    ("idle_sockets_grpc", "1,100 idle sockets and half-open HTTP/2 connections (gRPC)"),
    ("trickle_rest", "a request trickling its headers (REST)"),
    ("trickle_storage", "a request trickling its headers (Cloud Storage)"),
    ("symlink_listing", "a symlink to an outside file in a bucket"),
    ("fifo_listing", "a FIFO in a bucket"),
    ("metadata_rehash", "repeated metadata GETs of a large object"),
    ("long_name", "an object name part over 255 bytes"),
    ("newline_name", "an object name with a line feed"),
    ("huge_range", "a Range of 5,000 digits"),
    ("deep_storage_resource", "a Cloud Storage resource of 100,000 nested brackets"),
    ("nested_log_line", "log lines nested 100,000 deep, huge or planted (entries.list)"),
    ("full_disk", "a full disk under the state directory"),
    ("quota_admission_race", "50 concurrent Creates against a refusing quota"),
    ("gpu_wait_slots", "a job waiting for GPUs, then a CPU-only job"),
    ("log_page_bytes", "big replica lines in one Logging page (entries.list)"),
    ("log_starvation", "one job's big lines beside another job's (the shared log poller)"),
    ("deferred_log_secret", "a secret printed by a replica, in a deferred task's log"),
    ("clock_skew_resume_hold", "clock skew between worker and triggerer (the resume hold)"),
    ("owner_xcom_edit", "an edited owner record (provider: the job tab and the hand-marking listener)"),
    ("string_spec_injection", "a conf value closing its quote in a string spec (provider)"),
    ("endpoint_credentials", "credentials to a host that is not Google's (provider)"),
]


def probe_rows(probes: dict[str, Any]) -> list[str]:
    rows = []
    for key, title in PROBES:
        probe = probes.get(key)
        given, answer = (probe.get("input", "–"), probe.get("answer", "–")) if probe else ("–", "not run")
        rows.append(f"| {title} | {escape(given)} | {escape(answer)} |")
    return rows
