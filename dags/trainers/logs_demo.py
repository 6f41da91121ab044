"""The training-logs example's trainer: every replica reports progress; one worker fails on bad data.

Each trainer (the primary and the workers) prints a few steps, then checks in with the primary over
TCP at the primary's CLUSTER_SPEC address. The worker named by ``--fail_replica`` (default
``workerpool1-1``) waits until every trainer has checked in, prints a distinctive line
(``shard 7 of the training data is corrupt``) and a traceback, and exits 1, which fails the job. The
others wait for the job to stop them. The primary serves the check-ins.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time

from trainers.cluster import ClusterSpec, split_address

__all__ = ["main"]


def _serve(spec: ClusterSpec, expected: int) -> None:
    """The primary: count check-ins; answer each with the number seen so far (a line)."""
    host, port = split_address(spec.primary_address)
    seen: set[str] = set()
    lock = threading.Lock()
    with socket.create_server((host, port)) as server:
        while True:
            conn, _ = server.accept()
            with conn, conn.makefile("rw") as stream:
                key = stream.readline().strip()
                with lock:
                    seen.add(key)
                    stream.write(f"{len(seen)}/{expected}\n")
                    stream.flush()


def _check_in(spec: ClusterSpec, deadline: float) -> int:
    """Tell the primary this replica is past its steps; returns how many trainers have checked in."""
    host, port = split_address(spec.primary_address)
    while True:
        try:
            with socket.create_connection((host, port), timeout=5) as conn, conn.makefile("rw") as stream:
                stream.write(spec.key + "\n")
                stream.flush()
                return int(stream.readline().split("/")[0])
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # the primary is not listening yet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trainers.logs_demo")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--fail_replica", default="workerpool1-1")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    spec = ClusterSpec.from_env()
    trainers = len(spec.trainers)
    deadline = time.monotonic() + args.timeout
    if spec.pool == 0:
        threading.Thread(target=_serve, args=(spec, trainers), daemon=True).start()
    for step in range(args.steps):
        print(f"step {step}: loss={1.0 / (step + 1):.3f}", flush=True)
    count = _check_in(spec, deadline)
    if spec.key == args.fail_replica:
        while count < trainers and time.monotonic() < deadline:
            time.sleep(0.1)  # wait for the other trainers' check-ins
            count = _check_in(spec, deadline)
        print("shard 7 of the training data is corrupt", flush=True)
        raise RuntimeError("cannot read shard 7")
    while time.monotonic() < deadline:
        time.sleep(0.5)  # until the job stops this replica
    return 0


if __name__ == "__main__":
    sys.exit(main())
