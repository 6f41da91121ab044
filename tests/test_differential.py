"""Differential test: one corpus of v1 Create bodies (``differential_corpus``) through the provider's specs
(``DistributedTrainingJob.from_api`` / ``HyperparameterTuningJob.from_api``) and through the emulator's
own rules (``vertex_emulator.rules.check_create`` plus the ``gs://`` check the service runs), which are
written from Google's documentation and the v1 protos and import nothing of the provider.

Every disagreement fails the test unless ``KNOWN_DIFFERENCES`` lists it with its reason, and a listed
difference that no longer happens fails too (so the table stays true). Hand-written rows also carry the
verdict the documentation gives, which the emulator must give. A sample goes through a running emulator
and the stock ``JobServiceClient``, to show Create answers with these rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.differential_corpus import CORPUS, HAND_CASES, NO_V1_FORM, Case, table_cases

#: case id -> (provider verdict, emulator verdict, why they differ and who is right per Google's docs).
KNOWN_DIFFERENCES: dict[str, tuple[str, str, str]] = {
    "table:rs-args": (
        "bad",
        "ok",
        "The provider refuses command, args or env on the Reduction Server pool (Google's image takes "
        "none and the 'Distributed training' page passes none); no Google page says the service refuses "
        "them, so the emulator accepts them. Provider stricter by choice; not verified against the "
        "service.",
    ),
    "table:image-empty": (
        "bad",
        "ok",
        "The provider refuses an image URI of spaces; the v1 reference only marks image_uri Required (an "
        "empty one is refused by both). Whether the service refuses ' ' at Create or fails pulling it "
        "could not be verified offline.",
    ),
    "table:output-not-gcs": (
        "bad",
        "ok",
        "An emulator extension, by design: a base_output_directory that is not gs:// is a local directory "
        "(docs/emulator.md). Vertex AI's GcsDestination takes Cloud Storage URIs only, as the provider "
        "checks.",
    ),
    "table:experiment-run-alone": (
        "bad",
        "ok",
        "The provider refuses experiment_run without experiment (a run belongs to an experiment); the v1 "
        "CustomJobSpec comments give each a format but do not say a run alone is refused. Provider "
        "stricter; not verified against the service.",
    ),
    "good-display-name-spaces": (
        "bad",
        "ok",
        "The provider refuses a display name of white space only (a guard against a templated name that "
        "rendered empty); the v1 display_name comment allows 'any UTF-8 characters', so the emulator "
        "takes it.",
    ),
    "bad-env-apostrophe": (
        "ok",
        "bad",
        "The emulator applies the service's answer quoted in PrefectHQ/prefect issue 5940 ('Env vars "
        "cannot contain any unescaped apostrophe character'); no Google page states the rule, so the "
        "provider, which follows the documentation, does not refuse it.",
    ),
    "bad-nul-in-args": (
        "ok",
        "bad",
        "The emulator refuses a NUL character in what becomes a replica's command line or environment (a "
        "process cannot receive one: POSIX execve); Vertex AI's answer is not documented, so the provider, "
        "which follows the documentation, does not refuse it.",
    ),
}


def _message(case: Case) -> Any:
    from google.cloud import aiplatform_v1

    resource = "CustomJob" if case.kind == "customJobs" else "HyperparameterTuningJob"
    return getattr(aiplatform_v1, resource).from_json(json.dumps(case.body))


def provider_verdict(case: Case) -> tuple[str, str]:
    """("ok" | "bad", the first rule): the body as the proto JSON the wire carries, read by ``from_api``."""
    from google.protobuf import json_format
    from pydantic import ValidationError

    from airflow_vertex_dist.specs import DistributedTrainingJob, HyperparameterTuningJob, error_lines

    message = _message(case)
    wire = json_format.MessageToDict(type(message).pb(message))
    model: Any = DistributedTrainingJob if case.kind == "customJobs" else HyperparameterTuningJob
    try:
        model.from_api(wire, location=case.location)
    except ValidationError as exc:
        return "bad", (error_lines(exc) or [str(exc)])[0]
    except ValueError as exc:
        return "bad", str(exc)
    return "ok", ""


def emulator_verdict(case: Case) -> tuple[str, str]:
    """("ok" | "bad", the problems): what the emulator's Create checks say, no server needed."""
    from vertex_emulator.core.gcs import check_request_uris
    from vertex_emulator.jobservice.service import job_from_proto
    from vertex_emulator.rules import check_create

    message = _message(case)
    problems = check_create(case.kind, message, case.location)
    try:
        check_request_uris(job_from_proto(case.kind, message))
    except ValueError as exc:
        problems.append(str(exc))
    return ("bad" if problems else "ok"), "; ".join(problems)


def test_every_table_row_is_in_the_corpus_or_says_why_not() -> None:
    cases, skipped = table_cases()
    assert {k.removeprefix("table:") for k in skipped} == set(NO_V1_FORM), skipped
    assert len(cases) >= 60
    ids = [c.case_id for c in CORPUS]
    assert len(ids) == len(set(ids))


def test_known_differences_name_corpus_rows() -> None:
    ids = {c.case_id for c in CORPUS}
    assert set(KNOWN_DIFFERENCES) <= ids, set(KNOWN_DIFFERENCES) - ids
    for case_id, (provider, emulator, why) in KNOWN_DIFFERENCES.items():
        assert {provider, emulator} == {"ok", "bad"} and len(why) > 40, case_id


def test_provider_and_emulator_agree_on_the_corpus() -> None:
    problems = []
    for case in CORPUS:
        provider, provider_why = provider_verdict(case)
        emulator, emulator_why = emulator_verdict(case)
        known = KNOWN_DIFFERENCES.get(case.case_id)
        if known is not None:
            if (provider, emulator) != known[:2]:
                problems.append(
                    f"{case.case_id}: listed as provider {known[0]} / emulator {known[1]}, now provider "
                    f"{provider} / emulator {emulator}: update KNOWN_DIFFERENCES"
                )
        elif provider != emulator:
            problems.append(
                f"{case.case_id}: provider {provider} ({provider_why or '-'}) / emulator {emulator} "
                f"({emulator_why or '-'})"
            )
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems)


@pytest.mark.parametrize("case", HAND_CASES, ids=[c.case_id for c in HAND_CASES])
def test_the_emulator_gives_the_documented_verdict(case: Case) -> None:
    verdict, why = emulator_verdict(case)
    assert verdict == case.expect, why
    assert case.case_id.startswith(f"{'good' if case.expect == 'ok' else 'bad'}-")


# -- the same rules through a running emulator and the stock client ----------------------------------

_WIRED = [
    "good-seed-reduction-server",
    "good-flex-start-a100",
    "good-study-int-one-value",
    "bad-flex-cpu",
    "bad-executor-docker-hub",
    "bad-package-uri-local",
    "bad-nul-in-args",
    "bad-study-safety-only",
    "bad-kms-other-region",
    "good-tpu-v6e-single-host",
    "bad-tpu-v6e-topology",
    "bad-tpu-v6e-accelerator",
    "good-tpu7x",
    "bad-tpu-v2-count",
    "bad-tpu-two-pools",
    "good-g4",
]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from vertex_emulator import testing
    from vertex_emulator.core.config import Faults

    # jobs stay QUEUED: this is about what Create accepts, not about running the replicas
    with testing.running_emulator(
        tmp_path_factory.mktemp("differential"), faults=Faults(queued_s=3600)
    ) as em:
        stock = testing.grpc_client(em)
        try:
            yield stock
        finally:
            stock.transport.close()


@pytest.mark.parametrize("case_id", _WIRED)
def test_create_through_the_stock_client_answers_as_the_rules_do(client: Any, case_id: str) -> None:
    from google.api_core import exceptions

    case = next(c for c in CORPUS if c.case_id == case_id)
    parent = f"projects/differential/locations/{case.location}"
    verdict, why = emulator_verdict(case)
    message = _message(case)
    create = (
        client.create_custom_job if case.kind == "customJobs" else client.create_hyperparameter_tuning_job
    )
    field = "custom_job" if case.kind == "customJobs" else "hyperparameter_tuning_job"
    if verdict == "ok":
        job = create(parent=parent, **{field: message})
        assert job.name.startswith(parent + "/")
        return
    with pytest.raises(exceptions.InvalidArgument) as info:
        create(parent=parent, **{field: message})
    text = str(info.value.message)
    assert text.startswith("List of found errors:\t1.Field: "), text
    first = why.split("; ")[0].split(": ", 1)[0]
    assert f"Field: {first}; Message: " in text, (text, why)


def test_the_emulator_page_lists_every_known_difference() -> None:
    """docs/emulator.md's table of disagreements is this test's table: a listed difference missing from
    the page, or one the page lists that is gone, fails."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "emulator.md").read_text()
    heading = "**Where the emulator and the provider's specs disagree.**"
    table = page.split(heading, 1)[1].split("\n\n##", 1)[0]
    rows = {row.split("|")[1].strip().strip("`"): row for row in table.splitlines() if row.startswith("| `")}
    assert set(rows) == set(KNOWN_DIFFERENCES)
    verdict = {"bad": "refuses", "ok": "accepts"}
    for case, (provider, emulator, _why) in KNOWN_DIFFERENCES.items():
        cells = [cell.strip() for cell in rows[case].split("|")[1:-1]]
        assert cells[1:3] == [verdict[provider], verdict[emulator]], case
