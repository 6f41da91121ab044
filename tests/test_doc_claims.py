"""What the README and the how-to pages say, checked against the code: defaults, keys, ports, lists and
messages they state in prose (their code blocks are run by ``test_docs.py``). Each test reads the
sentence from the page, so an edit to either side that breaks the claim fails here. The other pages are
audited in ``test_doc_claims_reference.py``.

Audited pages and the tests that back their other statements are listed in each section.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re

import pytest

from tests.doc_pages import ROOT, claim, default_of, page

# -- README.md -----------------------------------------------------------------------------------------
# Also backed by: test_readme (the DAG renders 1 + 4 + 16 pools, the make targets, .ci/run),
# test_matrix_docs (the support matrix), test_parse_light (no google.cloud at parse), test_docs
# (the emulator flags), tests/e2e (every example DAG runs on the emulator).


def test_readme_ports_are_the_emulators_defaults() -> None:
    from vertex_emulator.cli import DEFAULT_GRPC_PORT, DEFAULT_REST_PORT

    text = page("README.md")
    found = claim(text, r"# gRPC on 127\.0\.0\.1:(\d+), REST and job pages on :(\d+)")
    assert (int(found[1]), int(found[2])) == (DEFAULT_GRPC_PORT, DEFAULT_REST_PORT)
    assert f'"api_endpoint": "127.0.0.1:{DEFAULT_GRPC_PORT}"' in text
    assert '"emulator": true' in text
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
    # the inner loop
    claim(text, r"`make check` runs ruff, the layer contracts, mypy and the\s+tests not marked `slow`")
    check_recipe = r"^check: lint typecheck\n\t.*-m pytest -m \"not slow and not stack\" -n \$\(XDIST\)"
    assert re.search(check_recipe, makefile, re.M)
    assert re.search(r"^XDIST \?= 4$", makefile, re.M) and "(`XDIST`, 4 by default;" in text
    assert re.search(r"^unit: .*\n\t.*-m pytest -m \"not stack\" -n \$\(XDIST\)", makefile, re.M)


# -- docs/how-to/connection.md --------------------------------------------------------------------------
# Also backed by: tests/hooks/test_credentials.py (each credential form, the regional endpoint),
# tests/hooks/test_connection.py (the bad-settings messages), tests/operators/test_connections.py
# (a google_cloud_platform connection as it is, the task's chain in the hook, the trigger and the
# listener), tests/hooks/test_vertex_jobs.py (the create-token label and the Create retry),
# tests/hooks/test_endpoint_tls.py (an endpoint override over TLS with the key and the quota project),
# tests/operators/test_saved_connections.py (connections saved by Airflow's CLI and REST API).


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
    from tests.hooks.google_form import FORM_FIELDS, REFUSED

    text = page("how-to/connection.md")
    read = re.findall(r"`(\w+)`", claim(text, r"Its extras (.*?) \(accepted, not used")[1])
    assert read[:3] == ["project", "key_path", "keyfile_dict"] and "num_retries" in read
    assert "quota_project_id" in read
    values = {"is_anonymous": False, "num_retries": 5, "key_path": "/k.json", "keyfile_dict": "{}"}
    for name in read:
        for key in (name, f"extra__google_cloud_platform__{name}"):
            VertexConnection.from_extra({key: values.get(name, "x@p.iam.gserviceaccount.com")})
    refused = re.findall(r"`(\w+)`", claim(text, r"A key in Secret Manager (.*?) are refused")[1])
    assert refused == list(REFUSED)
    for name in refused:
        with pytest.raises(ValueError, match=name):
            VertexConnection.from_extra({name: "x"})
        VertexConnection.from_extra({name: ""})  # "when set"
    # "every field its connection form saves": read or refused, none left out
    assert set(read) | set(refused) == set(FORM_FIELDS)
    assert "`airflow connections add --conn-type google_cloud_platform` warns" in text
    assert "stores the connection as `generic`" in text


def test_connection_endpoint_override_and_emulator() -> None:
    from airflow_vertex_dist.hooks.connection import VertexConnection

    text = page("how-to/connection.md")
    assert "It is reached over TLS with the connection's credentials" in text
    env = r"AIRFLOW_CONN_VERTEX_DIST_DEFAULT='(\{.*?\})'"
    example = json.loads(claim(text, rf"## A private endpoint .*?{env}")[1])
    conn = VertexConnection.from_extra(example["extra"])
    assert not conn.is_emulator and conn.quota_project_id and conn.logging_target
    plain = "A plain `http://` (or `grpc://`) endpoint cannot be TLS and is refused unless `emulator` is set"
    assert plain in text
    with pytest.raises(ValueError, match="is plain HTTP"):
        VertexConnection.from_extra({"api_endpoint": "http://10.0.0.5", "transport": "rest"})
    with pytest.raises(ValueError, match="is plain gRPC"):
        VertexConnection.from_extra({"api_endpoint": "grpc://10.0.0.5:8781"})
    with pytest.raises(ValueError, match='"emulator" is not set'):
        VertexConnection.from_extra({"api_endpoint": "127.0.0.1:8781"})
    assert VertexConnection.from_extra({"api_endpoint": "127.0.0.1:8781", "emulator": False}).api_endpoint
    emulator = json.loads(claim(text, rf"## The emulator .*?{env}")[1])
    assert VertexConnection.from_extra(emulator["extra"]).is_emulator


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
    from vertex_emulator import cli, packages

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
    conn = VertexConnection.from_extra({"api_endpoint": "127.0.0.1:8781", "emulator": True})
    assert conn.logging_endpoint is None and conn.logging_target == "127.0.0.1:8781"
    assert "does not move the logs: they come from Cloud Logging" in text
    assert VertexConnection.from_extra({"api_endpoint": "vertex.psc.internal"}).logging_target is None


def test_training_logs_a_stream_goes_on_strictly_after_its_cursor() -> None:
    """"A line whose timestamp is not after that cursor is never written": both streams (the
    trigger's subscription and the worker-slot ``LogStreamer``) take a line only when their
    ``LogCursor`` says it is after it, so a line made readable late is left out."""
    from airflow_vertex_dist.hooks.logs import LogLine
    from airflow_vertex_dist.operators.log_stream import LogStreamer
    from airflow_vertex_dist.triggers import log_poller
    from airflow_vertex_dist.triggers.log_poller import LogCursor

    text = page("how-to/training-logs.md")
    assert "a line whose timestamp is not after that cursor is never written" in text
    for taker in (log_poller._LogSubscription.offer, LogStreamer.poll):
        assert "if self.cursor.before(line)" in inspect.getsource(taker), taker

    def line(stamp: str, insert_id: str, replica: str) -> LogLine:
        return LogLine("1", replica, None, "INFO", stamp, insert_id, f"{replica} at {stamp}")

    newer = line("2026-01-01T00:00:02Z", "1.workerpool1-0.000000001", "workerpool1-0")
    cursor = LogCursor.of(newer)  # the newer line was read and written first
    assert not cursor.before(line("2026-01-01T00:00:01Z", "1.workerpool0-0.000000001", "workerpool0-0"))
    assert not cursor.before(newer)  # and it is not written twice
    assert cursor.before(line("2026-01-01T00:00:02.000001Z", "1.workerpool0-0.000000002", "workerpool0-0"))


def test_training_logs_settle_window() -> None:
    """The settle window's option, default and behaviour as the page states them (the window itself:
    tests/triggers/test_log_settle.py)."""
    from airflow_vertex_dist import get_provider_info
    from airflow_vertex_dist.triggers import log_poller

    text = page("how-to/training-logs.md")
    settle = float(claim(text, r"log_settle_seconds = ([\d.]+)")[1])
    assert settle == log_poller.DEFAULT_SETTLE_S
    option = get_provider_info.get_provider_info()["config"]["vertex_dist"]["options"]["log_settle_seconds"]
    assert float(option["default"]) == settle
    assert "holds entries back 2 s by default" in text and log_poller.DEFAULT_SETTLE_S == 2.0
    assert log_poller.settled_until(0) is None  # "0 streams at once"


# -- docs/how-to/index.md, docs/index.md ---------------------------------------------------------------
# Also backed by: test_docs (every Vertex* class named exists), test_parse_light and .importlinter (the
# specs import no Airflow or Google module).


def test_index_spec_names_are_in_the_specs_package() -> None:
    from airflow_vertex_dist import specs

    row = claim(page("index.md"), r"\| Specs \| (.*?) in `airflow_vertex_dist\.specs`")[1]
    names = re.findall(r"`(\w+)`", row)
    assert names and all(name in specs.__all__ for name in names), names
