"""``airflow-vertex-dist``: render specs, write the spec schema cache.
(The local emulator is a distribution of its own, ``vertex-emulator``; the demo runs from a checkout:
``make demo``.)"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _render(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from airflow_vertex_dist.operators.spec_field import SpecError, spec_error
    from airflow_vertex_dist.specs import load_spec

    try:
        spec = load_spec(args.spec, location=args.location)
    except ValidationError as exc:
        print(f"{args.spec}: {spec_error(exc)}", file=sys.stderr)
        return 2
    except SpecError as exc:
        print(f"{args.spec}: {exc}", file=sys.stderr)
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


def _warm_schema_cache(args: argparse.Namespace) -> int:
    from airflow_vertex_dist.specs._schema_cache import ENV_VAR, warm

    try:
        path = warm()
    except OSError as exc:
        print(f"cannot write the spec schema cache: {exc}", file=sys.stderr)
        return 1
    if path is None:
        print(f"the spec schema cache is off ({ENV_VAR})", file=sys.stderr)
        return 1
    print(path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["emulator"]:
        print(
            "the emulator is its own distribution: install vertex-emulator and run 'vertex-emulator'",
            file=sys.stderr,
        )
        return 2
    parser = argparse.ArgumentParser(prog="airflow-vertex-dist", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser("render", help="print the exact Vertex AI v1 request body of a spec")
    render.add_argument("spec", help="a JSON/YAML file, or module:attribute naming a spec object")
    render.add_argument("--location", default=None, help="job location, when the spec does not set one")
    render.add_argument("--compact", action="store_true", help="one line, no indentation")
    render.set_defaults(func=_render)
    warm = sub.add_parser(
        "warm-schema-cache",
        help="build every spec model's pydantic schema and store it for later processes (DAG parses)",
    )
    warm.set_defaults(func=_warm_schema_cache)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
