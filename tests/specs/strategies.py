"""Hypothesis strategies of training-job and tuning-job dicts for the property test (`test_property.py`)
and the spec fuzzer (`tests/fuzz/test_spec_fuzz.py`). They mostly draw plausible values (real machine
types, GPU counts, pool layouts) so that a good share of examples is valid, and mix in junk at every
level when ``clean`` is false."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = [
    "CPU_MACHINES",
    "ENV",
    "FLOATS",
    "GPU_MACHINES",
    "JSON",
    "NAMES",
    "RS_IMAGE",
    "container",
    "durations",
    "jobs",
    "machines",
    "optional",
    "package",
    "parameters",
    "pick",
    "pools",
    "sometimes_junk",
    "tunings",
]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def sometimes_junk(good: st.SearchStrategy[Any], clean: bool) -> st.SearchStrategy[Any]:
    """``good`` in a clean draw; otherwise mostly ``good``, now and then any JSON value."""
    return good if clean else st.one_of(good, good, good, good, JSON)


def pick(clean: bool, good: list[Any], bad: list[Any]) -> st.SearchStrategy[Any]:
    return st.sampled_from(good if clean else good + bad)


def optional(fields: dict[str, st.SearchStrategy[Any]], clean: bool) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={k: sometimes_junk(v, clean) for k, v in fields.items()})


NAMES = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)
# an env var's value is required (EnvVar.value, "Required."): proto3 cannot tell "" from unset
ENV = st.dictionaries(
    st.from_regex(r"[A-Z_][A-Z0-9_]{0,5}", fullmatch=True), st.text(min_size=1, max_size=6), max_size=3
)
GPU_MACHINES = [
    {"machine_type": "n1-highmem-96", "accelerator_type": "NVIDIA_TESLA_V100", "accelerator_count": 8},
    {"machine_type": "n1-standard-16", "accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": 4},
    {"machine_type": "a2-megagpu-16g", "accelerator_type": "NVIDIA_TESLA_A100", "accelerator_count": 16},
    {"machine_type": "g2-standard-8", "accelerator_type": "NVIDIA_L4", "accelerator_count": 1},
]
CPU_MACHINES = [
    {"machine_type": t} for t in ("n1-standard-4", "e2-standard-8", "n2-highcpu-32", "c2-standard-8")
]
RS_IMAGE = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"


def machines(clean: bool, gpu: bool) -> st.SearchStrategy[Any]:
    if clean:
        return st.sampled_from(GPU_MACHINES if gpu else GPU_MACHINES + CPU_MACHINES)
    return st.one_of(
        st.sampled_from(GPU_MACHINES + CPU_MACHINES),
        st.fixed_dictionaries(
            {"machine_type": st.sampled_from(["n1-standard-4", "cloud-tpu", "ct5lp-hightpu-4t", "BAD"])},
            optional={
                "accelerator_type": st.sampled_from(["NVIDIA_TESLA_T4", "TPU_V3", "NVIDIA_L4", "NOPE"]),
                "accelerator_count": st.integers(-1, 17),
                "tpu_topology": st.sampled_from(["2x2", "2x2x1", "big"]),
                "gpu_partition_size": st.sampled_from(["1g.5gb", "x"]),
                "reservation_affinity": st.fixed_dictionaries(
                    {
                        "reservation_affinity_type": st.sampled_from(
                            ["NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION"]
                        )
                    },
                    optional={
                        "key": st.text(max_size=5),
                        "values": st.lists(st.text(max_size=5), max_size=2),
                    },
                ),
            },
        ),
        JSON,
    )


def container(clean: bool) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {"image_uri": pick(clean, ["example.com/ml/trainer:1.0", "trainer"], ["", RS_IMAGE])},
        optional={
            "command": st.lists(st.text(max_size=5), max_size=2),
            "args": st.lists(st.text(max_size=8), max_size=3),
            "env": ENV if clean else sometimes_junk(ENV, clean),
        },
    )


def package(clean: bool) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {
            "executor_image_uri": pick(
                clean,
                ["us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"],
                ["", "example.com/ml/x:2"],
            ),
            "package_uris": st.lists(
                pick(clean, ["gs://b/t.tar.gz", "gs://b/pkg.whl"], ["", "pkg.whl"]), min_size=1, max_size=2
            ),
            "python_module": pick(clean, ["trainer.task", "task"], ["bad-module"]),
        },
        optional={"args": st.lists(st.text(max_size=5), max_size=2), "env": ENV},
    )


def durations(clean: bool) -> st.SearchStrategy[Any]:
    good = st.one_of(
        st.integers(1, 10**6).map(lambda s: f"{s}s"), st.floats(0.5, 1e6), st.sampled_from(["PT1H", "1.5s"])
    )
    return good if clean else st.one_of(good, st.integers(-10, 0).map(lambda s: f"{s}s"), st.just("soon"))


@st.composite
def pools(draw: st.DrawFn, clean: bool, gpu: bool = False, single: bool = False) -> Any:
    task = draw(pick(clean, ["container", "container", "package"], ["both", "none"]))
    data: dict[str, Any] = {"machine": draw(machines(clean, gpu))}
    if draw(st.booleans()):
        data["replica_count"] = 1 if single and clean else draw(st.integers(1 if clean else 0, 6))
    if task in ("container", "both"):
        data["container"] = draw(container(clean))
    if task in ("package", "both"):
        data["python_package"] = draw(package(clean))
    disk = st.fixed_dictionaries(
        {},
        optional={
            "boot_disk_type": pick(clean, ["pd-ssd", "pd-standard"], ["pd-fast"]),
            "boot_disk_size_gb": st.integers(100, 64000) if clean else st.integers(50, 70000),
        },
    )
    mounts = st.lists(
        st.fixed_dictionaries(
            {
                "server": pick(clean, ["10.0.0.2"], [""]),
                "path": pick(clean, ["/x"], ["x"]),
                "mount_point": NAMES,
            }
        ),
        max_size=2,
    )
    data.update(draw(optional({"disk": disk, "nfs_mounts": mounts}, clean)))
    return data


@st.composite
def jobs(draw: st.DrawFn, clean: bool | None = None) -> Any:
    if clean is None:
        clean = draw(st.booleans())
    layout = draw(
        st.sampled_from(
            ["workers", "workers+rs", "rs", "ps", "ev", "all", "none"] + ([] if clean else ["ps+rs"])
        )
    )
    gpu = "rs" in layout or layout == "all"
    data: dict[str, Any] = {
        "display_name": draw(
            st.text(min_size=1, max_size=12).filter(str.strip) if clean else st.text(max_size=12)
        ),
        "primary": draw(sometimes_junk(pools(clean, gpu=gpu, single=True), clean)),
    }
    if "workers" in layout or layout == "all":
        data["workers"] = draw(pools(clean, gpu=gpu))
    if gpu:
        reducers = {
            "replica_count": st.one_of(st.just("auto"), st.integers(1, 40)) if clean else st.integers(-1, 40),
            "machine_type": pick(clean, ["n1-highcpu-16", "n2-highcpu-32"], ["a2-highgpu-1g", "z9-custom-2"]),
            "allow_undersized": st.booleans() if not clean else st.just(True),
            "image_uri": pick(
                clean,
                ["europe-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"],
                ["example.com/ml/trainer:1.0"],
            ),
        }
        if not clean:
            reducers["accelerator_type"] = st.just("NVIDIA_TESLA_T4")
        data["reduction_server"] = draw(optional(reducers, clean))
    if "ps" in layout:
        data["parameter_servers"] = draw(pools(clean))
    if layout in ("ev", "all"):
        data["evaluators"] = draw(pools(clean))
    flex = draw(st.booleans())
    scheduling = {
        "timeout": durations(clean),
        "restart_job_on_worker_restart": st.booleans(),
        "strategy": pick(clean, ["FLEX_START"] if flex else ["STANDARD", "SPOT"], ["LOW_COST"]),
        "disable_retries": st.booleans(),
    }
    if flex or not clean:
        scheduling["max_wait_duration"] = durations(clean)
    labels = (
        st.dictionaries(NAMES, NAMES, max_size=3)
        if clean
        else st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3)
    )
    network = draw(st.booleans())
    fields = {
        "location": pick(clean, ["us-central1", "europe-west4", "asia-east1"], ["Mars 1"]),
        "scheduling": optional(scheduling, clean),
        "labels": labels,
        "service_account": pick(clean, ["sa@p.iam.gserviceaccount.com"], ["sa"]),
        "base_output_directory": pick(clean, ["gs://b/o"], ["/tmp/o"]),
        "enable_web_access": st.booleans(),
        "enable_dashboard_access": st.booleans(),
        "persistent_resource_id": NAMES.filter(lambda n: n[-1] not in "_-" and "_" not in n),
        "encryption_key": pick(clean, ["projects/p/locations/l/keyRings/r/cryptoKeys/k"], ["key"]),
        "psc_interface_config": st.fixed_dictionaries(
            {}, optional={"network_attachment": pick(clean, ["na"], [""])}
        ),
    }
    if network or not clean:
        fields["network"] = pick(clean, ["projects/1/global/networks/n"], ["n"])
        fields["reserved_ip_ranges"] = st.lists(
            st.from_regex(r"[a-z][a-z0-9-]{0,8}[a-z0-9]", fullmatch=True), max_size=2
        )
    data.update(draw(optional(fields, clean)))
    return data


FLOATS = st.floats(-10, 10, allow_nan=False)


@st.composite
def parameters(draw: st.DrawFn, clean: bool, depth: int = 0, grid: bool = False) -> Any:
    kinds = ["integer", "categorical", "discrete"] + ([] if grid and clean else ["double"])
    kind = draw(st.sampled_from(kinds))
    data: dict[str, Any] = {"type": kind, "parameter_id": draw(NAMES)}
    scale_low: float = 0
    if kind == "double":
        low = draw(FLOATS)
        high = draw(st.floats(low + 0.01, 20) if clean else FLOATS)
        data.update(min_value=low, max_value=high)
        scale_low = low
    elif kind == "integer":
        low = draw(st.integers(-5, 20))
        data.update(min_value=low, max_value=draw(st.integers(low + 1, 40) if clean else st.integers(-5, 40)))
        scale_low = low
    elif kind == "categorical":
        values = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4, unique=clean)
        data["values"] = draw(values)
    else:
        spaced = st.lists(st.integers(-20, 20), min_size=1, max_size=5, unique=True).map(
            lambda v: sorted(x / 2 for x in v)
        )
        data["values"] = draw(spaced if clean else st.lists(FLOATS, max_size=5))
        scale_low = data["values"][0] if data["values"] else 0
    if kind != "categorical" and draw(st.booleans()):
        data["scale_type"] = draw(
            st.sampled_from(["LINEAR", "LOG", "REVERSE_LOG"] if scale_low > 0 or not clean else ["LINEAR"])
        )
    values = data.get("values") or (
        list(range(data["min_value"], data["max_value"] + 1)) if kind == "integer" else []
    )
    if depth < 2 and kind != "double" and values and draw(st.integers(0, 2)) == 0:
        children = []
        used: set[Any] = set()
        for i in range(draw(st.integers(1, 2))):
            parent_values = draw(st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True))
            if clean and used & set(parent_values):
                continue
            used |= set(parent_values)
            child = draw(parameters(clean, depth + 1, grid))
            if clean:
                child["parameter_id"] = f"{data['parameter_id']}_c{depth}{i}"
            children.append({"parent_values": parent_values, "parameter": child})
        data["conditional_parameters"] = children
    return data


@st.composite
def tunings(draw: st.DrawFn) -> Any:
    clean = draw(st.booleans())
    grid = draw(st.booleans())
    metrics = st.lists(
        st.fixed_dictionaries({"metric_id": NAMES, "goal": pick(clean, ["MAXIMIZE", "MINIMIZE"], ["UP"])}),
        min_size=1 if clean else 0,
        max_size=2,
        unique_by=(lambda m: m["metric_id"]) if clean else None,
    )
    params = draw(
        st.lists(sometimes_junk(parameters(clean, grid=grid), clean), min_size=1 if clean else 0, max_size=3)
    )
    if clean:
        for i, p in enumerate(params):
            p["parameter_id"] = f"p{i}"
    study: dict[str, Any] = {"metrics": draw(metrics), "parameters": params}
    if grid:
        study["algorithm"] = "GRID_SEARCH"
    stopping = {
        "measurement_selection_type": st.sampled_from(["LAST_MEASUREMENT", "BEST_MEASUREMENT"]),
        "convex_automated_stopping": st.fixed_dictionaries(
            {},
            optional={
                "max_step_count": st.integers(50, 100),
                "min_step_count": st.integers(0, 50),
                "update_all_stopped_trials": st.booleans(),
                "learning_rate_parameter_name": pick(clean, ["lr"], [""]),
            },
        ),
    }
    if not clean or draw(st.booleans()):
        stopping["median_automated_stopping"] = st.fixed_dictionaries(
            {}, optional={"use_elapsed_duration": st.booleans()}
        )
        if clean:
            del stopping["convex_automated_stopping"]
    study.update(draw(optional(stopping, clean)))
    trial_job = draw(jobs(clean))
    if clean:
        trial_job.pop("labels", None)
        trial_job.pop("encryption_key", None)
        trial_job.pop("location", None)
    max_trials = draw(st.integers(1 if clean else 0, 20))
    data: dict[str, Any] = {"trial_job": trial_job, "study": study, "max_trial_count": max_trials}
    data.update(
        draw(
            optional(
                {
                    "display_name": st.text(min_size=1, max_size=8).filter(str.strip),
                    "parallel_trial_count": st.integers(1, max_trials) if clean else st.integers(0, 20),
                    "max_failed_trial_count": (
                        st.integers(0, min(5, max_trials)) if clean else st.integers(-1, 5)
                    ),
                    "labels": st.dictionaries(NAMES, NAMES, max_size=2),
                    "location": st.sampled_from(["us-central1", "europe-west4"]),
                },
                clean,
            )
        )
    )
    return data


#: The share of drawn jobs that must be valid, for the round trip to be exercised. Hypothesis also draws
#: constants it finds in the project's modules that are loaded (its "local constants"), so the share
#: moves with what else the test process imported (0.47 alone, 0.19 once the emulator's modules are
#: loaded): the floor is set well below both.
