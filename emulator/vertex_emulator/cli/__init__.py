"""``vertex-emulator``: run the local Vertex AI JobService until SIGINT/SIGTERM.

Prints the endpoints, then one line ``emulator ready grpc=HOST:PORT rest=http://HOST:PORT
storage=http://127.0.0.1:PORT`` once the servers accept calls (scripts can wait for it), and stops
every replica cleanly on exit.

Ports: 8781 (gRPC), 8780 (REST, pages, Cloud Logging over REST) and 8782 (Cloud Storage) unless
given; 0 picks a free port for that listener; ``--storage-port`` left out is a free port too when
``--grpc-port`` or ``--rest-port`` is 0 (so ``--grpc-port 0 --rest-port 0`` runs beside another
emulator). A listener that cannot bind ends the command with ``cannot bind <what> on
<host>:<port>: <reason>`` and exit status 1.

``vertex-emulator state snapshot|restore|reset|list|delete`` is a client of a running emulator's state
admin API instead (``state``); ``--restore NAME`` starts from a snapshot.

The package: the command line's flags and their types (``flags``), the ``EmulatorConfig`` they ask for
(``config``), the ``state`` client, and running the emulator until a signal (here).
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

from vertex_emulator.cli.config import config_from_args
from vertex_emulator.cli.flags import DEFAULT_GRPC_PORT, DEFAULT_REST_PORT, DEFAULT_STORAGE_PORT, build_parser
from vertex_emulator.cli.state import state_main
from vertex_emulator.core.config import BindError, EmulatorConfig

__all__ = [
    "DEFAULT_GRPC_PORT",
    "DEFAULT_REST_PORT",
    "DEFAULT_STORAGE_PORT",
    "build_parser",
    "console_main",
    "main",
    "parse_config",
]


def parse_config(argv: list[str]) -> EmulatorConfig:
    """The ``EmulatorConfig`` the command line ``argv`` asks for (``SystemExit`` on a usage error)."""
    parser = build_parser()
    return config_from_args(parser.parse_args(argv), parser)


def main(argv: list[str]) -> int:
    """Run the emulator until SIGINT or SIGTERM (``state ...``: a client of a running one's state admin
    API, cli/state.py); returns the process exit code."""
    if argv[:1] == ["state"]:
        return state_main(argv[1:])
    from vertex_emulator.app import Emulator
    from vertex_emulator.core.errors import ApiError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        config = config_from_args(args, parser)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            emulator = Emulator(config)
        except OSError as exc:
            print(f"cannot start the emulator: {exc}", file=sys.stderr)
            return 1
        try:
            emulator.start()
        except OSError as exc:  # a BindError says "cannot bind <what> on <host>:<port>: <reason>"
            emulator.stop()
            print(exc if isinstance(exc, BindError) else f"cannot start the emulator: {exc}", file=sys.stderr)
            return 1
        except ApiError as exc:  # --restore: no such snapshot, or a damaged one
            emulator.stop()
            print(f"cannot start the emulator: --restore: {exc.message}", file=sys.stderr)
            return 1
        try:
            print(f"Vertex AI emulator (state in {config.state_dir}, gs:// in {config.gcs_root})")
            print(f"  gRPC: {emulator.grpc_target}  (JobServiceClient over an insecure channel)")
            print(f"  REST: {emulator.rest_endpoint}  (JobServiceClient(transport='rest'), curl)")
            print(f"  GCS:  {config.storage_endpoint}  (STORAGE_EMULATOR_HOST of every replica)")
            print(f"  jobs: {emulator.rest_endpoint}/ui/   stats: {emulator.rest_endpoint}/emulator/stats")
            # a damaged state directory, set aside (core/jobstore_repair.py)
            for line in emulator.store.damage:
                print(f"  damaged state, quarantined: {line}", file=sys.stderr)
            print(
                f"emulator ready grpc={emulator.grpc_target} rest={emulator.rest_endpoint} "
                f"storage={config.storage_endpoint}",
                flush=True,
            )
            while not stop.wait(0.5):
                pass
            print("stopping the emulator", flush=True)
        finally:
            emulator.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def console_main() -> int:
    """The ``vertex-emulator`` console script (and ``python -m vertex_emulator``)."""
    return main(sys.argv[1:])
