"""The layer contracts of ``.importlinter`` hold, and they place every part of the package.

``make lint`` runs ``lint-imports`` too; this test makes the unit suite fail on a broken contract as well.
"""

from __future__ import annotations

import ast
import configparser
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import airflow_vertex_dist

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = ROOT / ".importlinter"
sys.path.insert(0, str(ROOT / "scripts"))

import layers_picture  # noqa: E402  (scripts/ is on the path, as when the script runs)


def _config() -> configparser.ConfigParser:
    config = configparser.ConfigParser(inline_comment_prefixes=None)
    config.read(CONTRACTS)
    return config


def test_every_contract_is_kept() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    assert lint_imports.exists(), "import-linter is not installed here: run `make install` (the dev group)"
    out = subprocess.run(
        [str(lint_imports), "--config", str(CONTRACTS), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = out.stdout + out.stderr
    assert out.returncode == 0, report[-4000:]
    contracts = [s for s in _config().sections() if s.startswith("importlinter:contract:")]
    assert f"Contracts: {len(contracts)} kept, 0 broken." in report, report[-4000:]


def _placed(contract: str) -> tuple[set[str], set[str]]:
    """The names a layers contract places: (required, optional); an optional one is in parentheses."""
    names = {name for row in layers_picture.layers(contract, CONTRACTS) for name in row}
    optional = {name[1:-1] for name in names if name.startswith("(") and name.endswith(")")}
    return {name for name in names if not name.startswith("(")}, optional


def test_the_layers_place_every_subpackage_and_module() -> None:
    """A new subpackage or top-level module must be given its layer: the contract file is the picture
    of the whole package, not of the parts that existed when it was written."""
    required, optional = _placed("layers")
    assert not optional
    children = {info.name for info in pkgutil.iter_modules(airflow_vertex_dist.__path__)}
    assert children == required


def test_the_emulator_layers_place_every_subpackage_and_module() -> None:
    """The same for the emulator's contract: every service folder and top-level module has its layer."""
    import vertex_emulator

    required, optional = _placed("emulator-layers")
    assert not optional
    children = {info.name for info in pkgutil.iter_modules(vertex_emulator.__path__)}
    assert children == required


def _layers() -> list[set[str]]:
    return [set(row) for row in layers_picture.layers("layers", CONTRACTS)]


def test_the_architecture_page_shows_the_contracts_layers() -> None:
    """docs/architecture.md's layer table lists the layers of the contract, top to bottom."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    table = [set(re.findall(r"`([a-z_]+)`", row.split(" | ")[0])) for row in rows]
    assert table[: len(_layers())] == _layers()


def test_every_test_the_architecture_page_cites_exists() -> None:
    """Each rule on the page points at the tests that keep it: the files exist and name those tests."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    cited = 0
    for line in page.splitlines():
        for path in re.findall(r"`((?:emulator/)?tests/[\w/]+\.py)`", line):
            source = (ROOT / path).read_text()
            for name in re.findall(r"`(test_\w+)`", line):
                assert re.search(rf"^(async )?def {name}\(", source, re.M), f"{path} has no {name}"
                cited += 1
    assert cited >= 10


# --- Airflow's public interface only; its internals in ``_compat`` alone ---------------------------

#: The Airflow modules the package may import outside ``_compat``, each with the names it may take
#: (None: any) and where Airflow says it is public. Sources: Airflow's "Public Interface for Airflow
#: 3.0+" page (public-airflow-interface.html, the same on 3.1, 3.2 and 3.3) and the Task SDK reference.
PUBLIC_AIRFLOW: dict[str, frozenset[str] | None] = {
    # the Task SDK, "the primary public interface": what its __all__ exports (checked below)
    "airflow.sdk": None,
    # the Task SDK's protocols and TaskInstanceKey, the type of BaseOperatorLink.get_link's ti_key
    "airflow.sdk.types": frozenset({"TaskInstanceKey"}),
    # "Public Airflow utilities": the Task SDK's XCom, named under this path on the page
    "airflow.sdk.execution_time.xcom": frozenset({"XCom"}),
    # "Triggers": every trigger derives from airflow.triggers.base.BaseTrigger
    "airflow.triggers.base": frozenset({"BaseTrigger", "TriggerEvent"}),
    # "Listeners" and "Plugins": a listener is a plugin whose methods carry airflow.listeners.hookimpl
    "airflow.listeners": frozenset({"hookimpl"}),
    "airflow.plugins_manager": frozenset({"AirflowPlugin"}),
    # the OpenLineage provider's documented API (operators.lineage, loaded only with that provider)
    "airflow.providers.openlineage.extractors": frozenset({"OperatorLineage"}),
    "airflow.providers.openlineage.utils.utils": frozenset({"translate_airflow_asset"}),
}

#: The one module that may import Airflow internals (and the names that moved between versions).
COMPAT_MODULE = "airflow_vertex_dist/_compat.py"


def airflow_imports(source: str) -> list[tuple[int, str, str | None]]:
    """Every import of an Airflow module in ``source`` as (line, module, name): ``from m import a, b``
    gives one row per name, ``import m`` and ``importlib.import_module("m")`` a row with name None.
    Imports inside functions and under ``TYPE_CHECKING`` count."""
    rows: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            rows.extend((node.lineno, node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            rows.extend((node.lineno, alias.name, None) for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                (
                    isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("import_module", "import_string")
                )
                or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))
            )
        ):
            rows.append((node.lineno, node.args[0].value, None))
    return sorted(row for row in rows if row[1] == "airflow" or row[1].startswith("airflow."))


def non_public_imports(source: str) -> list[str]:
    """The imports of ``source`` outside ``PUBLIC_AIRFLOW`` ("line: module.name")."""
    import airflow.sdk

    found = []
    for line, module, name in airflow_imports(source):
        if module not in PUBLIC_AIRFLOW:
            found.append(f"{line}: {module}{'.' + name if name else ''}")
            continue
        allowed = PUBLIC_AIRFLOW[module]
        if module == "airflow.sdk":
            allowed = frozenset(airflow.sdk.__all__)
        if name is None or (allowed is not None and name not in allowed):
            found.append(f"{line}: {module}{'.' + name if name else ''}")
    return found


def test_only_compat_imports_airflow_internals() -> None:
    """Outside ``_compat.py``, the package imports Airflow's public interface only: a module reaching
    into ``airflow.models``, ``airflow.utils``, ``airflow.sdk.execution_time`` (but its public
    ``XCom``), ``airflow.api*``, ``airflow.jobs``, ``airflow.executors``, ``airflow.serialization``,
    ``airflow.configuration`` or any other module not in ``PUBLIC_AIRFLOW`` fails here, and belongs in
    ``_compat.py`` with its reason and a compat test (``tests/compat/test_internals.py``)."""
    package = ROOT / "airflow_vertex_dist"
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in sorted(package.rglob("*.py"))
        if str(path.relative_to(ROOT)) != COMPAT_MODULE
        if (found := non_public_imports(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_public_import_check_catches_internals_wherever_they_are_imported() -> None:
    source = """
import importlib
from typing import TYPE_CHECKING
from airflow.sdk import BaseOperator, XComArg
from airflow.sdk import NotInTheSdk
from airflow.listeners import hookimpl
import airflow.utils.session
if TYPE_CHECKING:
    from airflow.models.taskinstance import TaskInstance
def f():
    from airflow.sdk.execution_time.xcom import XCom
    from airflow.sdk.execution_time import task_runner
    from airflow.sdk.execution_time.comms import GetTaskStates
    importlib.import_module("airflow.jobs.triggerer_job_runner")
    from airflow_vertex_dist._compat import conf
"""
    assert non_public_imports(source) == [
        "5: airflow.sdk.NotInTheSdk",
        "7: airflow.utils.session",
        "9: airflow.models.taskinstance.TaskInstance",
        "12: airflow.sdk.execution_time.task_runner",
        "13: airflow.sdk.execution_time.comms.GetTaskStates",
        "14: airflow.jobs.triggerer_job_runner",
    ]


def test_the_public_airflow_modules_exist_with_their_names() -> None:
    """Each module of ``PUBLIC_AIRFLOW`` is there, with the names it is allowed for (the OpenLineage
    provider's only when it is installed, as the package uses it)."""
    import importlib.util

    for module, names in PUBLIC_AIRFLOW.items():
        if (
            module.startswith("airflow.providers.openlineage")
            and importlib.util.find_spec("airflow.providers.openlineage") is None
        ):
            continue
        loaded = importlib.import_module(module)
        assert all(hasattr(loaded, name) for name in names or ()), module


def test_the_layers_picture_is_drawn_from_the_contracts(tmp_path: Path) -> None:
    """docs/architecture.md's picture is generated from .importlinter and current; a changed contract
    makes it stale (the check reads the contract file, not a copy of the picture)."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert layers_picture.updated(page) == page, "run: python scripts/layers_picture.py"
    assert layers_picture.main(["--check"]) == 0
    changed = tmp_path / "contracts"
    changed.write_text(CONTRACTS.read_text().replace("    logs\n", "    logs | pages\n", 1))
    redrawn = layers_picture.updated(page, changed)
    assert redrawn != page and '["logs · pages"]' in redrawn
    assert [row for row in layers_picture.layers("layers") if "hooks" in row] == [["hooks"]]


def test_every_file_and_folder_the_architecture_page_names_exists() -> None:
    """A path on the page (``specs/_job_from_api.py``, ``rest/web.py``, ``ui/templates/``...) names a file
    or folder of the repository, of the provider's package or of the emulator's: a move that leaves the
    page behind fails here."""
    roots = (ROOT, ROOT / "airflow_vertex_dist", ROOT / "emulator" / "vertex_emulator", ROOT / "emulator")
    page = (ROOT / "docs" / "architecture.md").read_text()
    paths = set(re.findall(r"`([\w.-]+(?:/[\w.-]+)*(?:\.py|\.md|/))`", page))
    assert len(paths) >= 30, sorted(paths)

    def found(path: str) -> bool:
        if any((root / path).exists() for root in roots):
            return True
        # a name given inside its folder's sentence (`jobs/` (`states.py`, ...)): somewhere in a package
        return any(any(root.rglob(path.rstrip("/"))) for root in roots[1:3])

    missing = [path for path in sorted(paths) if not found(path)]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
