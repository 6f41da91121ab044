"""The ``EmulatorConfig`` a parsed ``vertex-emulator`` command line asks for: the fault and capacity
settings (a capacity file, then the flags over it), the ports, the access token (given or read from a
file) and the exposure check; every refusal is a usage error naming the flag (``parser.error``).
"""

from __future__ import annotations

import argparse
from typing import Any

from vertex_emulator.cli.flags import COUNT_FLAGS, DEFAULT_STORAGE_PORT, VALUE_FLAGS
from vertex_emulator.core.config import EmulatorConfig, check_exposure

__all__ = ["capacity_json", "config_from_args"]


def capacity_json(args: argparse.Namespace) -> dict[str, Any]:
    """The capacity settings the file and flags ask for, as JSON (flags over the file)."""
    from vertex_emulator.capacity.settings import load_capacity_file

    data: dict[str, Any] = load_capacity_file(args.capacity_file) if args.capacity_file else {}
    for name in COUNT_FLAGS:
        given: list[tuple[str, str, int]] = getattr(args, name)
        if not given:
            continue
        table = data.get(name)
        merged: dict[str, Any] = {
            region: dict(counts) for region, counts in (table.items() if isinstance(table, dict) else ())
        }
        for region, accelerator, count in given:
            merged.setdefault(region, {})[accelerator] = count
        data[name] = merged
    for name in VALUE_FLAGS:
        value = getattr(args, name)
        if value is not None:
            data[name] = value
    return data


def config_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> EmulatorConfig:
    """The configuration ``args`` (parsed by ``parser``) ask for; ``parser.error`` on a bad value."""
    from vertex_emulator.capacity.settings import CapacityError, capacity_from_json
    from vertex_emulator.core.faults import FaultsError, faults_from_json

    try:
        faults = faults_from_json(
            {
                "error_rate": dict(args.fault_rate),
                "lost_answer_rate": dict(args.lost_answer_rate),
                "error_codes": [code.strip() for code in args.fault_codes.split(",") if code.strip()],
                "latency_s": args.latency,
                "queued_s": args.queued_seconds,
                "pending_s": args.pending_seconds,
                "provisioning_s": args.provisioning_seconds,
                "crash_replicas": list(args.crash_replica),
                "crash_after_s": args.crash_after,
                "crash_exit_code": args.crash_exit_code,
                "seed": args.seed,
            }
        )
    except FaultsError as exc:
        parser.error(str(exc))
    try:
        capacity = capacity_from_json(capacity_json(args))
    except CapacityError as exc:
        message = str(exc)
        for name, flag in {**COUNT_FLAGS, **VALUE_FLAGS}.items():
            if message.startswith((f"{name}:", f"{name}.")) and getattr(args, name) not in (None, []):
                message = f"{flag} ({name}){message[len(name) :]}"
                break
        parser.error(message)
    scenario = None
    if args.scenario is not None:
        from vertex_emulator.scenario.loader import ScenarioError, load_scenario

        try:
            scenario = load_scenario(args.scenario)
        except ScenarioError as exc:
            parser.error(f"--scenario: {exc}")
    storage_port = args.storage_port
    if storage_port is None:  # not given: a free port beside free ones, else the fixed default
        storage_port = 0 if 0 in (args.grpc_port, args.rest_port) else DEFAULT_STORAGE_PORT
    ports = (
        ("--grpc-port", args.grpc_port),
        ("--rest-port", args.rest_port),
        ("--storage-port", storage_port),
    )
    for flag, port in ports:
        if not 0 <= port <= 65535:
            parser.error(f"{flag}: must be from 0 to 65535 (got {port})")
    auth_token = args.auth_token
    if args.auth_token_file is not None:
        try:
            auth_token = args.auth_token_file.read_text().strip()
        except OSError as exc:
            parser.error(f"--auth-token-file: cannot read {args.auth_token_file}: {exc.strerror}")
    try:
        check_exposure(args.host, auth_token)
    except ValueError as exc:
        parser.error(str(exc).replace("auth_token:", "--auth-token:").replace("host:", "--host:", 1))
    state_dir = args.state_dir.resolve()
    return EmulatorConfig(
        state_dir=state_dir,
        gcs_root=(args.gcs_root or state_dir / "gcs").resolve(),
        gcs_mount=args.gcs_mount,
        host=args.host,
        auth_token=auth_token,
        grpc_port=args.grpc_port,
        rest_port=args.rest_port,
        image_map=dict(args.image_map),
        faults=faults,
        capacity=capacity,
        scenario=scenario,
        pass_env=list(args.pass_env),
        storage_port=storage_port,
        max_connections=args.max_connections,
        idle_timeout_s=args.idle_timeout,
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
        max_replica_processes=args.max_replica_processes,
        max_job_replicas=args.max_job_replicas,
        restore=args.restore,
        snapshot_max_bytes=args.snapshot_max_bytes,
    )
