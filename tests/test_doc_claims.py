"""Facts the README and the docs state about the code -- defaults, limits, keys, names, lists -- read
from the page and compared with what the code has, so that a change on either side that makes a page
wrong fails here. A sentence is checked only where it states such a fact: one that states none is its
own check. The pages' examples are run by ``test_docs.py``; the behaviour they describe is tested where
it is implemented.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import re
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.doc_pages import ROOT, claim, default_of, page


def _number(text: str) -> Any:
    """A captured figure as the code holds it: "1,000" -> 1000, "2.5" -> 2.5; other text as it is."""
    plain = text.replace(",", "")
    if re.fullmatch(r"\d+", plain):
        return int(plain)
    if re.fullmatch(r"\d+\.\d+", plain):
        return float(plain)
    return text


def _ticked(text: str) -> list[str]:
    """The `names` of a captured list, in order."""
    return re.findall(r"`([^`]+)`", text)


def _quoted(text: str) -> list[str]:
    return re.findall(r'"(\w+)"', text)


def _of(path: str) -> Any:
    """``"module:attr.attr"``: that object of the code."""
    module, _, attrs = path.partition(":")
    obj: Any = importlib.import_module(module)
    for attr in attrs.split(".") if attrs else ():
        obj = getattr(obj, attr)
    return obj


def _one(values: Any) -> Any:
    """The value every place in the code agrees on (a set of two or more never equals a stated one)."""
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else distinct


def _taking(owner: str, name: str) -> Any:
    """The class of ``owner``'s hierarchy whose ``__init__`` takes parameter ``name``."""
    return next(c for c in _of(owner).__mro__ if name in inspect.signature(c.__init__).parameters)


def _taken_default(owner: str, name: str) -> Any:
    return default_of(_taking(owner, name).__init__, name)


def _makefile(pattern: str) -> tuple[str, ...]:
    found = re.search(pattern, (ROOT / "Makefile").read_text(), re.M)
    assert found is not None, pattern
    return found.groups()


def _option_default(name: str) -> str:
    info = _of("airflow_vertex_dist.get_provider_info:get_provider_info")()
    return str(info["config"]["vertex_dist"]["options"][name]["default"])


def _example_dag(name: str) -> Any:
    """A module of ``dags/``, imported as Airflow's DAG processor imports it (its folder on the path)."""
    folder = str(ROOT / "dags")
    sys.path.insert(0, folder)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(folder)


def _conn_id_defaults() -> set[str]:
    owners = [
        "airflow_vertex_dist.hooks.vertex_jobs:VertexJobsHook",
        "airflow_vertex_dist.hooks.vertex_jobs:VertexJobsAsyncHook",
        "airflow_vertex_dist.operators.base:VertexBaseOperator",
        *(
            f"airflow_vertex_dist.sensors:{name}"
            for name in ("VertexJobSensor", "VertexReplicaSensor", "VertexTrialSensor")
        ),
    ]
    return {_taken_default(owner, "vertex_dist_conn_id") for owner in owners}


def _shortest_token() -> int:
    """The shortest access token the emulator accepts on a non-loopback host."""
    check_exposure = _of("vertex_emulator.core.config:check_exposure")
    for length in range(1, 257):
        try:
            check_exposure("10.0.0.5", "x" * length)
        except ValueError:
            continue
        return length
    return 0


def _transient_grpc_codes() -> list[str]:
    import grpc
    from google.api_core import exceptions

    is_transient = _of("airflow_vertex_dist.hooks._clients:is_transient")
    return sorted(c.name for c in grpc.StatusCode if is_transient(exceptions.from_grpc_status(c, "x")))


def _seed_layout() -> tuple[int, int, str, int]:
    """The seed's workers, GPUs per machine (primary and workers alike), GPU model and reducers."""
    seed = _of("airflow_vertex_dist.specs.examples:SEED_REDUCTION_SERVER")
    pools = seed.to_api(location="us-central1")["jobSpec"]["workerPoolSpecs"]
    machine = pools[1]["machineSpec"]
    assert pools[0]["machineSpec"] == machine
    kind = machine["acceleratorType"].removeprefix("NVIDIA_TESLA_")
    return pools[1]["replicaCount"], machine["acceleratorCount"], kind, pools[2]["replicaCount"]


def _rendered_timeouts() -> Any:
    scheduling = _of("airflow_vertex_dist.specs:Scheduling")
    return _one(
        scheduling(timeout=value).to_api()["timeout"] for value in (7200, timedelta(hours=2), "7200s")
    )


def _torch_group() -> str:
    """The dependency group of pyproject.toml that pins torch (the one the Makefile's pip installs)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    groups = pyproject.split("[dependency-groups]", 1)[1].split("\n[", 1)[0]
    return _one(re.findall(r'^(\w+) = \[[^\]]*"torch==', groups, re.M))


def _tuning_output() -> Any:
    return _of("airflow_vertex_dist.jobs.outputs:tuning_output")(STUDY, "https://console")


def _evaluated(variable: str, values: tuple[int, ...]) -> Callable[[str], list[int]]:
    """A stated formula of ``variable``, evaluated at each of ``values``."""
    names = {"min": min, "max": max, "ceil": math.ceil}
    return lambda formula: [
        eval(formula, {"__builtins__": {}}, {**names, variable: v})  # noqa: S307 - the page's own formula
        for v in values
    ]


STUDY = {
    "name": "projects/p/locations/us-central1/hyperparameterTuningJobs/42",
    "displayName": "tune",
    "state": "JOB_STATE_SUCCEEDED",
    "studySpec": {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}]},
    "maxTrialCount": 2,
    "trials": [
        {
            "id": "1",
            "state": "SUCCEEDED",
            "parameters": [{"parameterId": "lr", "value": 0.01}],
            "finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": 0.91}]},
        },
        {"id": "2", "state": "INFEASIBLE", "infeasibleReason": "diverged", "parameters": []},
    ],
}


def _config() -> Any:
    return _of("vertex_emulator.core.config:EmulatorConfig")(state_dir=Path("s"), gcs_root=Path("g"))


def _cli_default(name: str) -> Any:
    return getattr(_of("vertex_emulator.cli:build_parser")().parse_args([]), name)


def _families() -> list[str]:
    families = _of("airflow_vertex_dist.specs.machine:GPU_MACHINE_FAMILIES")
    return sorted(f.removesuffix("-") for f in families if f != "a4x-")


def _source(obj: Any, pattern: str) -> tuple[str, ...]:
    """What ``pattern`` captures in the source of ``obj`` (a value written in place, not named)."""
    found = re.search(pattern, inspect.getsource(obj))
    assert found is not None, pattern
    return found.groups()


def _labels() -> list[str]:
    names = ("MANAGED_BY", "DAG", "TASK", "RUN", "SPEC", "BUDGET")
    return [_of(f"airflow_vertex_dist.hooks.labels:{name}_LABEL") for name in names]


def _mib(path: str) -> Callable[[], float]:
    return lambda: _of(path) / 1024 / 1024


OP = "airflow_vertex_dist.operators.job:VertexJobOperator"
SENSOR = "airflow_vertex_dist.sensors:VertexJobSensor"
LOGS = "airflow_vertex_dist.logs.worker_stream"
POLLER = "airflow_vertex_dist.logs.poller"
RS = "airflow_vertex_dist.specs:ReductionServer.model_fields"
EGRESS = "airflow_vertex_dist.specs:egress_gbps"
EM = "vertex_emulator"
TRIALS = (1, 2, 10, 14, 15, 16, 100)
PARALLEL = (1, 2, 5)
ONE_PARAMETER = {"parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}

#: page -> (what it says, its facts captured as groups; what the code has, one value per group or the
#: value itself for one group: "module:attribute" or a function; how a captured text becomes a value)
CLAIMS: dict[str, list[tuple[Any, ...]]] = {
    "README.md": [
        (r"# gRPC on 127\.0\.0\.1:(\d+), REST", f"{EM}.cli:DEFAULT_GRPC_PORT"),
        (r"REST and job pages on :(\d+)", f"{EM}.cli:DEFAULT_REST_PORT"),
        (r'"api_endpoint": "127\.0\.0\.1:(\d+)"', f"{EM}.cli:DEFAULT_GRPC_PORT"),
        (r'"web_endpoint": "http://127\.0\.0\.1:(\d+)"', f"{EM}.cli:DEFAULT_REST_PORT"),
        (r"Each uses the `(\w+)` connection only", "airflow_vertex_dist.hooks.connection:DEFAULT_CONN_ID"),
        (r"\(`XDIST`, (\d+) by default;", lambda: int(_makefile(r"^XDIST \?= (\d+)$")[0])),
        (
            r"`make check` runs ruff, the layer contracts, mypy and the tests not marked `(\w+)` or `(\w+)`",
            lambda: (
                _makefile(r'^check-tests: .*\n\t.*-m pytest -m "not (\w+) and not (\w+)"')
                if _makefile(r"^check: .*\n\t.* (lint typecheck check-tests)$")
                else None
            ),
        ),
        (
            r"`make bench` runs the benchmarks .*? and writes `([\w/.]+)`",
            lambda: _makefile(r"^bench: .*\n\t.*-m benchmarks .*--out (\S+)")[0],
        ),
        (
            r"make demo\s+# creates \.venv, installs, starts the emulator, runs the (\w+) DAG end to end",
            lambda: _one(
                re.findall(r'^DAG_FILE = "(\w+)\.py"', (ROOT / "scripts/demo.py").read_text(), re.M)
            ),
        ),
    ],
    "how-to/connection.md": [
        (r"takes `vertex_dist_conn_id` \(default `(\w+)`\)", lambda: _one(_conn_id_defaults())),
        (
            r"\(`RetryPolicy`: (.*?)\)",
            lambda: dataclasses.asdict(_of("airflow_vertex_dist.hooks.connection:RetryPolicy")()),
            lambda text: {k: float(v) for k, v in re.findall(r"`(\w+)=([\d.]+)`", text)},
        ),
        (
            r"over REST, HTTP (.*?)\) and transport",
            lambda: sorted(e.code for e in _of("airflow_vertex_dist.hooks._clients:TRANSIENT_ERRORS")),
            lambda text: sorted(int(code) for code in re.findall(r"\d{3}", text)),
        ),
        (r"Transient errors \((.*?) —", _transient_grpc_codes, lambda text: sorted(text.split(", "))),
        (
            r"\(`<location>(-aiplatform\.googleapis\.com)`\)",
            lambda: _of("airflow_vertex_dist.hooks._clients:_regional_endpoint")("L").removeprefix("L"),
        ),
    ],
    "how-to/outputs.md": [
        (r"`(\w+)` \(pushed as soon as the job is known\)", "airflow_vertex_dist.links:LINK_XCOM_KEY"),
    ],
    "how-to/sensors.md": [
        (r"a target state \(default `(\w+)`\)", lambda: _one(_taken_default(SENSOR, "target_states"))),
        (
            r"default: Airflow's `\[(\w+)\] (\w+)`",
            lambda: _source(_taking(SENSOR, "deferrable").__init__, r'conf\.getboolean\("(\w+)", "(\w+)"'),
        ),
    ],
    "how-to/python-package.md": [
        (
            r"\(`--gcs-root`, default `<state dir>/(\w+)`\)",
            lambda: _source(_of(f"{EM}.cli"), r'args\.gcs_root or state_dir / "(\w+)"')[0],
        ),
    ],
    "how-to/retraining.md": [
        (r"Every job carries the labels (.*?)\. A retry", _labels, _ticked),
        (r'\(`if_exists="(\w+)"`, the default\)', lambda: _taken_default(OP, "if_exists")),
        (r"`cancel_on_kill=(\w+)`, the default", lambda: str(_taken_default(OP, "cancel_on_kill"))),
        (
            r"The example sets `catchup=(\w+)` and `max_active_runs=(\d+)`",
            lambda: (lambda dag: (str(dag.catchup), dag.max_active_runs))(_example_dag("retraining").dag),
        ),
    ],
    "how-to/training-logs.md": [
        (
            r"With the default `stream_logs=(\w+)`",
            lambda: _one(
                {str(_taken_default(OP, "stream_logs")), str(_taken_default(SENSOR, "stream_logs"))}
            ),
        ),
        (
            r"last (\d+) lines \(([\d,]+) characters each at most\)",
            lambda: (_of(f"{LOGS}:FAILURE_LINES"), _of(f"{LOGS}:MAX_LINE_CHARS")),
        ),
        (
            r"log_reads_per_minute = (\d+)",
            lambda: _one(
                {_of(f"{POLLER}:DEFAULT_READS_PER_MINUTE"), int(_option_default("log_reads_per_minute"))}
            ),
        ),
        (r"\(doubling, up to a (minute)\)", lambda: {60.0: "minute"}.get(_of(f"{POLLER}:MAX_BACKOFF_S"))),
        (r"at most once every ([\d.]+) s", lambda: _taken_default(f"{LOGS}:LogStreamer", "min_interval_s")),
        (r"\(([\d,]+) entries a page\)", f"{POLLER}:PAGE_SIZE"),
        (
            r"an XCom of its own task instance, `(\w+)`",
            "airflow_vertex_dist.logs.cursor:CURSOR_XCOM_KEY",
        ),
        (
            r"log_settle_seconds = ([\d.]+)",
            lambda: _one({_of(f"{POLLER}:DEFAULT_SETTLE_S"), float(_option_default("log_settle_seconds"))}),
        ),
    ],
    "how-to/tuning.md": [  # the XCom value of a study's output
        (r"- `trial_counts`: (.*?);", lambda: list(_tuning_output()["trial_counts"]), _ticked),
        (r"- `best_trial`: `\{(.*?)\}`", lambda: list(_tuning_output()["best_trial"]), _quoted),
        (r"one compact row per trial, `\{(.*?)\}`", lambda: list(_tuning_output()["trials"][0]), _quoted),
        (
            r"\(plus `(\w+)`\)",
            lambda: _one(set(_tuning_output()["trials"][1]) - set(_tuning_output()["trials"][0])),
        ),
        (
            r"at most one early-stopping rule \((.*?)\)",
            lambda: [
                n for n in _of("airflow_vertex_dist.specs:Study.model_fields") if n.endswith("stopping")
            ],
            _ticked,
        ),
    ],
    "quickstart.md": [
        (
            r"installs the project, the emulator and the dependency groups \((.*?)\)",
            lambda: re.findall(r"--group (\w+)", _makefile(r"^\t.*(uv pip install .*)$")[0]),
            lambda text: text.split(", "),
        ),
        (r"after pip installs the `(\w+)` group's torch", _torch_group),
        (r"keeps its jobs in `\./([\w-]+)`", lambda: str(_cli_default("state_dir"))),
        (r"a primary and (\d+) workers with (\d+) (\w+) GPUs each, and (\d+) reducers", _seed_layout),
    ],
    "concepts/pools.md": [
        (
            r"a `Disk` \(default `([\w-]+)`, (\d+) GB\)",
            lambda: (lambda d: (d.boot_disk_type, d.boot_disk_size_gb))(
                _of("airflow_vertex_dist.specs:Disk")()
            ),
        ),
    ],
    "concepts/reduction-server.md": [
        (r'\| `replica_count` \| `"(\w+)"` \|', lambda: _of(RS)["replica_count"].default),
        (r'\| `machine_type` \| `"([\w-]+)"` \|', lambda: _of(RS)["machine_type"].default),
        (r"\| `allow_undersized` \| `(\w+)` \|", lambda: str(_of(RS)["allow_undersized"].default)),
        (r"\(attached, or an ([A-Z0-9/]+) machine type\)", _families, lambda t: sorted(t.lower().split("/"))),
        (
            r"Such a machine has (\d+) Gbps of egress",
            lambda: _of(EGRESS)("n1-highmem-96", "NVIDIA_TESLA_V100", 8),
        ),
        (r"An `n1-highcpu-16` reducer has (\d+) Gbps", lambda: _of(EGRESS)("n1-highcpu-16")),
        (
            r"An `a2-megagpu-16g` \(16 × A100\) has (\d+) Gbps of egress",
            lambda: _of(EGRESS)("a2-megagpu-16g", "NVIDIA_TESLA_A100", 16),
        ),
    ],
    "concepts/specs.md": [
        (r'a `timedelta` or the proto JSON form `"7200s"`, and render as `"(\w+)"`', _rendered_timeouts),
    ],
    "emulator.md": [
        (r"up to (\d+) times \(`EmulatorConfig\.restart_limit`\)", lambda: _config().restart_limit),
        (r"`EmulatorConfig\.stop_grace_s`, (\d+) s\)", lambda: _config().stop_grace_s),
        (
            r"`scheduling\.timeout` \(default (\d+) days\)",
            lambda: _of(f"{EM}.runtime.custom_job_setup:DEFAULT_TIMEOUT_S") / 86400,
        ),
        (r"before it is read when over (\d+) MiB \(413\)", _mib(f"{EM}.rest:MAX_BODY_BYTES")),
        (
            r"JSON may nest (\d+) levels and filter parentheses (\d+)",
            lambda: (_of(f"{EM}.rest:MAX_JSON_DEPTH"), _of(f"{EM}.jobservice.filters:MAX_DEPTH")),
        ),
        (r"a gRPC request over (\d+) MiB", _mib(f"{EM}.jobservice.grpc_server:MAX_MESSAGE_BYTES")),
        (r"past (\d+) MiB, gRPC itself refuses", _mib(f"{EM}.jobservice.grpc_server:_TRANSPORT_MAX_BYTES")),
        (r"\(at least (\d+) characters;", _shortest_token),
        (
            r"copied from the emulator's environment when set: (.*?) \(`",
            lambda: sorted({*_of(f"{EM}.runtime.cluster:LOCAL_ENV_NAMES"), "LC_*"}),
            lambda text: sorted(re.findall(r"`(\w+\*?)`", text)),
        ),
        (
            r"(\d+) a page by default and at most ([\d,]+), with page tokens",
            lambda: (
                _of(f"{EM}.cloud_logging.api:DEFAULT_PAGE_SIZE"),
                _of(f"{EM}.cloud_logging.api:MAX_PAGE_SIZE"),
            ),
        ),
        (r"A filter is at most ([\d,]+) characters", f"{EM}.cloud_logging.query:MAX_FILTER_CHARS"),
        (
            r"parsed in one pass, with at most (\d+) comparisons and search terms",
            f"{EM}.cloud_logging.query:MAX_TERMS",
        ),
        (r"nests at most (\d+) groups and holds at most", f"{EM}.cloud_logging.query:MAX_DEPTH"),
        (
            r"or object resource \(a bucket insert, an upload's metadata\) nested past (\d+) levels",
            f"{EM}.cloud_storage.api:MAX_JSON_DEPTH",
        ),
        (r"cloudml-hypertune files every ([\d.]+) s", f"{EM}.runtime.tuning_job:STOPPING_POLL_S"),
        (
            r"`maxFailedTrialCount: 0` is, in the emulator, `([^`]+)`",
            lambda: [_of(f"{EM}.runtime.tuning_study:failed_trial_limit")(0, n) for n in TRIALS],
            _evaluated("maxTrialCount", TRIALS),
        ),
        (
            r"the first `(max\(2, parallelTrialCount\))` trials are random",
            lambda: [
                _of(f"{EM}.tuning.search:Search")(ONE_PARAMETER, seed=0, parallel=p).n_init for p in PARALLEL
            ],
            _evaluated("parallelTrialCount", PARALLEL),
        ),
        (
            r"with probability ([\d.]+), a perturbation",
            lambda: float(_source(_of(f"{EM}.tuning.search:Search"), r"rng\.random\(\) < ([\d.]+)")[0]),
        ),
        (
            r"`page_size` \(default (\d+), at most ([\d,]+)\)",
            lambda: (
                _of(f"{EM}.jobservice.service:DEFAULT_PAGE_SIZE"),
                _of(f"{EM}.jobservice.service:MAX_PAGE_SIZE"),
            ),
        ),
        (
            r"the exit code reported \(default (\d+)\)",
            lambda: _one(
                {_of(f"{EM}.core.config:Faults")().crash_exit_code, _cli_default("crash_exit_code")}
            ),
        ),
        (
            r"\| `--fault-codes A,B` \| `error_codes` \| [^|]*\(default `(\w+)`\)",
            lambda: _one({_cli_default("fault_codes"), *_of(f"{EM}.core.config:Faults")().error_codes}),
        ),
    ],
}
ROWS = [(name, *row) for name, rows in CLAIMS.items() for row in rows]


@pytest.mark.parametrize(
    ("name", "pattern", "code", "parse"),
    [(*row, _number)[:4] for row in ROWS],
    ids=[f"{row[0]}:{row[1][:40]}" for row in ROWS],
)
def test_what_a_page_states_is_what_the_code_has(name: str, pattern: str, code: Any, parse: Any) -> None:
    found = claim(page(name), pattern)
    values = tuple(parse(group) for group in found.groups())
    expected = _of(code) if isinstance(code, str) else code()
    assert (values[0] if len(values) == 1 else values) == expected, pattern


# -- claims that name code: the names exist, with the fields and parameters stated -----------------------


def test_readme_example_dags_exist_and_use_the_default_connection_only() -> None:
    named = set(
        re.findall(
            r"\(`(\w+\.py)`\)", claim(page("README.md"), r"The example DAGs in `dags/` cover (.*?)\. Each")[1]
        )
    )
    assert named and all((ROOT / "dags" / name).is_file() for name in named), named
    for path in (ROOT / "dags").glob("*.py"):
        assert not re.search(r"vertex_dist_conn_id\s*=\s*['\"]", path.read_text()), (
            f"{path.name} names a connection"
        )
    common = (ROOT / "dags" / "examples_common.py").read_text()
    assert re.search(r'^CONN_ID\s*=\s*"vertex_dist_default"', common, re.M)


def test_readme_quotes_a_rule_as_the_spec_gives_it() -> None:
    from pydantic import ValidationError

    from airflow_vertex_dist.specs import spec_from_dict

    quoted = claim(page("README.md"), r"with the field and the rule \(`([^`]+)`\)")[1]
    primary = {
        "machine": {"machine_type": "n1-standard-8"},
        "container": {"image_uri": "t"},
        "replica_count": 2,
    }
    with pytest.raises(ValidationError) as info:
        spec_from_dict({"display_name": "x", "primary": primary})
    assert quoted in [line.strip() for line in str(info.value).splitlines()]


def test_readme_make_test_runs_the_stages_it_lists() -> None:
    claim(
        page("README.md"),
        r"make test\s+# creates \.venv, installs, lints \(ruff\), type-checks \(mypy --strict\), "
        r"runs the tests, # the compat suite on every other cell of the support matrix, "
        r"# then the reliability suite",
    )
    assert _makefile(r"^test: .*\n\t.*\$\(MAKE\) .* (lint typecheck unit compat-install)\n")
    assert _makefile(r"^test: .*\n.*\n\t.*\$\(MAKE\) .* COMPAT_PHASE=(test) compat (\$\(STACK_JOBS\));")
    assert _makefile(r"^compat-install: .*\n\t.* scripts/compat_cells\.py --phase (install) ")
    assert _makefile(r"^STACK_JOBS +:= (stack-local stack-local-2 stack-celery stack-ui)$")
    # every stack test file runs in one of the stack jobs, and in one only
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    jobs = re.findall(r"^(?:STACK_TESTS|STACK_TESTS_2|CELERY_TESTS|UI_TESTS) +:= (.*)$", makefile, re.M)
    listed = sorted(name for job in jobs for name in job.split())
    marked = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("test_*.py")
        if re.search(r"mark\.stack\b", path.read_text())
    )
    assert len(jobs) == 4
    assert listed == marked
    assert _makefile(r"^lint: .*\n\t\$\(VENV\)/bin/(ruff) check \.")
    assert _makefile(r"^typecheck: .*\n\t\$\(VENV\)/bin/(mypy)$")


def test_connection_google_extras_read_and_refused() -> None:
    """The extras the page lists as read are accepted, those it lists as refused are refused by name when
    set, and together they are every field of the Google provider's connection form."""
    from airflow_vertex_dist.hooks.connection import VertexConnection
    from tests.hooks.google_form import FORM_FIELDS, REFUSED

    text = page("how-to/connection.md")
    read = _ticked(claim(text, r"Its extras (.*?) \(accepted, not used")[1])
    values = {"is_anonymous": False, "num_retries": 5, "key_path": "/k.json", "keyfile_dict": "{}"}
    for name in read:
        for key in (name, f"extra__google_cloud_platform__{name}"):
            VertexConnection.from_extra({key: values.get(name, "x@p.iam.gserviceaccount.com")})
    refused = _ticked(claim(text, r"A key in Secret Manager (.*?) are refused")[1])
    assert refused == list(REFUSED)
    for name in refused:
        with pytest.raises(ValueError, match=name):
            VertexConnection.from_extra({name: "x"})
        VertexConnection.from_extra({name: ""})  # "when set"
    assert set(read) | set(refused) == set(FORM_FIELDS)


def test_connection_examples_are_read_as_the_page_says() -> None:
    from airflow_vertex_dist.hooks.connection import VertexConnection

    text = page("how-to/connection.md")
    env = r"AIRFLOW_CONN_VERTEX_DIST_DEFAULT='(\{.*?\})'"
    private = VertexConnection.from_extra(
        json.loads(claim(text, rf"## A private endpoint .*?{env}")[1])["extra"]
    )
    assert not private.is_emulator and private.quota_project_id and private.logging_target
    emulator = json.loads(claim(text, rf"## The emulator .*?{env}")[1])
    assert VertexConnection.from_extra(emulator["extra"]).is_emulator


def test_connection_conn_id_is_templated_on_the_operators() -> None:
    from airflow_vertex_dist.operators import (
        VertexCancelJobOperator,
        VertexTrainingOperator,
        VertexTuningOperator,
    )

    field = claim(page("how-to/connection.md"), r"On the operators, `(\w+)` is templated")[1]
    for operator in (VertexTrainingOperator, VertexTuningOperator, VertexCancelJobOperator):
        assert {field, "impersonation_chain"} <= set(operator.template_fields), operator


def test_lineage_a_job_without_output_directory_reports_no_output() -> None:
    pytest.importorskip("airflow.providers.openlineage")
    from airflow_vertex_dist.operators import VertexTrainingOperator
    from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER

    claim(page("how-to/lineage.md"), r"A job without a `base_output_directory` reports no output\.")
    spec = SEED_REDUCTION_SERVER.model_copy(update={"base_output_directory": None})
    train = VertexTrainingOperator(task_id="train", spec=spec, project_id="p", location="us-central1")
    assert train.get_openlineage_facets_on_start().outputs == []


def test_backfill_example_uses_the_settings_named() -> None:
    backfill_tuning = _example_dag("backfill_tuning")
    text = page("how-to/backfill.md")
    constant, attribute, task = claim(
        text, r"Days are tuned `(\w+)` at a time \(`(\w+)` on `([\w.]+)`\)"
    ).groups()
    tune = backfill_tuning.dag.get_task(task)
    assert type(tune).__name__ == "VertexTuningOperator"
    assert getattr(tune, attribute) == getattr(backfill_tuning, constant)
    threshold = claim(text, r"passes when the best trial's `accuracy` reaches `(\w+)`")[1]
    gate = backfill_tuning.dag.get_task("day.quality_gate")
    assert type(gate).__name__ == "VertexTrialSensor" and gate.metric_threshold == getattr(
        backfill_tuning, threshold
    )


def test_prep_to_train_paths() -> None:
    from types import SimpleNamespace

    prep_to_train = _example_dag("prep_to_train")
    text = page("how-to/prep-to-train.md")
    datasets = claim(text, r"writes the day's dataset to `<bucket>/([\w/]+)/<day>/`")[1]
    models = claim(text, r"the output directory `<bucket>/([\w/]+)/<version>/`")[1]
    assert prep_to_train.DATASET.uri.rstrip("/").endswith(f"/{datasets}")
    event = {"uri": prep_to_train.DATASET.uri + "/20261130", "version": "20261130"}
    train = prep_to_train.train_dag.get_task("train")
    train.render_template_fields({"ti": SimpleNamespace(xcom_pull=lambda task_ids: event)})  # type: ignore[arg-type]
    spec = train.validated_spec
    assert spec.base_output_directory.rstrip("/").endswith(f"/{models}/20261130")
    assert f"--data-dir={event['uri']}" in spec.primary.container.args


def test_tuning_measurement_selection_is_a_value_of_the_field() -> None:
    from airflow_vertex_dist.specs import Study

    selection = claim(page("how-to/tuning.md"), r'`measurement_selection_type="(\w+)"`')[1]
    assert selection in str(Study.model_fields["measurement_selection_type"].annotation)


def test_index_spec_names_are_in_the_specs_package() -> None:
    from airflow_vertex_dist import specs

    names = _ticked(claim(page("index.md"), r"\| Specs \| (.*?) in `airflow_vertex_dist\.specs`")[1])
    assert names and set(names) <= set(specs.__all__), names


def test_quickstart_job_output_keys_are_pushed() -> None:
    from airflow_vertex_dist.jobs.outputs import job_output

    keys = re.findall(r"`(\w+)`", claim(page("quickstart.md"), r"the job as JSON \((.*?)\)\.")[1])
    out = job_output(
        {"name": "projects/p/locations/l/customJobs/1", "state": "JOB_STATE_FAILED"}, "https://c"
    )
    assert keys and set(keys) <= set(out), keys


def test_python_package_pip_flags_are_the_emulators() -> None:
    from vertex_emulator.runtime import packages

    stated = claim(page("how-to/python-package.md"), r"\(`pip install (--[^`]*) <dir>`\)")[1].split()
    passed = re.findall(r'"(--[\w-]+)"', inspect.getsource(packages.install_packages))
    assert stated and set(stated) <= set(passed), (stated, passed)


def test_pools_roles_are_the_models_fields() -> None:
    from airflow_vertex_dist.specs import POOL_ROLES, DistributedTrainingJob

    rows = re.findall(r"\| (\d) \| [^|]+ \| (`\w+`(?: / `\w+`)?) \|", page("concepts/pools.md"))
    assert [int(i) for i, _ in rows] == [0, 1, 2, 3]
    roles = [_ticked(fields) for _, fields in rows]
    assert roles == [["primary"], ["workers"], ["parameter_servers", "reduction_server"], ["evaluators"]]
    assert all(r in DistributedTrainingJob.model_fields for rs in roles for r in rs)
    assert list(POOL_ROLES)[:2] == ["primary", "workers"] and list(POOL_ROLES)[-1] == "evaluators"


def test_migration_names_exist() -> None:
    from airflow_vertex_dist import specs
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsHook
    from airflow_vertex_dist.operators.job import VertexJobOperator

    text = page("migration.md")
    for method in re.findall(r"`VertexJobsHook\.(\w+)", text):
        assert callable(getattr(VertexJobsHook, method, None)), method
    # Model(field=..., ...) calls: every keyword is a field of that model
    checked = set()
    for model, args in re.findall(r"(\w+)\(([^()`]*)\)", text):  # innermost calls
        if model in specs.__all__ and isinstance(getattr(specs, model), type):
            fields = getattr(specs, model).model_fields
            for keyword in re.findall(r"(\w+)=", args):
                assert keyword in fields, (model, keyword)
                checked.add(model)
    assert {"Container", "Machine", "Disk", "Scheduling", "Metric", "DoubleParameter"} <= checked, checked
    job_fields = specs.DistributedTrainingJob.model_fields
    for cell in (
        r"((?:`\w+`, )+`\w+`) \| the spec fields",
        r"((?:`\w+`, )+`\w+`) \| fields of `trial_job`",
    ):
        names = _ticked(claim(text, cell)[1])
        assert all(n.replace("base_output_dir", "base_output_directory") in job_fields for n in names), names
    for name in re.findall(r"`spec\.(\w+)`", text):
        assert name in job_fields, name
    for name in re.findall(r"`Study\.(\w+)`", text):
        assert name in specs.Study.model_fields, name
    assert '"GRID_SEARCH"' in text and "GRID_SEARCH" in str(specs.Study.model_fields["algorithm"].annotation)
    operator = inspect.signature(VertexJobOperator.__init__).parameters
    stated = {name for name in re.findall(r"`(\w+)", text) if name in operator}
    named = {"deferrable", "poll_interval", "wait_for_completion", "partial_success", "paused_grace"}
    assert named | {"if_exists", "cancel_on_kill"} <= stated, stated


def test_architecture_names_tests_that_exist() -> None:
    """Each rule's "kept by" names test files and test functions: they exist."""
    cited = re.findall(r"`(tests/[\w/]+\.py)`(?: \(([^)]*)\))?", page("architecture.md"))
    assert cited
    for path, names in cited:
        source = (ROOT / path).read_text()
        for name in re.findall(r"`(test_\w+)`", names):
            assert re.search(rf"^(?:async )?def {name}\(", source, re.M), f"{path} has no {name}"
