"""docs/reference/specs.md carries the spec models' field tables as written by
scripts/spec_fields_md.py, and docs/how-to/outputs.md the XCom value tables as written by
scripts/outputs_md.py from the TypedDicts, and docs/emulator.md the emulator's bounds on one request as
written by scripts/emulator_bounds_md.py from its constants: readable in the repository, and never
behind the code."""

from __future__ import annotations

from pathlib import Path

from tests.script_files import SCRIPTS, load_script

SCRIPT = SCRIPTS / "spec_fields_md.py"


def test_the_committed_tables_are_what_the_script_writes() -> None:
    script = load_script(SCRIPT)
    page = script.PAGE.read_text()  # type: ignore[attr-defined]
    assert script.updated(page) == page, "run: python scripts/spec_fields_md.py"  # type: ignore[attr-defined]


def test_every_spec_model_field_is_in_a_table() -> None:
    from airflow_vertex_dist import specs
    from airflow_vertex_dist.specs._base import SpecModel

    page = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "specs.md").read_text()
    models = [
        name
        for name in specs.__all__
        if isinstance(getattr(specs, name), type) and issubclass(getattr(specs, name), SpecModel)
    ]
    for name in models:
        assert f"### `{name}`" in page, name
        for field in getattr(specs, name).model_fields:
            assert f"| `{field}` |" in page, f"{name}.{field}"


def test_the_committed_xcom_tables_are_what_the_script_writes() -> None:
    script = load_script(SCRIPTS / "outputs_md.py")
    page = script.PAGE.read_text()  # type: ignore[attr-defined]
    assert script.updated(page) == page, "run: python scripts/outputs_md.py"  # type: ignore[attr-defined]


def test_the_xcom_values_have_the_keys_of_their_types() -> None:
    """What job_output and tuning_output return at run time has exactly the documented keys."""
    from airflow_vertex_dist.jobs.output_types import JobOutput, TuningOutput
    from airflow_vertex_dist.jobs.outputs import job_output, tuning_output
    from airflow_vertex_dist.jobs.trials import BestTrial, TrialCounts, TrialRow

    name = "projects/p/locations/us-central1/hyperparameterTuningJobs/4"
    study = {
        "name": name,
        "state": "JOB_STATE_FAILED",
        "error": {"code": 9, "message": "boom"},
        "studySpec": {"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}]},
        "trials": [
            {
                "id": "1",
                "state": "SUCCEEDED",
                "parameters": [{"parameterId": "lr", "value": 0.1}],
                "finalMeasurement": {"metrics": [{"metricId": "loss", "value": 0.3}]},
            },
            {"id": "2", "state": "INFEASIBLE", "infeasibleReason": "nan"},
        ],
    }
    out = tuning_output(study, "https://console")
    assert set(job_output(study, "https://console")) == JobOutput.__required_keys__
    assert set(out) == TuningOutput.__required_keys__
    assert set(out["error"] or {}) == {"code", "message"}
    assert set(out["trial_counts"]) == TrialCounts.__required_keys__
    assert set(out["best_trial"] or {}) == BestTrial.__required_keys__
    assert out["best_trial"] is not None and out["best_trial"]["goal"] == "MINIMIZE"
    every = TrialRow.__required_keys__ | TrialRow.__optional_keys__
    for row in out["trials"]:
        assert TrialRow.__required_keys__ <= set(row) <= every
    assert "infeasible_reason" in out["trials"][1]


def test_the_owner_record_has_the_keys_of_its_type() -> None:
    from airflow_vertex_dist.links import OwnedJob, OwnerRecord

    record = OwnedJob("projects/p/locations/l/customJobs/1", "c", ("a@p.iam.gserviceaccount.com",)).record()
    assert set(record) == OwnerRecord.__required_keys__
    assert OwnedJob.from_record(record) == OwnedJob(record["name"], "c", ("a@p.iam.gserviceaccount.com",))


def test_the_committed_emulator_bounds_are_what_the_script_writes() -> None:
    """docs/emulator.md's table of the emulator's bounds on one request, each read from its constant."""
    script = load_script(SCRIPTS / "emulator_bounds_md.py")
    page = script.PAGE.read_text()  # type: ignore[attr-defined]
    assert script.updated(page) == page, "run: python scripts/emulator_bounds_md.py"  # type: ignore[attr-defined]


def test_the_committed_scenario_tables_are_what_the_script_writes() -> None:
    script = load_script(SCRIPTS / "scenario_md.py")
    page = script.PAGE.read_text()  # type: ignore[attr-defined]
    assert script.updated(page) == page, "run: python scripts/scenario_md.py"  # type: ignore[attr-defined]


def test_every_scenario_field_says_what_it_means() -> None:
    """The reference writes each field's meaning from the model: a field added without one fails here."""
    from vertex_emulator.scenario.loader import scenario_schema

    schema = scenario_schema()
    objects = {"Scenario": schema, **schema["$defs"]}
    unexplained = [
        f"{name}.{field}"
        for name, node in objects.items()
        for field, prop in node["properties"].items()
        if not prop.get("description")
    ]
    assert unexplained == []
    script = load_script(SCRIPTS / "scenario_md.py")
    assert set(objects) == set(script.ORDER)  # type: ignore[attr-defined]
