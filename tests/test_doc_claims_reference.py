"""What the migration guide, the quickstart, the concept pages, the emulator page and the architecture
page say, checked against the code as ``test_doc_claims.py`` does for the README and the how-tos; and
the check that every page has an audit entry in one of the two.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from tests.doc_pages import DOCS, ROOT, claim, page

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
        "wait_for_completion",
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
    from airflow_vertex_dist.operators.outputs import job_output
    from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER
    from vertex_emulator import cli

    text = page("quickstart.md")
    makefile = (ROOT / "Makefile").read_text()
    assert "installs the project, the emulator and the dependency groups (test, examples, dev)" in text
    assert "-e . -e './emulator[hypertune]' --group test --group examples --group dev" in makefile
    assert "after pip installs the `examples` group's torch" in text
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
    from vertex_emulator import custom_job, filters, grpc_server, rest
    from vertex_emulator.config import EmulatorConfig

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
    from vertex_emulator.config import check_exposure

    with pytest.raises(ValueError, match="at least 16 characters"):
        check_exposure("10.0.0.5", "x" * 15)
    check_exposure("10.0.0.5", "x" * 16)
    assert "without a token the emulator refuses to start" in text
    with pytest.raises(ValueError, match="access token is required"):
        check_exposure("10.0.0.5", None)


def test_emulator_logging_tuning_and_fault_numbers() -> None:
    import math

    from vertex_emulator import cli, cluster, log_filter, logging_api, search, service, tuning
    from vertex_emulator.config import Faults

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
    here = Path(__file__).parent
    source = "".join(path.read_text() for path in sorted(here.glob("test_doc_claims*.py")))
    pages = ["README.md", *(p.relative_to(DOCS).as_posix() for p in sorted(DOCS.rglob("*.md")))]
    missing = [
        p for p in pages if f"docs/{p}" not in source and f'page("{p}")' not in source and p not in source
    ]
    assert not missing, f"pages with no audit entry in test_doc_claims*.py: {missing}"
