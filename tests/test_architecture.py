"""The layer contracts of ``.importlinter`` hold, and they place every part of the package.

``make lint`` runs ``lint-imports`` too; this test makes the unit suite fail on a broken contract as well.
"""

from __future__ import annotations

import configparser
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import airflow_vertex_dist

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = ROOT / ".importlinter"


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


def test_the_layers_place_every_subpackage_and_module() -> None:
    """A new subpackage or top-level module must be given its layer: the contract file is the picture
    of the whole package, not of the parts that existed when it was written."""
    layers = _config()["importlinter:contract:layers"]["layers"]
    placed = {
        name.strip()
        for line in layers.splitlines()
        if line.strip() and not line.strip().startswith("#")
        for name in re.split(r"[|:]", line)
    }
    children = {info.name for info in pkgutil.iter_modules(airflow_vertex_dist.__path__)}
    assert children == placed


def _layers() -> list[set[str]]:
    text = _config()["importlinter:contract:layers"]["layers"]
    return [
        {name.strip() for name in re.split(r"[|:]", line)}
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


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
        for path in re.findall(r"`(tests/[\w/]+\.py)`", line):
            source = (ROOT / path).read_text()
            for name in re.findall(r"`(test_\w+)`", line):
                assert re.search(rf"^(async )?def {name}\(", source, re.M), f"{path} has no {name}"
                cited += 1
    assert cited >= 10
