"""The support matrix: every cell the project is tested on, in one place.

``noxfile.py`` runs a session for each cell but the main one (the project's own ``.venv``, where
``make test`` runs the full suite); the README's table and the Python classifiers of ``pyproject.toml``
are generated from this list, and ``tests/compat/test_matrix_docs.py`` keeps them equal to it.

An older Airflow is installed as of its release day (uv's ``--exclude-newer``), standing in for that
release's constraints file: newer releases of its dependencies may break it (Airflow 3.2.2 with a newer
``cadwyn``/``fastapi`` cannot run a plain ``@task``), and its users install it with the constraints of
its day. This module is plain data (no imports beyond the standard library): nox loads it by path.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CELLS", "COMPAT_TESTS", "MAIN", "Cell", "python_versions"]


@dataclass(frozen=True)
class Cell:
    """One tested combination."""

    #: the nox session's parameter id (``nox -s "compat(cell='airflow-3.1')"``)
    name: str
    #: the Airflow release installed, exactly
    airflow: str
    #: the interpreter's minor version (found on the machine, never downloaded)
    python: str
    #: resolve as of this day (a date, upload times before its start count), or None: the newest
    exclude_newer: str | None
    #: uv's ``--resolution``: ``highest``, or ``lowest-direct`` (every direct dependency at its floor)
    resolution: str
    #: what the cell stands for, in the README's words
    why: str


#: The main cell: the project's ``.venv`` (pip and uv, the newest of everything), the full test suite.
MAIN = Cell(
    name="main",
    airflow="3.3.2",
    python="3.11",
    exclude_newer=None,
    resolution="highest",
    why="the development environment (also the stack suite and the benchmarks)",
)

#: The compat cells, each running the compat suite (``COMPAT_TESTS``) in a nox session of its own.
CELLS: tuple[Cell, ...] = (
    Cell("airflow-3.1", "3.1.8", "3.10", "2026-03-12", "highest", "Airflow 3.1 on its oldest Python"),
    Cell("airflow-3.2", "3.2.2", "3.10", "2026-05-30", "highest", "Airflow 3.2 on its oldest Python"),
    Cell("airflow-3.3", "3.3.2", "3.10", "2026-09-18", "highest", "Airflow 3.3 on its oldest Python"),
    Cell("newest-py3.13", "3.3.2", "3.13", None, "highest", "the newest Airflow on the newest Python"),
    Cell(
        "lowest",
        "3.1.8",
        "3.12",
        "2026-03-12",
        "lowest-direct",
        "every direct dependency at its declared floor",
    ),
)

#: What each compat cell runs: the compat suite, and the tests of the same guarantees elsewhere.
COMPAT_TESTS: tuple[str, ...] = (
    "tests/compat",
    "tests/test_parse_light.py",
    "tests/sensors/test_triggers.py::test_round_trip_through_the_trigger_row",
    "tests/operators/test_training.py::test_deferred_run_goes_through_the_trigger",
    "tests/operators/test_tuning.py::test_tuning_runs_and_reports_the_best_trial",
    # a task marked by hand (the task-level hooks); a whole run marked by hand: tests/compat
    "tests/operators/test_user_actions.py::test_marking_a_waiting_task_by_hand_cancels_its_job",
    # the log cursor's XCom round trip through the Task SDK: Airflow 3.1 and 3.2 have no async XCom
    # calls, so there the cursor takes the sync_to_async path with that release's own supervisor
    "tests/operators/test_log_cursor_xcom.py",
    # _compat.redact: the secrets masker's redact, imported where this release's Task SDK keeps it
    # (tests/compat/test_internals.py covers the other Airflow internals of _compat)
    "tests/test_compat_redact.py",
)


def python_versions() -> list[str]:
    """Every Python minor version a cell runs, oldest first."""
    found = {MAIN.python, *(cell.python for cell in CELLS)}
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def readme_table() -> str:
    """The README's table of the tested cells (between its ``matrix`` markers)."""
    rows = [
        "| cell | Airflow | Python | dependencies resolved | what it runs |",
        "| --- | --- | --- | --- | --- |",
    ]
    for cell in (MAIN, *CELLS):
        if cell.resolution == "lowest-direct":
            deps = f"every direct one at its floor, published before {cell.exclude_newer}"
        elif cell.exclude_newer:
            deps = f"published before {cell.exclude_newer} (the day after the release)"
        else:
            deps = "the newest"
        runs = "the full suite" if cell is MAIN else "the compat suite"
        rows.append(f"| `{cell.name}` | {cell.airflow} | {cell.python} | {deps} | {runs}: {cell.why} |")
    return "\n".join(rows) + "\n"


def classifiers() -> list[str]:
    """The Python classifiers of ``pyproject.toml``: one per Python a cell runs."""
    return [f"Programming Language :: Python :: {v}" for v in python_versions()]


START, END = "<!-- matrix:start (generated from tests/compat/matrix.py) -->\n", "<!-- matrix:end -->"


def write_readme(path: str) -> None:
    """Replace the table between the README's markers with ``readme_table``."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(head + START + readme_table() + END + tail)


if __name__ == "__main__":  # python tests/compat/matrix.py README.md
    import sys

    write_readme(sys.argv[1])
