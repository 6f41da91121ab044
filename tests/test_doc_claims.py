"""Facts the README and the docs state about the code -- defaults, limits, keys, names, lists -- read
from the page and compared with what the code has, so that a change on either side that makes a page
wrong fails here. A sentence is checked only where it states such a fact: one that states none is its
own check. The pages' examples are run by ``test_docs.py``; the behaviour they describe is tested where
it is implemented. How the code's side is read: ``doc_claim_readers.py``; the claims that name code
(tests, fields, Makefile stages): ``test_doc_claims_names.py``. A page's table of numbers is generated
from the code instead where one fits (the emulator's bounds on one request:
``scripts/emulator_bounds_md.py``, checked by ``test_reference_tables.py``).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from tests.doc_claim_readers import (
    EGRESS,
    EM,
    LOGS,
    ONE_PARAMETER,
    OP,
    PARALLEL,
    POLLER,
    RS,
    SENSOR,
    TRIALS,
    agreed,
    as_number,
    cli_default,
    code_at,
    conn_id_defaults,
    emulator_config,
    evaluated_at,
    example_dag,
    gpu_families,
    label_keys,
    makefile_captures,
    option_default,
    quoted_texts,
    rendered_timeouts,
    seed_layout,
    shortest_token,
    source_captures,
    study_tuning_output,
    taken_default,
    taking,
    ticked,
    torch_group,
    transient_grpc_codes,
)
from tests.doc_pages import ROOT, claim, page

#: page -> (what it says, its facts captured as groups; what the code has, one value per group or the
#: value itself for one group: "module:attribute" or a function; how a captured text becomes a value)
CLAIMS: dict[str, list[tuple[Any, ...]]] = {
    "README.md": [
        (r"# gRPC on 127\.0\.0\.1:(\d+), REST", f"{EM}.cli:DEFAULT_GRPC_PORT"),
        (r"REST and job pages on :(\d+)", f"{EM}.cli:DEFAULT_REST_PORT"),
        (r'"api_endpoint": "127\.0\.0\.1:(\d+)"', f"{EM}.cli:DEFAULT_GRPC_PORT"),
        (r'"web_endpoint": "http://127\.0\.0\.1:(\d+)"', f"{EM}.cli:DEFAULT_REST_PORT"),
        (r"Each uses the `(\w+)` connection only", "airflow_vertex_dist.hooks.connection:DEFAULT_CONN_ID"),
        (r"\(`XDIST`, (\d+) by default;", lambda: int(makefile_captures(r"^XDIST \?= (\d+)$")[0])),
        (
            r"`make check` runs ruff, the layer contracts, mypy and the tests not marked `(\w+)` or `(\w+)`",
            lambda: (
                makefile_captures(r'^check-tests: .*\n\t.*-m pytest -m "not (\w+) and not (\w+)"')
                if makefile_captures(r"^check: .*\n\t.* (lint typecheck check-tests)-all$")
                and makefile_captures(r"^check-tests-all: .*\n\t.* (check-tests); .* (check-emulator-tests);")
                else None
            ),
        ),
        (
            r"`make bench` runs the benchmarks .*? and writes `([\w/.]+)`",
            lambda: makefile_captures(r"^bench: .*\n\t.*-m benchmarks .*--out (\S+)")[0],
        ),
        (
            r"make demo\s+# creates \.venv, installs, starts the emulator, runs the (\w+) DAG end to end",
            lambda: agreed(
                re.findall(r'^DAG_FILE = "(\w+)\.py"', (ROOT / "scripts/demo.py").read_text(), re.M)
            ),
        ),
    ],
    "how-to/connection.md": [
        (r"takes `vertex_dist_conn_id` \(default `(\w+)`\)", lambda: agreed(conn_id_defaults())),
        (
            r"\(`RetryPolicy`: (.*?)\)",
            lambda: dataclasses.asdict(code_at("airflow_vertex_dist.hooks.connection:RetryPolicy")()),
            lambda text: {k: float(v) for k, v in re.findall(r"`(\w+)=([\d.]+)`", text)},
        ),
        (
            r"over REST, HTTP (.*?)\) and transport",
            lambda: sorted(e.code for e in code_at("airflow_vertex_dist.hooks._clients:TRANSIENT_ERRORS")),
            lambda text: sorted(int(code) for code in re.findall(r"\d{3}", text)),
        ),
        (r"Transient errors \((.*?) —", transient_grpc_codes, lambda text: sorted(text.split(", "))),
        (
            r"a refused connection \(nothing listens at `api_endpoint`\) is retried for (\d+) s",
            "airflow_vertex_dist.hooks.retry_warnings:EMULATOR_START_GRACE_S",
        ),
        (
            r"\(`<location>(-aiplatform\.googleapis\.com)`\)",
            lambda: code_at("airflow_vertex_dist.hooks._clients:_regional_endpoint")("L").removeprefix("L"),
        ),
    ],
    "how-to/outputs.md": [
        (r"`(\w+)` \(pushed as soon as the job is known\)", "airflow_vertex_dist.links:LINK_XCOM_KEY"),
    ],
    "how-to/sensors.md": [
        (r"a target state \(default `(\w+)`\)", lambda: agreed(taken_default(SENSOR, "target_states"))),
        (
            r"default: Airflow's `\[(\w+)\] (\w+)`",
            lambda: source_captures(
                taking(SENSOR, "deferrable").__init__, r'conf\.getboolean\("(\w+)", "(\w+)"'
            ),
        ),
    ],
    "how-to/python-package.md": [
        (
            r"\(`--gcs-root`, default `<state dir>/(\w+)`\)",
            lambda: source_captures(code_at(f"{EM}.cli.config"), r'args\.gcs_root or state_dir / "(\w+)"')[0],
        ),
    ],
    "how-to/retraining.md": [
        (r"Every job carries the labels (.*?)\. A retry", label_keys, ticked),
        (r'\(`if_exists="(\w+)"`, the default\)', lambda: taken_default(OP, "if_exists")),
        (r"`cancel_on_kill=(\w+)`, the default", lambda: str(taken_default(OP, "cancel_on_kill"))),
        (
            r"The example sets `catchup=(\w+)` and `max_active_runs=(\d+)`",
            lambda: (lambda dag: (str(dag.catchup), dag.max_active_runs))(example_dag("retraining").dag),
        ),
    ],
    "how-to/training-logs.md": [
        (
            r"With the default `stream_logs=(\w+)`",
            lambda: agreed(
                {str(taken_default(OP, "stream_logs")), str(taken_default(SENSOR, "stream_logs"))}
            ),
        ),
        (
            r"last (\d+) lines \(([\d,]+) characters each at most\)",
            lambda: (code_at(f"{LOGS}:FAILURE_LINES"), code_at(f"{LOGS}:MAX_LINE_CHARS")),
        ),
        (
            r"log_reads_per_minute = (\d+)",
            lambda: agreed(
                {code_at(f"{POLLER}:DEFAULT_READS_PER_MINUTE"), int(option_default("log_reads_per_minute"))}
            ),
        ),
        (r"\(doubling, up to a (minute)\)", lambda: {60.0: "minute"}.get(code_at(f"{POLLER}:MAX_BACKOFF_S"))),
        (r"at most once every ([\d.]+) s", lambda: taken_default(f"{LOGS}:LogStreamer", "min_interval_s")),
        (r"\(([\d,]+) entries a page\)", f"{POLLER}:PAGE_SIZE"),
        (
            r"an XCom of its own task instance, `(\w+)`",
            "airflow_vertex_dist.logs.cursor:CURSOR_XCOM_KEY",
        ),
        (
            r"log_settle_seconds = ([\d.]+)",
            lambda: agreed(
                {code_at(f"{POLLER}:DEFAULT_SETTLE_S"), float(option_default("log_settle_seconds"))}
            ),
        ),
    ],
    "how-to/tuning.md": [  # the XCom value of a study's output
        (r"- `trial_counts`: (.*?);", lambda: list(study_tuning_output()["trial_counts"]), ticked),
        (r"- `best_trial`: `\{(.*?)\}`", lambda: list(study_tuning_output()["best_trial"]), quoted_texts),
        (
            r"one compact row per trial, `\{(.*?)\}`",
            lambda: list(study_tuning_output()["trials"][0]),
            quoted_texts,
        ),
        (
            r"\(plus `(\w+)`\)",
            lambda: agreed(set(study_tuning_output()["trials"][1]) - set(study_tuning_output()["trials"][0])),
        ),
        (
            r"at most one early-stopping rule \((.*?)\)",
            lambda: [
                n for n in code_at("airflow_vertex_dist.specs:Study.model_fields") if n.endswith("stopping")
            ],
            ticked,
        ),
    ],
    "quickstart.md": [
        (
            r"installs the project, the emulator and the dependency groups \((.*?)\)",
            lambda: re.findall(r"--group (\w+)", makefile_captures(r"^\t.*(uv pip install .*)$")[0]),
            lambda text: text.split(", "),
        ),
        (r"after pip installs the `(\w+)` group's torch", torch_group),
        (r"keeps its jobs in `\./([\w-]+)`", lambda: str(cli_default("state_dir"))),
        (r"a primary and (\d+) workers with (\d+) (\w+) GPUs each, and (\d+) reducers", seed_layout),
    ],
    "concepts/pools.md": [
        (
            r"a `Disk` \(default `([\w-]+)`, (\d+) GB\)",
            lambda: (lambda d: (d.boot_disk_type, d.boot_disk_size_gb))(
                code_at("airflow_vertex_dist.specs:Disk")()
            ),
        ),
    ],
    "concepts/reduction-server.md": [
        (r'\| `replica_count` \| `"(\w+)"` \|', lambda: code_at(RS)["replica_count"].default),
        (r'\| `machine_type` \| `"([\w-]+)"` \|', lambda: code_at(RS)["machine_type"].default),
        (r"\| `allow_undersized` \| `(\w+)` \|", lambda: str(code_at(RS)["allow_undersized"].default)),
        (
            r"\(attached, or an ([A-Z0-9/]+) machine type\)",
            gpu_families,
            lambda t: sorted(t.lower().split("/")),
        ),
        (
            r"Such a machine has (\d+) Gbps of egress",
            lambda: code_at(EGRESS)("n1-highmem-96", "NVIDIA_TESLA_V100", 8),
        ),
        (r"An `n1-highcpu-16` reducer has (\d+) Gbps", lambda: code_at(EGRESS)("n1-highcpu-16")),
        (
            r"An `a2-megagpu-16g` \(16 × A100\) has (\d+) Gbps of egress",
            lambda: code_at(EGRESS)("a2-megagpu-16g", "NVIDIA_TESLA_A100", 16),
        ),
    ],
    "concepts/specs.md": [
        (r'a `timedelta` or the proto JSON form `"7200s"`, and render as `"(\w+)"`', rendered_timeouts),
    ],
    "emulator.md": [
        (r"up to (\d+) times \(`EmulatorConfig\.restart_limit`\)", lambda: emulator_config().restart_limit),
        (r"`EmulatorConfig\.stop_grace_s`, (\d+) s\)", lambda: emulator_config().stop_grace_s),
        (
            r"`scheduling\.timeout` \(default (\d+) days\)",
            lambda: code_at(f"{EM}.runtime.custom_job_setup:DEFAULT_TIMEOUT_S") / 86400,
        ),
        (r"\(at least (\d+) characters;", shortest_token),
        (
            r"copied from the emulator's environment when set: (.*?) \(`",
            lambda: sorted({*code_at(f"{EM}.runtime.cluster:LOCAL_ENV_NAMES"), "LC_*"}),
            lambda text: sorted(re.findall(r"`(\w+\*?)`", text)),
        ),
        (r"cloudml-hypertune files every ([\d.]+) s", f"{EM}.runtime.tuning_job:STOPPING_POLL_S"),
        (
            r"list \(`project` required, at most (\d+) a page",
            f"{EM}.cloud_storage.buckets:MAX_BUCKETS_PAGE",
        ),
        (
            r"keys and values \"must be less than (\d+) characters in length, and must be less\s+that (\d+)",
            lambda: (
                code_at(f"{EM}.rules.labels:MAX_LABEL_LENGTH") + 1,
                code_at(f"{EM}.rules.labels:MAX_LABEL_BYTES") + 1,
            ),
        ),
        (
            r"`maxFailedTrialCount: 0` is, in the emulator, `([^`]+)`",
            lambda: [code_at(f"{EM}.runtime.tuning_study:failed_trial_limit")(0, n) for n in TRIALS],
            evaluated_at("maxTrialCount", TRIALS),
        ),
        (
            r"the first `(max\(2, parallelTrialCount\))` trials are random",
            lambda: [
                code_at(f"{EM}.tuning.search:Search")(ONE_PARAMETER, seed=0, parallel=p).n_init
                for p in PARALLEL
            ],
            evaluated_at("parallelTrialCount", PARALLEL),
        ),
        (
            r"with probability ([\d.]+), a perturbation",
            lambda: float(
                source_captures(code_at(f"{EM}.tuning.search:Search"), r"rng\.random\(\) < ([\d.]+)")[0]
            ),
        ),
        (
            r"the exit code reported \(default (\d+)\)",
            lambda: agreed(
                {code_at(f"{EM}.core.config:Faults")().crash_exit_code, cli_default("crash_exit_code")}
            ),
        ),
        (
            r"\| `--fault-codes A,B` \| `error_codes` \| [^|]*\(default `(\w+)`\)",
            lambda: agreed({cli_default("fault_codes"), *code_at(f"{EM}.core.config:Faults")().error_codes}),
        ),
    ],
}
ROWS = [(name, *row) for name, rows in CLAIMS.items() for row in rows]


@pytest.mark.parametrize(
    ("name", "pattern", "code", "parse"),
    [(*row, as_number)[:4] for row in ROWS],
    ids=[f"{row[0]}:{row[1][:40]}" for row in ROWS],
)
def test_what_a_page_states_is_what_the_code_has(name: str, pattern: str, code: Any, parse: Any) -> None:
    found = claim(page(name), pattern)
    values = tuple(parse(group) for group in found.groups())
    expected = code_at(code) if isinstance(code, str) else code()
    assert (values[0] if len(values) == 1 else values) == expected, pattern
