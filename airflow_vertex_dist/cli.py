"""``airflow-vertex-dist``: render specs, run the local emulator, run the demo."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _render(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from airflow_vertex_dist.specs import load_spec

    try:
        spec = load_spec(args.spec, location=args.location)
    except ValidationError as exc:
        print(f"invalid spec {args.spec}:\n{exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, ImportError, AttributeError) as exc:
        print(f"cannot load {args.spec}: {exc}", file=sys.stderr)
        return 2
    body = spec.to_api()
    if args.compact:
        print(json.dumps(body, sort_keys=True, separators=(",", ":")))
    else:
        print(json.dumps(body, sort_keys=True, indent=2))
    return 0


def _emulator(argv: list[str]) -> int:
    from airflow_vertex_dist.emulator.cli import main as emulator_main

    return emulator_main(argv)


def _demo(args: argparse.Namespace) -> int:
    from airflow_vertex_dist.demo import run_demo

    return int(run_demo())


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["emulator"]:
        return _emulator(argv[1:])
    parser = argparse.ArgumentParser(prog="airflow-vertex-dist", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser("render", help="print the exact Vertex AI v1 request body of a spec")
    render.add_argument("spec", help="a JSON/YAML file, or module:attribute naming a spec object")
    render.add_argument("--location", default=None, help="job location, when the spec does not set one")
    render.add_argument("--compact", action="store_true", help="one line, no indentation")
    render.set_defaults(func=_render)
    sub.add_parser("emulator", help="run the local Vertex AI JobService emulator (see --help)")
    demo = sub.add_parser("demo", help="run the demo end to end")
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
