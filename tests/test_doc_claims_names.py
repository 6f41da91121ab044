"""Claims of the README and the docs that name code: the example DAGs, rules, Makefile stages, fields,
parameters, migration names and tests they name exist, as stated. The facts read from a page and compared
with a value of the code are in ``test_doc_claims.py``.
"""

from __future__ import annotations

import inspect
import json
import re

import pytest

from tests.doc_claim_readers import example_dag, makefile_captures, ticked
from tests.doc_pages import ROOT, claim, page

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
    assert makefile_captures(
        r"^test: .*\n\t.*\$\(MAKE\) .* (lint typecheck unit-all compat-install floors)\n"
    )
    assert makefile_captures(
        r"^test: .*\n.*\n\t.*\$\(MAKE\) .* COMPAT_PHASE=(test) compat (\$\(STACK_JOBS\));"
    )
    assert makefile_captures(r"^unit-all: .*\n\t.* (unit); .* (emulator-test);")
    assert makefile_captures(r"^compat-install: .*\n\t.* scripts/compat_cells\.py --phase (install) ")
    assert makefile_captures(r"^STACK_JOBS +:= (stack-local stack-local-2 stack-celery stack-ui)$")
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
    assert makefile_captures(r"^lint: .*\n\t\$\(VENV\)/bin/(ruff) check \.")
    assert makefile_captures(r"^typecheck: .*\n\t\$\(VENV\)/bin/(mypy)$")


def test_connection_google_extras_read_and_refused() -> None:
    """The extras the page lists as read are accepted, those it lists as refused are refused by name when
    set, and together they are every field of the Google provider's connection form."""
    from airflow_vertex_dist.hooks.connection import VertexConnection
    from tests.hooks.google_form import FORM_FIELDS, REFUSED

    text = page("how-to/connection.md")
    read = ticked(claim(text, r"Its extras (.*?) \(accepted, not used")[1])
    values = {"is_anonymous": False, "num_retries": 5, "key_path": "/k.json", "keyfile_dict": "{}"}
    for name in read:
        for key in (name, f"extra__google_cloud_platform__{name}"):
            VertexConnection.from_extra({key: values.get(name, "x@p.iam.gserviceaccount.com")})
    refused = ticked(claim(text, r"A key in Secret Manager (.*?) are refused")[1])
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
    backfill_tuning = example_dag("backfill_tuning")
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

    prep_to_train = example_dag("prep_to_train")
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

    names = ticked(claim(page("index.md"), r"\| Specs \| (.*?) in `airflow_vertex_dist\.specs`")[1])
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
    roles = [ticked(fields) for _, fields in rows]
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
        names = ticked(claim(text, cell)[1])
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
