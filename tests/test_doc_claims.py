"""What the pages say, checked against the code: defaults, keys, ports, lists and messages the README
and ``docs/`` state in prose (their code blocks are run by ``test_docs.py``). Each test reads the
sentence from the page, so an edit to either side that breaks the claim fails here.

Audited pages and the tests that back their other statements are listed in each section.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def page(name: str) -> str:
    """The page's text with its line breaks folded to spaces (sentences wrap anywhere)."""
    path = ROOT / name if name == "README.md" else DOCS / name
    return re.sub(r"\s*\n\s*", " ", path.read_text(encoding="utf-8"))


def claim(text: str, pattern: str) -> re.Match[str]:
    """The match of ``pattern`` in a page's text; fails when the page no longer says it."""
    found = re.search(pattern, text)
    assert found is not None, f"the page no longer says {pattern!r}"
    return found


def default_of(func: Any, name: str) -> Any:
    return inspect.signature(func).parameters[name].default


# -- README.md -----------------------------------------------------------------------------------------
# Also backed by: test_readme (the DAG renders 1 + 4 + 16 pools, the make targets, .ci/run),
# test_matrix_docs (the support matrix), test_parse_light (no google.cloud at parse), test_docs
# (the emulator flags), tests/e2e (every example DAG runs on the emulator).


def test_readme_ports_are_the_emulators_defaults() -> None:
    from airflow_vertex_dist.emulator.cli import DEFAULT_GRPC_PORT, DEFAULT_REST_PORT

    text = page("README.md")
    found = claim(text, r"# gRPC on 127\.0\.0\.1:(\d+), REST and job pages on :(\d+)")
    assert (int(found[1]), int(found[2])) == (DEFAULT_GRPC_PORT, DEFAULT_REST_PORT)
    assert f'"api_endpoint": "127.0.0.1:{DEFAULT_GRPC_PORT}"' in text
    assert f'"web_endpoint": "http://127.0.0.1:{DEFAULT_REST_PORT}"' in text


def test_readme_example_dags_exist_and_use_the_default_connection_only() -> None:
    from airflow_vertex_dist.hooks.connection import DEFAULT_CONN_ID

    text = page("README.md")
    named = set(
        re.findall(r"\(`(\w+\.py)`\)", claim(text, r"The example DAGs in `dags/` cover (.*?)\. Each")[1])
    )
    assert named and all((ROOT / "dags" / name).is_file() for name in named), named
    assert claim(text, r"Each uses the `(\w+)` connection only")[1] == DEFAULT_CONN_ID
    for path in (ROOT / "dags").glob("*.py"):
        source = path.read_text()
        assert not re.search(r"vertex_dist_conn_id\s*=\s*['\"]", source), f"{path.name} names a connection"
    common = (ROOT / "dags" / "examples_common.py").read_text()
    assert re.search(rf'^CONN_ID\s*=\s*"{DEFAULT_CONN_ID}"', common, re.M)


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


def test_readme_make_targets_do_what_it_says() -> None:
    text = page("README.md")
    makefile = (ROOT / "Makefile").read_text()
    claim(text, r"make test\s+# creates \.venv, installs, lints \(ruff\), type-checks \(mypy --strict\)")
    assert re.search(r"^test: lint typecheck unit compat test-stack$", makefile, re.M)
    assert re.search(r"^lint: .*\n\t\$\(VENV\)/bin/ruff check \.", makefile, re.M)
    assert re.search(r"^typecheck: .*\n\t\$\(VENV\)/bin/mypy", makefile, re.M)
    assert "`make bench` runs the benchmarks" in text and "writes `docs/benchmarks.md`" in text
    assert re.search(r"^bench: .*\n\t.*-m benchmarks .*--out docs/benchmarks\.md", makefile, re.M)
    assert "runs the retraining DAG end to end" in text
    assert re.search(r"^demo: .*\n\t\$\(PY\) scripts/demo\.py", makefile, re.M)
    assert 'DAG_FILE = "retraining.py"' in (ROOT / "scripts" / "demo.py").read_text()


# -- docs/how-to/connection.md --------------------------------------------------------------------------
# Also backed by: tests/hooks/test_credentials.py (each credential form, the regional endpoint),
# tests/hooks/test_connection.py (the bad-settings messages), tests/operators/test_connections.py
# (a google_cloud_platform connection as it is, the task's chain in the hook, the trigger and the
# listener), tests/hooks/test_vertex_jobs.py (the create-token label and the Create retry).


def test_connection_default_id_and_templating() -> None:
    from airflow_vertex_dist.hooks.connection import DEFAULT_CONN_ID
    from airflow_vertex_dist.hooks.vertex_jobs import VertexJobsAsyncHook, VertexJobsHook
    from airflow_vertex_dist.operators import (
        VertexCancelJobOperator,
        VertexTrainingOperator,
        VertexTuningOperator,
    )
    from airflow_vertex_dist.operators.base import VertexBaseOperator
    from airflow_vertex_dist.sensors import VertexJobSensor, VertexReplicaSensor, VertexTrialSensor

    text = page("how-to/connection.md")
    assert claim(text, r"takes `vertex_dist_conn_id` \(default `(\w+)`\)")[1] == DEFAULT_CONN_ID
    for hook in (VertexJobsHook, VertexJobsAsyncHook):
        assert default_of(hook.__init__, "vertex_dist_conn_id") == DEFAULT_CONN_ID, hook
    assert default_of(VertexBaseOperator.__init__, "vertex_dist_conn_id") == DEFAULT_CONN_ID
    for sensor in (VertexJobSensor, VertexReplicaSensor, VertexTrialSensor):
        base = next(
            c for c in sensor.__mro__ if "vertex_dist_conn_id" in inspect.signature(c.__init__).parameters
        )
        assert default_of(base.__init__, "vertex_dist_conn_id") == DEFAULT_CONN_ID, sensor
    assert "On the operators, `vertex_dist_conn_id` is templated" in text
    for operator in (VertexTrainingOperator, VertexTuningOperator, VertexCancelJobOperator):
        assert {"vertex_dist_conn_id", "impersonation_chain"} <= set(operator.template_fields), operator


def test_connection_google_extras_read_and_refused() -> None:
    from airflow_vertex_dist.hooks.connection import VertexConnection

    text = page("how-to/connection.md")
    read = re.findall(r"`(\w+)`", claim(text, r"its extras (.*?) \(accepted, not used")[1])
    assert read[:3] == ["project", "key_path", "keyfile_dict"] and "num_retries" in read
    values = {"is_anonymous": False, "num_retries": 5, "key_path": "/k.json", "keyfile_dict": "{}"}
    for name in read:
        for key in (name, f"extra__google_cloud_platform__{name}"):
            VertexConnection.from_extra({key: values.get(name, "x@p.iam.gserviceaccount.com")})
    refused = re.findall(r"`(\w+)`", claim(text, r"A key in Secret Manager (.*?) are refused")[1])
    assert refused == ["key_secret_name", "idp_issuer_url", "client_id", "client_secret"]
    for name in refused:
        with pytest.raises(ValueError, match=name):
            VertexConnection.from_extra({name: "x"})


def test_connection_retry_policy_and_transient_errors() -> None:
    from google.api_core import exceptions

    from airflow_vertex_dist.hooks._clients import TRANSIENT_ERRORS, _regional_endpoint, is_transient
    from airflow_vertex_dist.hooks.connection import RetryPolicy

    text = page("how-to/connection.md")
    stated = dict(re.findall(r"`(\w+_s|multiplier)=([\d.]+)`", claim(text, r"\(`RetryPolicy`: (.*?)\)")[1]))
    assert {k: float(v) for k, v in stated.items()} == dataclasses.asdict(RetryPolicy())
    codes = [int(c) for c in re.findall(r"\d{3}", claim(text, r"over REST, HTTP (.*?)\) and transport")[1])]
    assert sorted(codes) == sorted(e.code for e in TRANSIENT_ERRORS)  # type: ignore[attr-defined]
    for name in claim(text, r"Transient errors \((.*?) —")[1].split(", "):
        assert is_transient(exceptions.from_grpc_status(getattr(__import__("grpc").StatusCode, name), "x"))
    assert not is_transient(exceptions.NotFound("x")) and not is_transient(exceptions.BadRequest("x"))
    pattern = claim(text, r"\(`<location>(-aiplatform\.googleapis\.com)`\)")[1]
    assert _regional_endpoint("europe-west4") == "europe-west4" + pattern


# -- docs/how-to/outputs.md ----------------------------------------------------------------------------
# Also backed by: the page's exec blocks (job_output/tuning_output run at build), tests/operators
# (test_progress_outputs: what a real run pushes).


def test_outputs_link_key() -> None:
    from airflow_vertex_dist.links import LINK_XCOM_KEY

    text = page("how-to/outputs.md")
    key, fields = claim(text, r"`(\w+)` \(pushed as soon as the job is known\): `\{([^}]*)\}`").groups()
    assert key == LINK_XCOM_KEY
    assert re.findall(r'"(\w+)"', fields) == ["name", "console_url"]


# -- docs/how-to/lineage.md ----------------------------------------------------------------------------
# Also backed by: tests/operators/test_lineage.py (facets at start and complete, the provider's events),
# test_parse_light (no OpenLineage module at parse).


def test_lineage_a_job_without_output_directory_reports_no_output() -> None:
    pytest.importorskip("airflow.providers.openlineage")
    from airflow_vertex_dist.operators import VertexTrainingOperator
    from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER

    assert "A job without a `base_output_directory` reports no output." in page("how-to/lineage.md")
    spec = SEED_REDUCTION_SERVER.model_copy(update={"base_output_directory": None})
    train = VertexTrainingOperator(task_id="train", spec=spec, project_id="p", location="us-central1")
    assert train.get_openlineage_facets_on_start().outputs == []


# -- docs/how-to/sensors.md ----------------------------------------------------------------------------
# Also backed by: tests/sensors/test_sensors.py (each sensor poked and deferred on the emulator, the
# AirflowFailException of a failure verdict), tests/sensors/test_conditions.py (replica names and
# patterns, trial thresholds >= / <=, short and full state names), the page's exec blocks (the
# parse-time refusals).


def test_sensors_defaults() -> None:
    from airflow_vertex_dist.sensors import VertexJobSensor

    text = page("how-to/sensors.md")
    assert (
        claim(text, r"a target state \(default `(\w+)`\)")[1]
        == default_of(VertexJobSensor.__init__, "target_states")[0]
    )
    assert "default: Airflow's `[operators] default_deferrable`" in text
    base = next(
        c for c in VertexJobSensor.__mro__ if "deferrable" in inspect.signature(c.__init__).parameters
    )
    assert 'conf.getboolean("operators", "default_deferrable"' in inspect.getsource(base.__init__)


# -- docs/how-to/retraining.md -------------------------------------------------------------------------
# Also backed by: tests/e2e/test_retraining.py (the DAG end to end), tests/operators/test_training.py
# and test_user_actions.py (re-attach, fingerprint, clear, if_exists, execution_timeout, on_kill),
# tests/hooks/test_find_or_create.py (concurrent tries converge), the page's exec blocks.


def test_retraining_labels_defaults_and_example_settings() -> None:
    from airflow_vertex_dist.hooks import labels
    from airflow_vertex_dist.operators.job import VertexJobOperator

    text = page("how-to/retraining.md")
    stated = re.findall(r"`([a-z-]+)`", claim(text, r"Every job carries the labels (.*?)\. A retry")[1])
    assert stated == [
        labels.MANAGED_BY_LABEL,
        labels.DAG_LABEL,
        labels.TASK_LABEL,
        labels.RUN_LABEL,
        labels.SPEC_LABEL,
        labels.BUDGET_LABEL,
    ]
    assert claim(text, r'\(`if_exists="(\w+)"`, the default\)')[1] == default_of(
        VertexJobOperator.__init__, "if_exists"
    )
    assert "`cancel_on_kill=True`, the default" in text
    assert default_of(VertexJobOperator.__init__, "cancel_on_kill") is True
    assert "The example sets `catchup=False` and `max_active_runs=1`" in text
    source = (ROOT / "dags" / "retraining.py").read_text()
    assert "catchup=False," in source and "max_active_runs=1," in source and "execution_timeout=" in source


# -- docs/how-to/python-package.md ---------------------------------------------------------------------
# Also backed by: test_docs (the page's round trip runs: build a wheel, run it on the emulator),
# tests/emulator/test_runner.py (package installs).


def test_python_package_gcs_root_default_and_install_command() -> None:
    from airflow_vertex_dist.emulator import cli, packages

    text = page("how-to/python-package.md")
    assert "(`--gcs-root`, default `<state dir>/gcs`)" in text
    assert 'args.gcs_root or state_dir / "gcs"' in inspect.getsource(cli)
    command = claim(text, r"\(`pip install (--[^`]*) <dir>`\)")[1].split()
    source = inspect.getsource(packages)
    for flag in command:
        assert f'"{flag}"' in source, flag


# -- docs/how-to/tuning.md -----------------------------------------------------------------------------
# Also backed by: tests/specs/test_bad_specs.py (each study rule the page lists), tests/emulator
# (test_tuning.py, test_sdk_tuning.py: trial args, CLOUD_ML_TRIAL_ID, INFEASIBLE trials, the
# failed-trial limit), tests/operators/test_tuning.py (the outputs of a real study).

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


def test_tuning_outputs_and_study_fields() -> None:
    from airflow_vertex_dist.operators.outputs import tuning_output
    from airflow_vertex_dist.specs import Study

    text = page("how-to/tuning.md")
    out = tuning_output(STUDY, "https://console")
    counts = re.findall(r"`(\w+)`", claim(text, r"- `trial_counts`: (.*?);")[1])
    assert counts == list(out["trial_counts"])
    best = re.findall(r'"(\w+)"', claim(text, r"- `best_trial`: `\{(.*?)\}`")[1])
    assert best == list(out["best_trial"])
    row = re.findall(r'"(\w+)"', claim(text, r"one compact row per trial, `\{(.*?)\}`")[1])
    assert row == list(out["trials"][0])
    assert claim(text, r"\(plus `(\w+)`\)")[1] in out["trials"][1]
    stops = re.findall(r"`(\w+)`", claim(text, r"at most one early-stopping rule \((.*?)\)")[1])
    assert stops == [name for name in Study.model_fields if name.endswith("stopping")]
    selection = claim(text, r'`measurement_selection_type="(\w+)"`')[1]
    assert selection in str(Study.model_fields["measurement_selection_type"].annotation)


# -- docs/how-to/backfill.md ---------------------------------------------------------------------------
# Also backed by: tests/e2e/test_backfill_tuning.py (the DAG end to end: a day per map index, the gate
# failing one day alone), tests/operators/test_mapped.py (per-map-index labels and re-attach).


def test_backfill_example_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "dags"))
    import backfill_tuning

    text = page("how-to/backfill.md")
    assert "Days are tuned `MAX_PARALLEL_DAYS` at a time (`max_active_tis_per_dagrun` on `day.tune`)" in text
    tune = backfill_tuning.dag.get_task("day.tune")
    assert tune.max_active_tis_per_dagrun == backfill_tuning.MAX_PARALLEL_DAYS
    assert "reaches `MIN_ACCURACY`" in text
    gate = backfill_tuning.dag.get_task("day.quality_gate")
    assert (
        gate.metric_threshold == backfill_tuning.MIN_ACCURACY and type(gate).__name__ == "VertexTrialSensor"
    )
    assert type(tune).__name__ == "VertexTuningOperator"


# -- docs/how-to/prep-to-train.md ----------------------------------------------------------------------
# Also backed by: tests/e2e/test_prep_to_train.py (both DAGs end to end: the Asset event, the job
# reading the dataset where the prep step wrote it), the page's exec block.


def test_prep_to_train_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    monkeypatch.syspath_prepend(str(ROOT / "dags"))
    import prep_to_train

    text = page("how-to/prep-to-train.md")
    assert "writes the day's dataset to `<bucket>/prep_to_train/datasets/<day>/`" in text
    assert "the output directory `<bucket>/prep_to_train/models/<version>/`" in text
    event = {"uri": prep_to_train.DATASET.uri + "/20261130", "version": "20261130"}
    train = prep_to_train.train_dag.get_task("train")
    train.render_template_fields({"ti": SimpleNamespace(xcom_pull=lambda task_ids: event)})  # type: ignore[arg-type]
    spec = train.validated_spec
    assert spec.base_output_directory.rstrip("/").endswith("/prep_to_train/models/20261130")
    assert f"--data-dir={event['uri']}" in spec.primary.container.args
    assert prep_to_train.DATASET.uri.rstrip("/").endswith("/prep_to_train/datasets")


# -- docs/how-to/training-logs.md ----------------------------------------------------------------------
# Also backed by: tests/operators/test_log_stream.py (what the task log shows, the selections, the
# failure quote), tests/triggers (the shared log poller: one call per interval, pages, backoff, the
# cursor XCom), tests/e2e/test_training_logs.py (the example DAGs), tests/stack (the triggerer
# restart mid-stream), docs/benchmarks.md section 5 (the table, from make bench-logs).


def test_training_logs_numbers() -> None:
    from airflow_vertex_dist import get_provider_info
    from airflow_vertex_dist.hooks.connection import VertexConnection
    from airflow_vertex_dist.operators import log_stream
    from airflow_vertex_dist.operators.job import VertexJobOperator
    from airflow_vertex_dist.sensors import VertexJobSensor
    from airflow_vertex_dist.triggers import log_cursor, log_poller

    text = page("how-to/training-logs.md")
    assert "With the default `stream_logs=True`" in text and "| `True` (default) |" in text
    assert default_of(VertexJobOperator.__init__, "stream_logs") is True
    base = next(
        c for c in VertexJobSensor.__mro__ if "stream_logs" in inspect.signature(c.__init__).parameters
    )
    assert default_of(base.__init__, "stream_logs") is True
    lines, chars = claim(text, r"last (\d+) lines \(([\d,]+) characters each at most\)").groups()
    assert (int(lines), int(chars.replace(",", ""))) == (log_stream.FAILURE_LINES, log_stream.MAX_LINE_CHARS)
    reads = int(claim(text, r"log_reads_per_minute = (\d+)")[1])
    assert reads == log_poller.DEFAULT_READS_PER_MINUTE
    option = get_provider_info.get_provider_info()["config"]["vertex_dist"]["options"]["log_reads_per_minute"]
    assert option["default"] == str(reads)
    assert claim(text, r"\(doubling, up to a (minute)\)") and log_poller.MAX_BACKOFF_S == 60.0
    assert float(claim(text, r"at most once every ([\d.]+) s")[1]) == default_of(
        log_stream.LogStreamer.__init__, "min_interval_s"
    )
    assert int(claim(text, r"\(([\d,]+) entries a page\)")[1].replace(",", "")) == log_poller.PAGE_SIZE
    assert claim(text, r"an XCom of its own task instance, `(\w+)`")[1] == log_cursor.CURSOR_XCOM_KEY
    assert "the connection's `logging_endpoint` defaults to the emulator's `api_endpoint`" in text
    conn = VertexConnection.from_extra({"api_endpoint": "127.0.0.1:8781"})
    assert conn.logging_endpoint is None and conn.logging_target == "127.0.0.1:8781"


# -- docs/how-to/index.md, docs/index.md ---------------------------------------------------------------
# Also backed by: test_docs (every Vertex* class named exists), test_parse_light and .importlinter (the
# specs import no Airflow or Google module).


def test_index_spec_names_are_in_the_specs_package() -> None:
    from airflow_vertex_dist import specs

    row = claim(page("index.md"), r"\| Specs \| (.*?) in `airflow_vertex_dist\.specs`")[1]
    names = re.findall(r"`(\w+)`", row)
    assert names and all(name in specs.__all__ for name in names), names


# -- docs/migration.md ---------------------------------------------------------------------------------
# Also backed by: the page's exec block (worker_pool_specs converted through from_api), the tests named
# under retraining.md and connection.md for the behaviour table.


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
        "`service_account`, `network`, `tensorboard`, `psc_interface_config` | the spec fields",
        "`base_output_dir`, `service_account`, `network`, `tensorboard`, `enable_web_access` | fields of "
        "`trial_job`",
    ):
        assert cell in text
        names = re.findall(r"`(\w+)`", cell.split("|")[0])
        assert all(n.replace("base_output_dir", "base_output_directory") in job_fields for n in names), names
    for name in re.findall(r"`spec\.(\w+)`", text):
        assert name in job_fields, name
    assert "encryption_key" in job_fields and "encryption_key" in specs.HyperparameterTuningJob.model_fields
    for name in re.findall(r"`Study\.(\w+)`", text):
        assert name in specs.Study.model_fields, name
    algorithm = str(specs.Study.model_fields["algorithm"].annotation)
    assert '"GRID_SEARCH"' in text and "GRID_SEARCH" in algorithm and "RANDOM_SEARCH" in algorithm
    operator = inspect.signature(VertexJobOperator.__init__).parameters
    for name in (
        "deferrable",
        "poll_interval",
        "wait",
        "partial_success",
        "paused_grace",
        "if_exists",
        "cancel_on_kill",
    ):
        assert f"`{name}`" in text or f"`{name}=" in text, name
        assert name in operator, name


# -- docs/quickstart.md --------------------------------------------------------------------------------
# Also backed by: test_quickstart (every shell block runs as written, in order, on a fresh home: the
# emulator, the connection, render, the DAG, the model file), test_docs (the DAG on the emulator),
# tests/emulator/test_api_rest_raw.py (the /ui/ pages), tests/emulator/test_api_cli.py (SIGTERM stops
# the replicas).


def test_quickstart_install_emulator_defaults_and_outputs() -> None:
    from airflow_vertex_dist.emulator import cli
    from airflow_vertex_dist.operators.outputs import job_output
    from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER

    text = page("quickstart.md")
    makefile = (ROOT / "Makefile").read_text()
    assert "installs the project with its test and examples extras and its dev group" in text
    assert "-e '.[test,examples]' --group dev" in makefile
    assert "after pip installs the `examples` extra's torch" in text
    assert "pip install --quiet \"$$(grep -o -m1 'torch==" in makefile
    assert claim(text, r"keeps its jobs in `\./([\w-]+)`")[1] == str(
        cli.build_parser().parse_args([]).state_dir
    )
    ready = claim(
        text, r"`(emulator ready grpc=HOST:PORT rest=http://HOST:PORT storage=http://127\.0\.0\.1:PORT)`"
    )[1]
    assert (
        'f"emulator ready grpc={emulator.grpc_target} rest={emulator.rest_endpoint} "'
        in inspect.getsource(cli)
    )
    assert ready.startswith("emulator ready grpc=")
    keys = re.findall(r"`(\w+)`", claim(text, r"the job as JSON \((.*?)\)\.")[1])
    out = job_output(
        {"name": "projects/p/locations/l/customJobs/1", "state": "JOB_STATE_FAILED"}, "https://c"
    )
    assert set(keys) <= set(out), keys
    pools = SEED_REDUCTION_SERVER.to_api(location="us-central1")["jobSpec"]["workerPoolSpecs"]
    assert "a primary and 4 workers with 8 V100 GPUs each, and 16 reducers" in text
    assert [p["replicaCount"] for p in pools] == [1, 4, 16]
    assert all(p["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_V100" for p in pools[:2])
    assert all(p["machineSpec"]["acceleratorCount"] == 8 for p in pools[:2])


# -- docs/concepts/pools.md ----------------------------------------------------------------------------
# Also backed by: the page's exec blocks (positions, {} placeholders, trailing pools, the errors),
# tests/specs (golden renders, the bad-spec table), tests/specs/test_error_messages.py.


def test_pools_roles_and_disk_defaults() -> None:
    from airflow_vertex_dist.specs import POOL_ROLES, Disk, DistributedTrainingJob

    text = page("concepts/pools.md")
    rows = re.findall(r"\| (\d) \| [^|]+ \| (`\w+`(?: / `\w+`)?) \|", text)
    assert [int(i) for i, _ in rows] == [0, 1, 2, 3]
    roles = [re.findall(r"`(\w+)`", fields) for _, fields in rows]
    assert roles == [["primary"], ["workers"], ["parameter_servers", "reduction_server"], ["evaluators"]]
    assert all(r in DistributedTrainingJob.model_fields for rs in roles for r in rs)
    assert list(POOL_ROLES)[:2] == ["primary", "workers"] and list(POOL_ROLES)[-1] == "evaluators"
    disk_type, size = claim(text, r"a `Disk` \(default `([\w-]+)`, (\d+) GB\)").groups()
    assert (Disk().boot_disk_type, Disk().boot_disk_size_gb) == (disk_type, int(size))


# -- docs/concepts/reduction-server.md -----------------------------------------------------------------
# Also backed by: the page's exec blocks (the seed sizing, the second example, the refusals),
# tests/specs/test_bad_specs.py (every rule listed), tests/specs (the bandwidth table, image per region).


def test_reduction_server_defaults_families_and_bandwidths() -> None:
    from airflow_vertex_dist.specs import ReductionServer, egress_gbps
    from airflow_vertex_dist.specs.machine import GPU_MACHINE_FAMILIES

    text = page("concepts/reduction-server.md")
    table = dict(re.findall(r"\| `(\w+)` \| ([^|]+?) \|", text))
    fields = ReductionServer.model_fields
    assert table["replica_count"] == f'`"{fields["replica_count"].default}"`'
    assert table["machine_type"] == f'`"{fields["machine_type"].default}"`'
    assert table["allow_undersized"] == f"`{fields['allow_undersized'].default}`"
    assert table["image_uri"] == "nearest multi-region image" and fields["image_uri"].default is None
    families = claim(text, r"\(attached, or an ([A-Z0-9/]+) machine type\)")[1].lower().split("/")
    assert sorted(f + "-" for f in families) == sorted(f for f in GPU_MACHINE_FAMILIES if f != "a4x-")
    assert "Such a machine has 100 Gbps of egress" in text
    assert egress_gbps("n1-highmem-96", "NVIDIA_TESLA_V100", 8) == 100
    assert "An `n1-highcpu-16` reducer has 32 Gbps" in text and egress_gbps("n1-highcpu-16") == 32
    assert "An `a2-megagpu-16g` (16 × A100) has 100 Gbps of egress" in text
    assert egress_gbps("a2-megagpu-16g", "NVIDIA_TESLA_A100", 16) == 100


# -- docs/concepts/replica-environment.md ---------------------------------------------------------------
# Backed by: the page's exec blocks (replica_env itself, at build), tests/emulator/test_cluster_env.py
# (TF_CONFIG without evaluators, one replica without TF_CONFIG, trial dirs, PyTorch variables, the
# Reduction Server not a parameter server), tests/emulator/test_runner.py (every variable as real
# replicas see it; the service's variables win over the pool's env; AIP_TENSORBOARD_RESOURCE_NAME).


# -- docs/concepts/specs.md ----------------------------------------------------------------------------
# Also backed by: the page's exec blocks (YAML and dict specs rendered, errors), tests/specs
# (golden renders, from_api, loading, the schema cache and its access rules), test_docs (the render
# command lines run).


def test_specs_durations_and_schema_cache_names() -> None:
    from datetime import timedelta

    from airflow_vertex_dist.specs import Scheduling, _schema_cache

    text = page("concepts/specs.md")
    assert (
        'accept a number of seconds, a `timedelta` or the proto JSON form `"7200s"`, and render as `"7200s"`'
        in text
    )
    for value in (7200, timedelta(hours=2), "7200s"):
        assert Scheduling(timeout=value).to_api()["timeout"] == "7200s"  # type: ignore[arg-type]
    assert "`AIRFLOW_VERTEX_DIST_SCHEMA_CACHE=off` turns it off" in text
    assert _schema_cache.ENV_VAR == "AIRFLOW_VERTEX_DIST_SCHEMA_CACHE"
    assert "one file, `spec-schemas-<key>.pickle`" in text
    assert _schema_cache._PREFIX == "spec-schemas-"


# -- docs/emulator.md ----------------------------------------------------------------------------------
# Also backed by: the page's exec blocks (run against a real emulator at build), tests/emulator (the
# API over gRPC and REST, states, replicas, packages, restarts, timeout, cancel, the web pages, faults,
# storage, logging), tests/security (origin, host, content type, token, every limit below measured).


def test_emulator_numbers() -> None:
    from airflow_vertex_dist.emulator import custom_job, filters, grpc_server, rest
    from airflow_vertex_dist.emulator.config import EmulatorConfig

    text = page("emulator.md")
    config = EmulatorConfig(state_dir=Path("s"), gcs_root=Path("g"))
    assert (
        int(claim(text, r"up to (\d+) times \(`EmulatorConfig\.restart_limit`\)")[1]) == config.restart_limit
    )
    assert float(claim(text, r"`EmulatorConfig\.stop_grace_s`, (\d+) s\)")[1]) == config.stop_grace_s
    assert claim(text, r"`scheduling\.timeout` \(default (\d+) days\)")[1] == str(
        int(custom_job.DEFAULT_TIMEOUT_S // 86400)
    )
    mib = int(claim(text, r"before it is read when over (\d+) MiB \(413\)")[1])
    assert mib * 1024 * 1024 == rest.MAX_BODY_BYTES
    json_depth, parens = claim(text, r"JSON may nest (\d+) levels and filter parentheses (\d+)").groups()
    assert (int(json_depth), int(parens)) == (rest.MAX_JSON_DEPTH, filters.MAX_DEPTH)
    grpc_mib = int(claim(text, r"a gRPC request over (\d+) MiB")[1])
    assert grpc_mib * 1024 * 1024 == grpc_server.MAX_MESSAGE_BYTES
    transport_mib = int(claim(text, r"past (\d+) MiB, gRPC itself refuses")[1])
    assert transport_mib * 1024 * 1024 == grpc_server._TRANSPORT_MAX_BYTES
    assert "(at least 16 characters;" in text
    from airflow_vertex_dist.emulator.config import check_exposure

    with pytest.raises(ValueError, match="at least 16 characters"):
        check_exposure("10.0.0.5", "x" * 15)
    check_exposure("10.0.0.5", "x" * 16)
    assert "without a token the emulator refuses to start" in text
    with pytest.raises(ValueError, match="access token is required"):
        check_exposure("10.0.0.5", None)


def test_emulator_logging_tuning_and_fault_numbers() -> None:
    import math

    from airflow_vertex_dist.emulator import cli, cluster, log_filter, logging_api, search, service, tuning
    from airflow_vertex_dist.emulator.config import Faults

    text = page("emulator.md")
    names = re.findall(
        r"`(\w+\*?)`", claim(text, r"copied from the emulator's environment when set: (.*?) \(`")[1]
    )
    assert "LC_*" in names and set(names) - {"LC_*"} == set(cluster.LOCAL_ENV_NAMES)
    assert cluster.local_env({"LC_ALL": "C", "SECRET": "x"}) == {"LC_ALL": "C", "PYTHONUNBUFFERED": "1"}
    size, most = claim(text, r"(\d+) a page by default and at most ([\d,]+), with page tokens").groups()
    assert (int(size), int(most.replace(",", ""))) == (
        logging_api.DEFAULT_PAGE_SIZE,
        logging_api.MAX_PAGE_SIZE,
    )
    chars = claim(text, r"A filter is at most ([\d,]+) characters")[1]
    assert int(chars.replace(",", "")) == log_filter.MAX_FILTER_CHARS
    assert float(claim(text, r"cloudml-hypertune files every ([\d.]+) s")[1]) == tuning.STOPPING_POLL_S
    assert "`min(maxTrialCount, max(3, ceil(maxTrialCount / 5)))`" in text
    for trials in (1, 2, 10, 14, 15, 16, 100):
        assert tuning.failed_trial_limit(0, trials) == min(trials, max(3, math.ceil(trials / 5)))
    assert "the first `max(2, parallelTrialCount)` trials are random" in text
    assert "self.n_init = max(2, parallel)" in inspect.getsource(search)
    assert "with probability 0.7, a perturbation" in text and "rng.random() < 0.7" in inspect.getsource(
        search
    )
    default, most = claim(text, r"`page_size` \(default (\d+), at most ([\d,]+)\)").groups()
    assert (int(default), int(most.replace(",", ""))) == (service.DEFAULT_PAGE_SIZE, service.MAX_PAGE_SIZE)
    assert int(claim(text, r"the exit code reported \(default (\d+)\)")[1]) == Faults().crash_exit_code
    parser = cli.build_parser()
    assert parser.parse_args([]).crash_exit_code == Faults().crash_exit_code
    assert "(default `UNAVAILABLE`)" in text and parser.parse_args([]).fault_codes == "UNAVAILABLE"


# -- pages whose statements other tests back as a whole --------------------------------------------------
# docs/how-to/mapped.md: tests/operators/test_mapped.py (expand and expand_kwargs, each instance its own
#   rendered spec, job, labels and XCom, a retry re-attaching to its own instance's job),
#   tests/e2e/test_per_segment.py (the example DAG, pick_best reading every instance's output).
# docs/reliability.md: generated from the stack suite's measured figures (scripts/stack/
#   write_reliability.py; tests/stack); docs/benchmarks.md: generated by make bench
#   (test_benchmarks_quick runs every section small).
# docs/reference/emulator.md, docs/reference/hooks.md, docs/reference/operators.md,
#   docs/reference/sensors.md, docs/reference/triggers.md: the modules' own docstrings, rendered by
#   mkdocstrings in the strict build (test_docs); docs/reference/specs.md: the field tables
#   test_reference_tables compares with the models.


# -- docs/architecture.md ------------------------------------------------------------------------------
# Also backed by: tests/test_architecture.py (the layers are .importlinter's contracts).


def test_architecture_names_tests_that_exist() -> None:
    """Each rule's "kept by" names test files and test functions: they exist."""
    text = page("architecture.md")
    cited = re.findall(r"`(tests/[\w/]+\.py)`(?: \(([^)]*)\))?", text)
    assert cited
    for path, names in cited:
        source = (ROOT / path).read_text()
        for name in re.findall(r"`(test_\w+)`", names):
            assert re.search(rf"^(?:async )?def {name}\(", source, re.M), f"{path} has no {name}"


def test_every_page_is_audited_here() -> None:
    """A new page (or the README) comes with its claims checked, or a line above naming its tests."""
    source = Path(__file__).read_text()
    pages = ["README.md", *(p.relative_to(DOCS).as_posix() for p in sorted(DOCS.rglob("*.md")))]
    missing = [
        p for p in pages if f"docs/{p}" not in source and f'page("{p}")' not in source and p not in source
    ]
    assert not missing, f"pages with no audit entry in {Path(__file__).name}: {missing}"
