"""The code blocks of README.md, emulator/README.md and docs/, and how each one is run by a test.

Used by ``tests/test_docs.py`` (the site's blocks) and ``tests/test_doc_blocks.py`` (every block of the
three). A block is run one of these ways:

- ``python`` with ``exec="on"`` (docs/ only): by the strict site build (markdown-exec);
- ``python`` defining ``test_*`` functions that take the pytest plugin's fixtures: by ``pytest``;
- ``python`` that talks to an emulator (the SDK helper ``vertex_emulator.sdk``, ``aiplatform.``, the
  default endpoint ``127.0.0.1:8780``): in a fresh interpreter, beside a running emulator;
- any other ``python``: in a fresh interpreter;
- a shell block: executed in bash, unless the line before it says why not, in the words of ``REASONS``
  (``<!-- docs-test: not run: starts a long-running server -->``), each word checked against the
  block's own commands, or unless a page-long session test runs it (``SESSIONS``).

Blocks that are not code (``text`` output, a ``mermaid`` diagram) are shown, not run; ``json``,
``ini`` and ``yaml`` (scenario files) blocks are parsed and checked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BLOCKS",
    "DOCS",
    "NOT_CODE",
    "REASONS",
    "ROOT",
    "SESSIONS",
    "SHELL_LANGS",
    "SOURCES",
    "Block",
    "blocks_of",
    "python_runner",
    "start_session",
]

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SOURCES = [ROOT / "README.md", ROOT / "emulator" / "README.md", *sorted(DOCS.rglob("*.md"))]
SHELL_LANGS = ("bash", "sh", "console", "shell")
NOT_CODE = ("text", "mermaid")

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S
)
_MARK = re.compile(r"<!-- docs-test: not run: (?P<reason>[^<>]+?) -->[ \t]*\n[ \t]*\Z")

#: Why a shell block may be left unrun, each with what its commands must show for the reason to hold.
REASONS: dict[str, re.Pattern[str]] = {
    "installs packages": re.compile(r"\b(pip|uv pip) install\b"),
    "starts a long-running server": re.compile(
        r"^\s*(vertex-emulator\b(?!.*--help)"
        r"|airflow (standalone|api-server|scheduler|triggerer|dag-processor)\b)",
        re.M,
    ),
    "runs for minutes": re.compile(
        r"^\s*(make (demo|test)\b|(cd \S+ && )?pytest\b|airflow-vertex-dist rehearse\b)", re.M
    ),
    "needs a running Airflow scheduler": re.compile(r"^\s*airflow (backfill|dags trigger)\b", re.M),
    "writes to Airflow's metadata database": re.compile(r"^\s*airflow (pools|variables|connections) ", re.M),
}

#: Pages a test runs from top to bottom as one shell session: the page, and the test that does.
SESSIONS = {
    "docs/quickstart.md": "tests/test_quickstart.py",
    "docs/how-to/real-airflow.md": "tests/test_real_airflow_page.py",
}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    options: str
    code: str
    #: why the block is not run (from the marker line before it), or None
    not_run: str | None = None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runner(self) -> str:
        """How the block is run, when it is python (``python_runner``)."""
        return python_runner(self.options, self.code)


def blocks_of(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        info = match["info"].strip()
        lang, _, options = info.partition(" ")
        indent = match["indent"]
        body = "\n".join(line[len(indent) :] for line in match["body"].splitlines())
        mark = _MARK.search(text, 0, match.start())
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, line, lang, options, body, mark["reason"] if mark else None))
    return found


BLOCKS = [block for page in SOURCES for block in blocks_of(page)]

_EMULATOR = re.compile(r"vertex_emulator import sdk|vertex_emulator\.sdk|\baiplatform\.|127\.0\.0\.1:878\d")


def python_runner(options: str, code: str) -> str:
    """How a python block (its fence's options and its code) is run: ``build``, ``include``, ``pytest``,
    ``emulator`` or ``plain``."""
    if 'exec="on"' in options:
        return "build"
    if code.strip().startswith("--8<--"):
        return "include"
    if re.search(r"^def test_\w+\(", code, re.M):
        return "pytest"
    if _EMULATOR.search(code):
        return "emulator"
    return "plain"


#: runs bash (its arguments after ``-c``'s code) with SIGINT and SIGQUIT at their defaults, as in a terminal:
#: a pytest started as a background job of a non-interactive shell (``make test &`` in a script) ignores
#: both, its children inherit that, a shell cannot undo it (``set -m`` and ``trap`` leave a signal ignored at
#: entry as it is) and Python keeps an ignored SIGINT ignored, so ``airflow standalone`` would never see the
#: SIGINT that stops it
_DEFAULT_SIGNALS = (
    "import os, signal, sys\n"
    "for sig in (signal.SIGINT, signal.SIGQUIT):\n"
    "    signal.signal(sig, signal.SIG_DFL)\n"
    "os.execvp('bash', ['bash', *sys.argv[1:]])\n"
)


def start_session(script: str, tmp_path: Path) -> subprocess.Popen[str]:
    """Start a page's shell session (``script``, run with ``bash -euo pipefail``) as a user would: in an
    empty ``work`` directory under ``tmp_path``, ``HOME`` there, no ``AIRFLOW*``/``GOOGLE_*`` variables,
    this interpreter's ``bin`` first on ``PATH``, SIGINT and SIGQUIT not ignored (as in a terminal, whatever
    the test's own process ignores); a session of its own, stdout and stderr together."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "GOOGLE_"))}
    env["HOME"] = str(tmp_path)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    work = tmp_path / "work"
    work.mkdir()
    return subprocess.Popen(
        [sys.executable, "-c", _DEFAULT_SIGNALS, "-euo", "pipefail", "-c", script],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
