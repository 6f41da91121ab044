"""Every code block of README.md, emulator/README.md and docs/ runs in a test, or says why it cannot.

How each kind is run: ``tests/doc_blocks.py``. Here: the python blocks that talk to an emulator (run
beside a real one), the pytest blocks (run by pytest, with the emulator's plugin), the README's other
python blocks, the shell blocks (executed in bash, or marked with a reason that their own commands bear
out), the connections the shell blocks export, and the ``json`` / ``ini`` / ``yaml`` blocks. The site's own
python blocks (``exec="on"`` and the plain ones) are run by ``tests/test_docs.py``.
"""

from __future__ import annotations

import configparser
import importlib
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_blocks import BLOCKS, DOCS, NOT_CODE, REASONS, ROOT, SESSIONS, SHELL_LANGS, Block

PYTHON = [b for b in BLOCKS if b.lang == "python"]
EMULATOR = [b for b in PYTHON if b.runner == "emulator"]
PYTEST = [b for b in PYTHON if b.runner == "pytest"]
#: the READMEs' plain python blocks (the site's: tests/test_docs.py)
README_PLAIN = [b for b in PYTHON if b.runner == "plain" and DOCS not in b.page.parents]
SHELL = [b for b in BLOCKS if b.lang in SHELL_LANGS]
SESSION_RUN = [b for b in SHELL if b.not_run is None and str(b.page.relative_to(ROOT)) in SESSIONS]
EXECUTED = [b for b in SHELL if b.not_run is None and b not in SESSION_RUN]
_CHECKED_LANGS = ("python", *SHELL_LANGS, "json", "ini", "yaml", "sql", *NOT_CODE)


def _ids(blocks: list[Block]) -> list[str]:
    return [b.id for b in blocks]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "VERTEX_EMULATOR_"))}
    env["AIRFLOW_HOME"] = str(tmp_path / "airflow-home")
    env["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _expected_prints(code: str) -> list[str]:
    """What ``print(...)  # shown`` lines of a block say they print."""
    return re.findall(r"^\s*print\(.*\)\s+# (.+?)\s*$", code, re.M)


# -- every block is accounted for --------------------------------------------------------------------


def test_every_block_is_run_or_says_why() -> None:
    assert len(EMULATOR) >= 3 and len(PYTEST) >= 2 and len(EXECUTED) >= 3, "the block parser is broken"
    unknown = [f"{b.id} ({b.lang or 'no language'})" for b in BLOCKS if b.lang not in _CHECKED_LANGS]
    assert not unknown, f"blocks no test runs or checks: {unknown}"
    marked_not_shell = [b.id for b in BLOCKS if b.not_run is not None and b.lang not in SHELL_LANGS]
    assert not marked_not_shell, f"only shell blocks may be left unrun: {marked_not_shell}"


def _reasons(text: str) -> list[str]:
    return [part.strip() for part in re.split(r",\s*(?:then\s+)?|\s+then\s+", text) if part.strip()]


@pytest.mark.parametrize("block", [b for b in SHELL if b.not_run], ids=_ids([b for b in SHELL if b.not_run]))
def test_a_block_left_unrun_says_why_and_its_commands_bear_it_out(block: Block) -> None:
    assert block.not_run is not None
    for reason in _reasons(block.not_run):
        assert reason in REASONS, f"{block.id}: {reason!r} is none of the known reasons {sorted(REASONS)}"
        assert REASONS[reason].search(block.code), f"{block.id}: no command of the block {reason}"
    # a block whose commands give no reason to leave it out runs
    assert any(pattern.search(block.code) for pattern in REASONS.values()), block.id


def test_session_pages_run_every_block_in_their_test() -> None:
    for page, test in SESSIONS.items():
        module = importlib.import_module(Path(test).stem)
        script = re.sub(r"\b\d{4,5}\b", "PORT", module._script())
        for block in (b for b in SESSION_RUN if str(b.page.relative_to(ROOT)) == page):
            for line in block.code.splitlines():
                ran = re.sub(r"\b\d{4,5}\b", "PORT", line) in script
                assert ran, f"{block.id}: {test} does not run {line!r}"


# -- python ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from vertex_emulator.testing import running_emulator

    with running_emulator(tmp_path_factory.mktemp("docs-emulator")) as em:
        yield em


def _python(code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-"],
        input=code,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@pytest.mark.slow  # runs real replica processes
@pytest.mark.parametrize("block", EMULATOR, ids=_ids(EMULATOR))
def test_python_block_runs_against_a_real_emulator(block: Block, emulator: object, tmp_path: Path) -> None:
    """The block as written, with the emulator's default endpoints standing for the test's emulator (its
    ports are free ones: another emulator may hold the defaults on this machine)."""
    rest, grpc_target = emulator.rest_endpoint, emulator.grpc_target  # type: ignore[attr-defined]
    code = block.code.replace("http://127.0.0.1:8780", rest).replace("127.0.0.1:8781", grpc_target)
    env = {**_env(tmp_path), "VERTEX_EMULATOR_ENDPOINT": rest}
    result = _python(code, tmp_path, env)
    assert result.returncode == 0, f"{block.id}:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    for shown in _expected_prints(block.code):
        assert shown in result.stdout, f"{block.id}: prints {result.stdout!r}, the page says {shown!r}"


@pytest.mark.slow  # runs real replica processes
@pytest.mark.parametrize("block", PYTEST, ids=_ids(PYTEST))
def test_pytest_block_passes_with_the_emulators_plugin(block: Block, tmp_path: Path) -> None:
    """The block saved as a test file and run by pytest, which finds the fixtures through the plugin's
    entry point alone (no conftest)."""
    (tmp_path / "test_from_the_docs.py").write_text(block.code, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    tests = len(re.findall(r"^def test_\w+\(", block.code, re.M))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "test_from_the_docs.py",
        ],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, f"{block.id}:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}"
    assert re.search(rf"\b{tests} passed\b", result.stdout), result.stdout[-2000:]


@pytest.mark.parametrize("block", README_PLAIN, ids=_ids(README_PLAIN))
def test_readme_python_block_runs(block: Block, tmp_path: Path) -> None:
    result = _python(block.code, tmp_path, _env(tmp_path))
    assert result.returncode == 0, f"{block.id}:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"


# -- shell -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", EXECUTED, ids=_ids(EXECUTED))
def test_shell_block_runs(block: Block, tmp_path: Path) -> None:
    env = _env(tmp_path)
    Path(env["AIRFLOW_HOME"]).mkdir()
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{block.id}:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"


def _exported_connections(block: Block) -> Iterator[tuple[str, str]]:
    for word in shlex.split(block.code.replace("\\\n", " "), comments=True):
        name, eq, value = word.partition("=")
        if eq and name.startswith("AIRFLOW_CONN_"):
            yield name, value


def test_the_connections_the_shell_blocks_export_are_valid() -> None:
    from airflow_vertex_dist.hooks.connection import VertexConnection

    checked = 0
    for block in SHELL:
        for name, value in _exported_connections(block):
            conn = json.loads(value)
            conn_id = name.removeprefix("AIRFLOW_CONN_").lower()
            VertexConnection.from_extra(conn.get("extra", {}), conn_id=conn_id, conn_type=conn["conn_type"])
            checked += 1
    assert checked >= 5


# -- data --------------------------------------------------------------------------------------------


def test_json_blocks_parse_and_a_capacity_file_is_valid() -> None:
    from vertex_emulator.capacity.settings import CapacitySettings

    blocks = [b for b in BLOCKS if b.lang == "json"]
    assert blocks
    for block in blocks:
        data = json.loads(block.code)
        if "stockout_after_s" in data:
            CapacitySettings.model_validate(data)


def test_yaml_blocks_are_valid_scenarios() -> None:
    """A ``yaml`` block is a scenario file: the emulator's loader reads it without an error."""
    from vertex_emulator.scenario.loader import parse_scenario

    blocks = [b for b in BLOCKS if b.lang == "yaml"]
    assert blocks
    for block in blocks:
        code = block.code
        if code.strip().startswith("--8<--"):  # a file of the repository, included as it is
            code = (ROOT / code.strip().split('"')[1]).read_text()
        assert parse_scenario(code, block.id).version == 1


def test_ini_blocks_set_options_the_provider_declares() -> None:
    from airflow_vertex_dist.get_provider_info import get_provider_info

    declared = {
        (section, option)
        for section, body in get_provider_info()["config"].items()
        for option in body["options"]
    }
    blocks = [b for b in BLOCKS if b.lang == "ini"]
    assert blocks
    for block in blocks:
        parser = configparser.ConfigParser()
        parser.read_string(block.code)
        for section in parser.sections():
            for option in parser.options(section):
                assert (section, option) in declared, f"{block.id}: [{section}] {option}"


def test_the_billing_queries_join_on_the_labels_the_provider_sets() -> None:
    """Every label key a ``sql`` block (docs/how-to/cost.md: a Cloud Billing export joined to Airflow
    runs) reads is one a job of this provider carries, and ``managed-by`` is matched to its value."""
    from airflow_vertex_dist.hooks.labels import (
        BUDGET_LABEL,
        MANAGED_BY_VALUE,
        SPEC_LABEL,
        run_labels,
        rung_label,
    )

    blocks = [b for b in BLOCKS if b.lang == "sql"]
    assert blocks, "no sql block: the billing query is gone from the docs"
    carried = {*run_labels("d", "t", "r"), *rung_label(1), SPEC_LABEL, BUDGET_LABEL}
    for block in blocks:
        assert "gcp_billing_export_resource_v1_" in block.code, block.id
        keys = set(re.findall(r"\bkey\s*=\s*'([^']*)'", block.code))
        assert keys and keys <= carried, (block.id, sorted(keys - carried))
        for value in re.findall(r"key\s*=\s*'managed-by'\s+AND\s+value\s*=\s*'([^']*)'", block.code):
            assert value == MANAGED_BY_VALUE, block.id
    used = {k for b in blocks for k in re.findall(r"\bkey\s*=\s*'([^']*)'", b.code)}
    assert {"airflow-run", "airflow-dag", "airflow-task", "managed-by"} <= used
