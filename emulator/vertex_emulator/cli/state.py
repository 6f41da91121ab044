"""``vertex-emulator state snapshot|restore|reset|list|delete``: a client of a running emulator's state
admin API (rest/state.py) over its REST port.

Prints the emulator's JSON answer and exits 0; an error the emulator answers is printed as
``vertex-emulator state: STATUS: message`` (exit 1), and so is an emulator that cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from vertex_emulator.cli.flags import DEFAULT_REST_PORT

__all__ = ["build_state_parser", "state_main"]

#: seconds a call may take (a restore stops the jobs running: their replicas get ``stop_grace_s``)
TIMEOUT_S = 120.0


def build_state_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vertex-emulator state",
        description="Snapshot, restore or reset a running emulator's state (jobs, logs, objects, capacity "
        "and fault settings), or list and delete its snapshots, through its REST port's admin API.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the emulator's address (default: %(default)s)")
    parser.add_argument(
        "--rest-port", type=int, default=DEFAULT_REST_PORT, help="its REST port (default: %(default)s)"
    )
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--auth-token", default=None, metavar="TOKEN", help="its access token, if it has one")
    token.add_argument("--auth-token-file", type=Path, default=None, metavar="PATH", help="read it from PATH")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="{snapshot,restore,reset,list,delete}")
    snap = verbs.add_parser("snapshot", help="write a snapshot of the state as it is now")
    snap.add_argument("name", help="its name: letters, digits, '.', '_' or '-' (no path)")
    snap.add_argument("--replace", action="store_true", help="replace a snapshot of that name")
    verbs.add_parser("restore", help="put a snapshot's state in force").add_argument("name")
    reset = verbs.add_parser("reset", help="no jobs, logs or objects; the start settings")
    reset.add_argument("--keep-objects", action="store_true", help="keep the objects under --gcs-root")
    verbs.add_parser("list", help="the snapshots kept")
    verbs.add_parser("delete", help="delete a snapshot").add_argument("name")
    return parser


def _request(args: argparse.Namespace) -> tuple[str, str, dict[str, Any] | None]:
    """The method, path and JSON body ``args`` ask for."""
    verb = args.verb
    if verb == "snapshot":
        return "POST", "/emulator/state:snapshot", {"name": args.name, "replace": args.replace}
    if verb == "restore":
        return "POST", "/emulator/state:restore", {"name": args.name}
    if verb == "reset":
        return "POST", "/emulator/state:reset", {"keep_objects": args.keep_objects}
    if verb == "delete":
        return "DELETE", f"/emulator/state/snapshots/{urllib.parse.quote(args.name, safe='')}", None
    return "GET", "/emulator/state/snapshots", None


def state_main(argv: list[str]) -> int:
    """Run ``vertex-emulator state ...``; the exit code."""
    parser = build_state_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return int(exc.code or 0)
    token = args.auth_token
    if args.auth_token_file is not None:
        try:
            token = args.auth_token_file.read_text().strip()
        except OSError as exc:
            print(
                f"vertex-emulator state: --auth-token-file: cannot read it: {exc.strerror}", file=sys.stderr
            )
            return 1
    method, path, body = _request(args)
    host = f"[{args.host}]" if ":" in args.host else args.host
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"http://{host}:{args.rest_port}{path}", data=data, method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            answer = json.load(response)
    except urllib.error.HTTPError as err:
        try:
            error = json.load(err)["error"]
            print(f"vertex-emulator state: {error['status']}: {error['message']}", file=sys.stderr)
        except (ValueError, KeyError, TypeError):
            print(f"vertex-emulator state: HTTP {err.code}", file=sys.stderr)
        return 1
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        print(
            f"vertex-emulator state: cannot reach the emulator at {host}:{args.rest_port}: {reason}",
            file=sys.stderr,
        )
        return 1
    print(json.dumps(answer, indent=2))
    return 0
