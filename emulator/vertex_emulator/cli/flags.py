"""The ``vertex-emulator`` command line: its flags (network, storage, limits, replicas, fault injection,
GPU capacity), their types and defaults, as ``build_parser`` builds them.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

__all__ = [
    "DEFAULT_PROVISIONING_S",
    "COUNT_FLAGS",
    "DEFAULT_GRPC_PORT",
    "DEFAULT_REST_PORT",
    "DEFAULT_STORAGE_PORT",
    "VALUE_FLAGS",
    "build_parser",
]

DEFAULT_GRPC_PORT = 8781
DEFAULT_REST_PORT = 8780
DEFAULT_STORAGE_PORT = 8782
#: seconds the command keeps a job PENDING once capacity is granted (docs/emulator.md argues the value)
DEFAULT_PROVISIONING_S = 10.0


def _key_value(text: str, what: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise argparse.ArgumentTypeError(f"expected {what} (got {text!r})")
    return key, value


def _image_map(text: str) -> tuple[str, list[str]]:
    image, command = _key_value(text, "IMAGE=COMMAND")
    try:
        argv = shlex.split(command)  # split like a shell would, but never run through one
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--image-map {image}: cannot split {command!r}: {exc}") from None
    if not argv:
        raise argparse.ArgumentTypeError(f"--image-map {image}: empty command")
    return image, argv


def _env_name(text: str) -> str:
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(f"--pass-env: must be a variable name (got {text!r})")
    return text


def _fault_rate(text: str) -> tuple[str, float]:
    method, value = _key_value(text, "METHOD=PROBABILITY, e.g. GetCustomJob=0.2 or '*=0.1'")
    try:
        return method, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--fault-rate {method}: {value!r} is not a number") from None


def _region_count(text: str) -> tuple[str, str, int]:
    key, value = _key_value(text, "REGION/ACCELERATOR=N, e.g. us-central1/NVIDIA_TESLA_A100=8")
    region, sep, accelerator = key.partition("/")
    if not sep or not region or not accelerator:
        raise argparse.ArgumentTypeError(f"expected REGION/ACCELERATOR=N (got {text!r})")
    try:
        return region, accelerator, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{key}: {value!r} is not an integer") from None


#: the capacity flags that fill a ``{region: {accelerator: count}}`` map, by Capacity field
COUNT_FLAGS = {
    "quota": "--quota",
    "preemptible_quota": "--preemptible-quota",
    "stock": "--stock",
    "spot_stock": "--spot-stock",
    "flex_start_stock": "--flex-start-stock",
}
#: the capacity flags of one value, by Capacity field
VALUE_FLAGS = {
    "stockout_after_s": "--stockout-after",
    "over_quota": "--over-quota",
    "spot_preemptions_per_hour": "--spot-preemptions-per-hour",
    "spot_preempt_after_s": "--spot-preempt-after",
    "spot_restart_limit": "--spot-restart-limit",
    "spot_notice_s": "--spot-notice",
}


def _add_capacity_flags(parser: argparse.ArgumentParser) -> None:
    gpus = parser.add_argument_group(
        "GPU capacity (quotas, free GPUs, Spot, flex-start; unlimited unless set; docs/emulator.md, Capacity)"
    )
    gpus.add_argument(
        "--capacity-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="JSON object of capacity settings (the /emulator/capacity shape); the flags below override it",
    )
    helps = {
        "quota": "on-demand GPU quota of STANDARD jobs in REGION (custom_model_training_<gpu>)",
        "preemptible_quota": "preemptible GPU quota of SPOT and FLEX_START jobs "
        "(custom_model_training_preemptible_<gpu>)",
        "stock": "free GPUs in REGION for STANDARD jobs; none left: PENDING, then the stockout",
        "spot_stock": "free GPUs in REGION for SPOT jobs",
        "flex_start_stock": "free GPUs in REGION for FLEX_START jobs (they wait up to max_wait_duration)",
    }
    for name, flag in COUNT_FLAGS.items():
        gpus.add_argument(
            flag,
            dest=name,
            type=_region_count,
            action="append",
            default=[],
            metavar="REGION/ACCELERATOR=N",
            help=f"{helps[name]} (repeatable)",
        )
    gpus.add_argument(
        "--stockout-after",
        dest="stockout_after_s",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds a STANDARD or SPOT job waits PENDING for free GPUs before it fails (default 60)",
    )
    gpus.add_argument(
        "--over-quota",
        dest="over_quota",
        choices=("queue", "refuse"),
        default=None,
        help="a job within its quota alone but not beside running jobs: waits QUEUED (queue, default) "
        "or is refused at Create with RESOURCE_EXHAUSTED (refuse)",
    )
    gpus.add_argument(
        "--spot-preemptions-per-hour",
        dest="spot_preemptions_per_hour",
        type=float,
        default=None,
        metavar="RATE",
        help="random preemptions per running Spot replica and hour (seeded with --seed; default 0)",
    )
    gpus.add_argument(
        "--spot-preempt-after",
        dest="spot_preempt_after_s",
        type=float,
        default=None,
        metavar="SECONDS",
        help="preempt a Spot job's primary replica this long after each start (default: never)",
    )
    gpus.add_argument(
        "--spot-restart-limit",
        dest="spot_restart_limit",
        type=int,
        default=None,
        metavar="N",
        help="restarts of a preempted Spot job before it fails (default 6)",
    )
    gpus.add_argument(
        "--spot-notice",
        dest="spot_notice_s",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds between a preempted replica's SIGTERM and its SIGKILL (default 30)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vertex-emulator",
        description="Run a local Vertex AI JobService (gRPC + REST) that runs jobs as local processes. "
        "Every port takes 0 for a free one: --grpc-port 0 --rest-port 0 runs beside another emulator.",
    )
    net = parser.add_argument_group("network")
    net.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default: %(default)s; on loopback only this account is served, Linux); "
        "a non-loopback address needs an access token",
    )
    token = net.add_mutually_exclusive_group()
    token.add_argument(
        "--auth-token",
        default=None,
        metavar="TOKEN",
        help="access token every REST and gRPC call must carry as 'Authorization: Bearer TOKEN' "
        "(at least 16 characters; required with a non-loopback --host)",
    )
    token.add_argument(
        "--auth-token-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="read the access token from PATH (keeps it out of the process list)",
    )
    net.add_argument(
        "--grpc-port", type=int, default=DEFAULT_GRPC_PORT, help="0 picks a free port (%(default)s)"
    )
    net.add_argument(
        "--rest-port", type=int, default=DEFAULT_REST_PORT, help="0 picks a free port (%(default)s)"
    )
    store = parser.add_argument_group("storage")
    store.add_argument(
        "--state-dir", type=Path, default=Path("vertex-emulator-state"), help="jobs database and replica logs"
    )
    store.add_argument(
        "--gcs-root",
        type=Path,
        default=None,
        help="local directory standing for gs:// (default: STATE_DIR/gcs)",
    )
    store.add_argument(
        "--gcs-mount",
        choices=("auto", "off"),
        default="auto",
        help="auto: replicas see the gs:// root at /gcs/, as Vertex AI's Cloud Storage FUSE mount, where "
        "the host allows a mount namespace (Linux); off: no /gcs/ (default: %(default)s)",
    )
    store.add_argument(
        "--image-map",
        type=_image_map,
        action="append",
        default=[],
        metavar="IMAGE=COMMAND",
        help="command line run for container specs of IMAGE that give no command (repeatable)",
    )
    store.add_argument(
        "--storage-port",
        type=int,
        default=None,
        help=f"port of the local Cloud Storage JSON API on 127.0.0.1; 0 picks a free port (default: "
        f"{DEFAULT_STORAGE_PORT}, or a free port when --grpc-port or --rest-port is 0)",
    )
    store.add_argument(
        "--pass-env",
        type=_env_name,
        action="append",
        default=[],
        metavar="NAME",
        help="also give replicas this variable of the emulator's environment (repeatable; replicas "
        "otherwise start from a clean environment)",
    )
    store.add_argument(
        "--restore",
        type=_snapshot_name,
        default=None,
        metavar="NAME",
        help="start from the state of snapshot NAME (STATE_DIR/snapshots/NAME; 'vertex-emulator state "
        "snapshot NAME' writes one)",
    )
    store.add_argument(
        "--snapshot-max-bytes",
        type=_positive_int,
        default=1024**3,
        metavar="BYTES",
        help="the most a snapshot may hold: its jobs, logs and objects (default: %(default)s)",
    )
    limits = parser.add_argument_group("limits (each HTTP listener; gRPC: idle timeout and calls)")
    limits.add_argument(
        "--max-connections",
        type=_positive_int,
        default=128,
        help="connections served at once, one thread each; beyond, the longest idle one is closed, "
        "or 503 when all are busy (default: %(default)s)",
    )
    limits.add_argument(
        "--idle-timeout",
        type=_positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="close a connection with no request for this long (default: %(default)s)",
    )
    limits.add_argument(
        "--header-timeout",
        type=_positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="a request's line and headers must arrive within this (default: %(default)s)",
    )
    limits.add_argument(
        "--body-timeout",
        type=_positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="a REST request body must arrive within this (default: %(default)s)",
    )
    replicas = parser.add_argument_group("replicas (host ceilings; Vertex AI documents no such limits)")
    replicas.add_argument(
        "--max-replica-processes",
        type=_positive_int,
        default=64,
        metavar="N",
        help="replicas running at once, all jobs and trials together; a job that does not fit the room "
        "left waits QUEUED until running jobs end (default: %(default)s)",
    )
    replicas.add_argument(
        "--max-job-replicas",
        type=_positive_int,
        default=64,
        metavar="N",
        help="replicas one job (or one tuning trial) may have; Create refuses more with "
        "RESOURCE_EXHAUSTED (default: %(default)s)",
    )
    faults = parser.add_argument_group("fault injection")
    faults.add_argument(
        "--fault-rate",
        type=_fault_rate,
        action="append",
        default=[],
        metavar="METHOD=P",
        help="probability that METHOD (e.g. GetCustomJob, or *) fails (repeatable)",
    )
    faults.add_argument(
        "--lost-answer-rate",
        type=_fault_rate,
        action="append",
        default=[],
        metavar="METHOD=P",
        help="probability that METHOD (or *) runs and then its answer is lost (repeatable)",
    )
    faults.add_argument(
        "--fault-codes",
        default="UNAVAILABLE",
        help="comma-separated status codes injected failures draw from (default: %(default)s)",
    )
    faults.add_argument("--latency", type=float, default=0.0, help="seconds added to every API call")
    faults.add_argument("--queued-seconds", type=float, default=0.0, help="seconds new jobs stay QUEUED")
    faults.add_argument("--pending-seconds", type=float, default=0.0, help="seconds jobs stay PENDING")
    faults.add_argument(
        "--provisioning-seconds",
        type=float,
        default=DEFAULT_PROVISIONING_S,
        help=f"seconds a job stays PENDING once capacity is granted (default {DEFAULT_PROVISIONING_S:g})",
    )
    faults.add_argument(
        "--crash-replica",
        action="append",
        default=[],
        metavar="KEY",
        help="replica key to kill (globs allowed, e.g. 'workerpool1-*'; repeatable)",
    )
    faults.add_argument(
        "--crash-after", type=float, default=0.0, help="seconds after start a crash replica is killed"
    )
    faults.add_argument(
        "--crash-exit-code", type=int, default=137, help="exit code reported for a crashed replica"
    )
    faults.add_argument("--seed", type=int, default=None, help="seed for fault draws and random search")
    _add_capacity_flags(parser)
    parser.add_argument(
        "--scenario",
        type=Path,
        default=None,
        metavar="FILE",
        help="a scenario file (YAML or JSON) played from the start on its compressed clock "
        "(docs/emulator.md, Scenarios)",
    )
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds (got {text})")
    return value


def _snapshot_name(text: str) -> str:
    from vertex_emulator.core.errors import ApiError
    from vertex_emulator.core.snapshots import check_name

    try:
        return check_name(text, "NAME")
    except ApiError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
