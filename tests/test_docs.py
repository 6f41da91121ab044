"""The documentation site: it builds strictly, and no example in it lies.

- ``mkdocs build --strict`` succeeds (a warning fails it). The pages' ``python exec="on"`` blocks run
  during that build (markdown-exec), against the real code and a real emulator; a block that raises
  is a build warning, so the strict build is what checks them. The test also checks that their
  output really is in the pages (the numbers the docs quote are the ones the code computed).
- Every other ``python`` block is run here, in a fresh interpreter; the quickstart DAG is also run
  end to end with ``dag.test()`` against the emulator.
- Names the pages mention exist: dotted ``airflow_vertex_dist...`` paths resolve, ``Vertex*``
  operator/sensor/trigger/hook classes are defined, the emulator flags are the CLI's, and every
  ``airflow-vertex-dist`` / ``make`` command line in a shell block parses (the ``render`` ones run).
"""

from __future__ import annotations

import argparse
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
from doc_blocks import Block, blocks_of, python_runner

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))

BLOCKS = [block for page in PAGES for block in blocks_of(page)]
#: blocks that show a file of the repository as it is (pymdownx.snippets), e.g. an example DAG
INCLUDES = [b for b in BLOCKS if b.code.strip().startswith("--8<--")]
#: the plain python blocks run here; those that talk to an emulator or are pytest tests are run by
#: tests/test_doc_blocks.py (tests/doc_blocks.py says which is which)
PLAIN_PYTHON = [
    b
    for b in BLOCKS
    if b.lang == "python" and b not in INCLUDES and python_runner(b.options, b.code) == "plain"
]
SHELL = [b for b in BLOCKS if b.lang in ("bash", "sh", "console")]


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["AIRFLOW_HOME"] = str(tmp_path / "airflow-home")
    env["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    return env


# -- the site ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_site_builds_strictly_and_shows_what_the_code_computed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        cwd=ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert not re.search(r"^WARNING\b", output, re.M), output[-6000:]

    def page(path: str) -> str:
        return (site / path / "index.html").read_text(encoding="utf-8")

    # Reduction Server sizing: the seed's 16 reducers and the a2-megagpu example's 25, as computed.
    rs = page("concepts/reduction-server")
    assert "16 (auto)" in rs and "512 Gbps &gt;= 500 Gbps" in rs
    assert "25 (auto)" in rs and "europe-docker.pkg.dev" in rs
    # Pool positions: the parameter-server layout really renders a {} placeholder in position 1.
    assert "the Reduction Server image runs only in worker pool 2" in page("concepts/pools")
    # The replica environment comes from the emulator's own function.
    env_page = page("concepts/replica-environment")
    assert "1234567890-workerpool1-1" in env_page and "CLOUD_ML_TRIAL_ID" in env_page
    assert "CLOUD_ML_PROJECT_ID=my-project" in env_page and "CLOUD_ML_REGION=us-central1" in env_page
    # The emulator guide ran real jobs.
    emulator = page("emulator")
    assert "emulated Reduction Server replica: accepted and idle" in emulator
    assert "exited with a non-zero status of 3" in emulator
    assert "injected fault: GetCustomJob failed with UNAVAILABLE" in emulator
    assert "FailedPrecondition: Cannot delete CustomJob" in emulator
    assert "JOB_STATE_FAILED code 13 - The emulator restarted while the job was RUNNING" in emulator
    # The retraining how-to rendered its templated spec for a real interval.
    assert "retraining/models/20261116-20261123" in page("how-to/retraining")
    assert "prep_to_train/datasets/20261130" in page("how-to/prep-to-train")
    # The example DAG files are shown as they are.
    assert "vertex_dist_backfill_tuning" in page("how-to/backfill")
    # The API reference was generated from the docstrings.
    assert "find_or_create" in page("reference/hooks")
    assert "VertexTrialSensor" in page("reference/sensors")
    for html in site.rglob("*.html"):
        assert "Traceback (most recent call last)" not in html.read_text(encoding="utf-8"), html


# -- the other python blocks -------------------------------------------------------------------------


def test_every_python_block_is_run_by_the_build_or_by_this_test() -> None:
    assert PLAIN_PYTHON, "no plain python block found: the block parser is broken"
    odd = [b.id for b in BLOCKS if b.lang in ("py", "python3", "pycon", "pyi")]
    assert not odd, f"python blocks neither the build nor this test runs: {odd}"
    options = {b.options for b in BLOCKS if b.lang == "python" and b not in INCLUDES}
    assert all(not o or 'exec="on"' in o for o in options), options


def test_included_files_exist() -> None:
    for block in INCLUDES:
        (path,) = re.findall(r'--8<-- "([^"]+)"', block.code)
        assert (ROOT / path).is_file(), f"{block.id}: {path}"


@pytest.mark.parametrize("block", PLAIN_PYTHON, ids=[b.id for b in PLAIN_PYTHON])
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    from airflow_vertex_dist.specs.examples import PARAMETER_SERVER_EXAMPLE
    from vertex_emulator.runtime.cluster import cluster_spec, replicas_of

    env = _env(tmp_path)
    metrics = tmp_path / "hypertune" / "output.metrics"
    env["CLOUD_ML_HP_METRIC_FILE"] = str(metrics)
    # blocks of training code read the replica environment: give them a primary's
    job_spec = PARAMETER_SERVER_EXAMPLE.to_api()["jobSpec"]
    replicas = replicas_of(job_spec)
    cluster = {"workerpool0": ["127.0.0.1:41000"], "workerpool2": ["127.0.0.1:41001", "127.0.0.1:41002"]}
    env["CLUSTER_SPEC"] = json.dumps(cluster_spec(cluster, replicas[0], {}))
    result = subprocess.run(
        [sys.executable, "-"],
        input=block.code,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{block.id}:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    reported = re.findall(r'hyperparameter_metric_tag="(\w+)"', block.code)
    if reported:
        lines = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        assert {tag for tag in reported} <= {key for line in lines for key in line}, lines


@pytest.mark.slow
def test_the_quickstart_dag_runs_on_the_emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from operators.harness import CONN_ENV, connection_env, migrate_db, run_dag, ti_state

    from vertex_emulator.testing import running_emulator

    (quickstart,) = [b for b in PLAIN_PYTHON if b.page.name == "quickstart.md" and "DAG(" in b.code]
    namespace: dict[str, object] = {"__name__": "docs_quickstart"}
    exec(compile(quickstart.code, quickstart.id, "exec"), namespace)  # noqa: S102 - the doc's own code
    dag = namespace["dag"]
    migrate_db()
    # the page's python3 "has google-cloud-storage, as the virtualenv this provider is installed in does"
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    with running_emulator(tmp_path) as em:
        monkeypatch.setenv(CONN_ENV, connection_env(em))
        run = run_dag(dag)
        assert ti_state(run, "train") == "success"
        model = em.config.gcs_root / "my-bucket" / "quickstart" / "model" / "model.txt"
        assert model.read_text() == "trained\n"


# -- names and commands ------------------------------------------------------------------------------


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_dotted_names_in_the_docs_resolve() -> None:
    names = set()
    for page in PAGES:
        names |= set(re.findall(r"\bairflow_vertex_dist(?:\.[A-Za-z_][A-Za-z0-9_]*)+", page.read_text()))
    assert names
    missing = []
    for name in sorted(names):
        try:
            _resolve(name)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{name}: {exc}")
    assert not missing, missing


def test_vertex_classes_in_the_docs_exist() -> None:
    source = "\n".join(p.read_text() for p in (ROOT / "airflow_vertex_dist").rglob("*.py"))
    defined = set(re.findall(r"^class (\w+)", source, re.M))
    mentioned = set()
    for page in PAGES:
        mentioned |= set(
            re.findall(r"\bVertex\w*(?:Operator|Sensor|Trigger|Hook|Connection)\b", page.read_text())
        )
    assert mentioned
    assert mentioned <= defined, sorted(mentioned - defined)


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    return {opt for action in parser._actions for opt in action.option_strings}


def test_emulator_flags_in_the_docs_are_the_clis() -> None:
    from vertex_emulator.cli import build_parser
    from vertex_emulator.scenario.__main__ import build_parser as scenario_parser

    flags = _option_strings(build_parser())
    for action in scenario_parser()._actions:  # python -m vertex_emulator.scenario from-history's flags
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                flags |= _option_strings(command)
    mentioned = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+(?!\w)", (DOCS / "emulator.md").read_text()))
    pip_flags = {"--no-index", "--no-deps", "--no-build-isolation", "--target"}  # the emulator's pip call
    assert mentioned - pip_flags <= flags, sorted(mentioned - pip_flags - flags)


def _redirect_at(argv: list[str]) -> int:
    """Where a command line's redirections start (its length when it has none)."""
    return next((i for i, a in enumerate(argv) if a == "&" or re.match(r"^\d?>", a)), len(argv))


def _command_lines(block: Block) -> Iterator[list[str]]:
    """The ``airflow-vertex-dist``, ``vertex-emulator`` and ``make`` command lines of a shell block, split
    like a shell."""
    text = block.code.replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("airflow-vertex-dist ", "vertex-emulator ", "make ")):
            argv = shlex.split(line, comments=True)
            # the command itself: not its redirections or a trailing "&"
            yield argv[: _redirect_at(argv)]


def test_shell_commands_in_the_docs_parse(capsys: pytest.CaptureFixture[str]) -> None:
    from airflow_vertex_dist import cli
    from vertex_emulator.cli import build_parser

    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))
    checked = 0
    for block in SHELL:
        for argv in _command_lines(block):
            if argv[0] == "make":
                assert set(argv[1:]) <= targets, f"{block.id}: {argv}"
            elif argv[0] == "vertex-emulator":
                build_parser().parse_args(argv[1:])
            elif argv[0] == "airflow-vertex-dist":
                if argv[1] == "render" and ":" in argv[2]:
                    assert cli.main(argv[1:]) == 0, f"{block.id}: {argv}"
                    assert json.loads(capsys.readouterr().out)["displayName"]
                elif argv[1] == "rehearse":  # run by tests/rehearse/test_rehearsals.py: parsed here
                    args = cli.build_parser().parse_args(argv[1:])
                    assert (ROOT / args.dag_file).is_file() and (ROOT / args.scenario).is_file(), argv
                else:
                    assert argv[1] == "render", f"{block.id}: {argv}"
            checked += 1
    assert checked >= 4
