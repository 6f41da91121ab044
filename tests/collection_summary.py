"""A pytest plugin (tests/conftest.py loads it): the run's test functions and parametrized cases, apart.

pytest counts items: a function parametrized over 40 cases is 40 of them. This plugin prints, before
pytest's closing line, one line that tells the two apart::

    test functions: 1210, parametrized cases: 1480 (collected items: 2290)

counted over the items the run selected (after `-m`/`-k` deselection). A function is one
(module, class, function name) whatever its parameters; a parametrized case is an item whose node id
carries a parameter id (`test_x[case]`), so collected items = functions without parameters + cases.

Under pytest-xdist (`-n`) the controller collects nothing itself: each worker collects the whole run
and sends its node ids to the controller (`pytest_xdist_node_collection_finished`), which counts the
first worker's list (xdist stops the run when workers' lists differ). The numbers are those of a run
without xdist.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController

__all__ = [
    "Counts",
    "count_node_ids",
    "function_of",
    "pytest_collection_finish",
    "pytest_terminal_summary",
    "pytest_xdist_node_collection_finished",
    "summary_line",
]

_NODE_IDS = pytest.StashKey[list[str]]()


@dataclass(frozen=True)
class Counts:
    """How many test functions, parametrized cases and collected items a run has."""

    functions: int
    cases: int
    items: int


def function_of(node_id: str) -> str:
    """The node id of the function an item runs: its node id without the `[parameter id]` suffix.

    The file path comes before the first `::`; a parameter id (which may hold `::` or `[`) starts at
    the first `[` after it.
    """
    path, sep, rest = node_id.partition("::")
    return path + sep + rest.split("[", 1)[0]


def count_node_ids(node_ids: Iterable[str]) -> Counts:
    """Count the functions and parametrized cases among the given item node ids."""
    ids = list(node_ids)
    functions = {function_of(node_id) for node_id in ids}
    cases = sum(1 for node_id in ids if function_of(node_id) != node_id)
    return Counts(functions=len(functions), cases=cases, items=len(ids))


def summary_line(counts: Counts) -> str:
    """The line printed at the end of a run."""
    return (
        f"test functions: {counts.functions}, parametrized cases: {counts.cases} "
        f"(collected items: {counts.items})"
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """A run without xdist, or an xdist worker: keep the selected items' node ids."""
    session.config.stash[_NODE_IDS] = [item.nodeid for item in session.items]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: WorkerController, ids: list[str]) -> None:
    """The xdist controller: keep the node ids the first worker to finish collecting sent."""
    config = node.config
    if _NODE_IDS not in config.stash:
        config.stash[_NODE_IDS] = list(ids)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Print the counts; pytest's own closing line ("N passed in ...") still comes after."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller prints
        return
    node_ids = config.stash.get(_NODE_IDS, None)
    if node_ids is not None:
        terminalreporter.write_line(summary_line(count_node_ids(node_ids)))
