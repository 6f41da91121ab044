"""Write the table of the emulator's bounds on one request (docs/emulator.md) from the constants that set
them, so the page cannot state a bound the code no longer has.

The table lives between two markers in docs/emulator.md; the prose around it names the bounds without
their numbers. Run from the checkout's root: ``python scripts/emulator_bounds_md.py``; ``--check`` fails
when the table is stale (tests/test_reference_tables.py runs the check).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from marked_page import (  # scripts/ is on the path: run as a script, or by the tests
    replace_marked,
    write_or_check,
)

__all__ = ["END", "PAGE", "ROWS", "START", "main", "size", "table", "updated"]

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "emulator.md"
START = "<!-- emulator-bounds:start (written by scripts/emulator_bounds_md.py from the code) -->"
END = "<!-- emulator-bounds:end -->"
EM = "vertex_emulator"

#: (what is bounded, its bound: a format with one ``{module:attribute}`` field a value, what comes past it)
#: ``{...!s}`` writes a size in bytes as KiB or MiB; otherwise a number is written with thousands commas
ROWS: list[tuple[str, str, str]] = [
    (
        "a REST request body (`Content-Length`)",
        "{rest:MAX_BODY_BYTES!s}",
        "413 / INVALID_ARGUMENT, before the body is read",
    ),
    ("the JSON nesting of a REST body", "{rest:MAX_JSON_DEPTH} levels", "400 / INVALID_ARGUMENT"),
    (
        "a JobService request over gRPC",
        "{jobservice.grpc_server:MAX_MESSAGE_BYTES!s}",
        "INVALID_ARGUMENT",
    ),
    (
        "a gRPC message at the transport",
        "{jobservice.grpc_server:_TRANSPORT_MAX_BYTES!s}",
        "RESOURCE_EXHAUSTED, from gRPC itself",
    ),
    (
        "a List `filter` (JobService)",
        "{jobservice.filters:MAX_FILTER_CHARS!s}, {jobservice.filters:MAX_TERMS} restrictions, "
        "parentheses {jobservice.filters:MAX_DEPTH} deep",
        "400 / INVALID_ARGUMENT naming the bound",
    ),
    (
        "a `create_time` value in a List `filter`",
        "{jobservice.filters:MAX_TIME_CHARS} characters",
        "400 / INVALID_ARGUMENT, before it is parsed",
    ),
    (
        "a List `page_size` (JobService)",
        "default {jobservice.service:DEFAULT_PAGE_SIZE}, at most {jobservice.service:MAX_PAGE_SIZE}",
        "the largest page",
    ),
    (
        "a Cloud Logging `filter` (`entries.list`)",
        "{cloud_logging.query:MAX_FILTER_CHARS} characters, {cloud_logging.query:MAX_TERMS} comparisons "
        "and search terms, groups {cloud_logging.query:MAX_DEPTH} deep",
        "400 / INVALID_ARGUMENT naming `filter`",
    ),
    (
        "a Cloud Logging page (`pageSize`)",
        "default {cloud_logging.api:DEFAULT_PAGE_SIZE}, at most {cloud_logging.api:MAX_PAGE_SIZE}",
        "400 / INVALID_ARGUMENT naming `pageSize`",
    ),
    (
        "the entries of one Cloud Logging page, in bytes",
        "{cloud_logging.api:MAX_PAGE_BYTES!s} (at least one entry)",
        "the page ends early, with a `nextPageToken`",
    ),
    (
        "a record of a replica's log file",
        "{runtime.log_records:MAX_RECORD_BYTES!s}",
        "skipped; the lines after it are served",
    ),
    (
        "the JSON nesting of a Cloud Storage bucket or object resource",
        "{cloud_storage.api:MAX_JSON_DEPTH} levels",
        "400",
    ),
]


def size(n: int) -> str:
    """Bytes as a reader counts them: ``10 MiB``, ``32 KiB``, ``1.6 MiB``."""
    for unit, factor in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if n >= factor:
            whole, rest = divmod(n, factor)
            return f"{whole:,} {unit}" if rest == 0 else f"{n / factor:.1f} {unit}"
    return f"{n:,} bytes"


def _value(field: str) -> str:
    path, _, conversion = field.partition("!")
    module, _, attribute = path.partition(":")
    value = getattr(importlib.import_module(f"{EM}.{module}"), attribute)
    return size(value) if conversion == "s" else f"{value:,}"


def _filled(bound: str) -> str:
    out, rest = [], bound
    while "{" in rest:
        head, _, tail = rest.partition("{")
        field, _, rest = tail.partition("}")
        out.extend([head, _value(field)])
    return "".join([*out, rest])


def table() -> str:
    """The markdown table of the bounds, each value read from the code."""
    lines = ["| what | bound | past it |", "|---|---|---|"]
    lines.extend(f"| {what} | {_filled(bound)} | {past} |" for what, bound, past in ROWS)
    return "\n".join(lines)


def updated(page: str) -> str:
    """``page`` with the text between the markers replaced by the current table."""
    return replace_marked(page, START, END, f"{START}\n{table()}\n{END}", PAGE)


def main(argv: list[str] | None = None) -> int:
    return write_or_check(argv, PAGE, updated, "bounds table", "python scripts/emulator_bounds_md.py")


if __name__ == "__main__":
    sys.exit(main())
