"""How the doc-claim tests (`test_doc_claims.py`, `test_doc_claims_names.py`) read the code's side of a
claim: a captured text as a value, an object of the code by its "module:attribute" name, what the Makefile,
pyproject.toml, the CLI and the example DAGs hold; and the names the claim table uses.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.doc_pages import ROOT, default_of

__all__ = [
    "EGRESS",
    "EM",
    "LOGS",
    "ONE_PARAMETER",
    "OP",
    "PARALLEL",
    "POLLER",
    "RS",
    "SENSOR",
    "STUDY",
    "TRIALS",
    "agreed",
    "as_number",
    "cli_default",
    "code_at",
    "conn_id_defaults",
    "emulator_config",
    "evaluated_at",
    "example_dag",
    "gpu_families",
    "label_keys",
    "makefile_captures",
    "option_default",
    "quoted_texts",
    "rendered_timeouts",
    "seed_layout",
    "shortest_token",
    "source_captures",
    "study_tuning_output",
    "taken_default",
    "taking",
    "ticked",
    "torch_group",
    "transient_grpc_codes",
]


def as_number(text: str) -> Any:
    """A captured figure as the code holds it: "1,000" -> 1000, "2.5" -> 2.5; other text as it is."""
    plain = text.replace(",", "")
    if re.fullmatch(r"\d+", plain):
        return int(plain)
    if re.fullmatch(r"\d+\.\d+", plain):
        return float(plain)
    return text


def ticked(text: str) -> list[str]:
    """The `names` of a captured list, in order."""
    return re.findall(r"`([^`]+)`", text)


def quoted_texts(text: str) -> list[str]:
    return re.findall(r'"(\w+)"', text)


def code_at(path: str) -> Any:
    """``"module:attr.attr"``: that object of the code."""
    module, _, attrs = path.partition(":")
    obj: Any = importlib.import_module(module)
    for attr in attrs.split(".") if attrs else ():
        obj = getattr(obj, attr)
    return obj


def agreed(values: Any) -> Any:
    """The value every place in the code agrees on (a set of two or more never equals a stated one)."""
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else distinct


def taking(owner: str, name: str) -> Any:
    """The class of ``owner``'s hierarchy whose ``__init__`` takes parameter ``name``."""
    return next(c for c in code_at(owner).__mro__ if name in inspect.signature(c.__init__).parameters)


def taken_default(owner: str, name: str) -> Any:
    return default_of(taking(owner, name).__init__, name)


def makefile_captures(pattern: str) -> tuple[str, ...]:
    found = re.search(pattern, (ROOT / "Makefile").read_text(), re.M)
    assert found is not None, pattern
    return found.groups()


def option_default(name: str) -> str:
    info = code_at("airflow_vertex_dist.get_provider_info:get_provider_info")()
    return str(info["config"]["vertex_dist"]["options"][name]["default"])


def example_dag(name: str) -> Any:
    """A module of ``dags/``, imported as Airflow's DAG processor imports it (its folder on the path)."""
    folder = str(ROOT / "dags")
    sys.path.insert(0, folder)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(folder)


def conn_id_defaults() -> set[str]:
    owners = [
        "airflow_vertex_dist.hooks.vertex_jobs:VertexJobsHook",
        "airflow_vertex_dist.hooks.vertex_jobs:VertexJobsAsyncHook",
        "airflow_vertex_dist.operators.base:VertexBaseOperator",
        *(
            f"airflow_vertex_dist.sensors:{name}"
            for name in ("VertexJobSensor", "VertexReplicaSensor", "VertexTrialSensor")
        ),
    ]
    return {taken_default(owner, "vertex_dist_conn_id") for owner in owners}


def shortest_token() -> int:
    """The shortest access token the emulator accepts on a non-loopback host."""
    check_exposure = code_at("vertex_emulator.core.config:check_exposure")
    for length in range(1, 257):
        try:
            check_exposure("10.0.0.5", "x" * length)
        except ValueError:
            continue
        return length
    return 0


def transient_grpc_codes() -> list[str]:
    import grpc
    from google.api_core import exceptions

    is_transient = code_at("airflow_vertex_dist.hooks._clients:is_transient")
    return sorted(c.name for c in grpc.StatusCode if is_transient(exceptions.from_grpc_status(c, "x")))


def seed_layout() -> tuple[int, int, str, int]:
    """The seed's workers, GPUs per machine (primary and workers alike), GPU model and reducers."""
    seed = code_at("airflow_vertex_dist.specs.examples:SEED_REDUCTION_SERVER")
    pools = seed.to_api(location="us-central1")["jobSpec"]["workerPoolSpecs"]
    machine = pools[1]["machineSpec"]
    assert pools[0]["machineSpec"] == machine
    kind = machine["acceleratorType"].removeprefix("NVIDIA_TESLA_")
    return pools[1]["replicaCount"], machine["acceleratorCount"], kind, pools[2]["replicaCount"]


def rendered_timeouts() -> Any:
    scheduling = code_at("airflow_vertex_dist.specs:Scheduling")
    return agreed(
        scheduling(timeout=value).to_api()["timeout"] for value in (7200, timedelta(hours=2), "7200s")
    )


def torch_group() -> str:
    """The dependency group of pyproject.toml that pins torch (the one the Makefile's pip installs)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    groups = pyproject.split("[dependency-groups]", 1)[1].split("\n[", 1)[0]
    return agreed(re.findall(r'^(\w+) = \[[^\]]*"torch==', groups, re.M))


def study_tuning_output() -> Any:
    return code_at("airflow_vertex_dist.jobs.outputs:tuning_output")(STUDY, "https://console")


def evaluated_at(variable: str, values: tuple[int, ...]) -> Callable[[str], list[int]]:
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


def emulator_config() -> Any:
    return code_at("vertex_emulator.core.config:EmulatorConfig")(state_dir=Path("s"), gcs_root=Path("g"))


def cli_default(name: str) -> Any:
    return getattr(code_at("vertex_emulator.cli:build_parser")().parse_args([]), name)


def gpu_families() -> list[str]:
    families = code_at("airflow_vertex_dist.specs.machine:GPU_MACHINE_FAMILIES")
    return sorted(f.removesuffix("-") for f in families if f != "a4x-")


def source_captures(obj: Any, pattern: str) -> tuple[str, ...]:
    """What ``pattern`` captures in the source of ``obj`` (a value written in place, not named)."""
    found = re.search(pattern, inspect.getsource(obj))
    assert found is not None, pattern
    return found.groups()


def label_keys() -> list[str]:
    names = ("MANAGED_BY", "DAG", "TASK", "RUN", "SPEC", "BUDGET")
    return [code_at(f"airflow_vertex_dist.hooks.labels:{name}_LABEL") for name in names]


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
