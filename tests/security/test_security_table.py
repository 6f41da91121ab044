"""The security table of ``docs/reliability.md``: written from whichever probe figures exist."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.script_files import SCRIPTS, load_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def writer() -> ModuleType:
    return load_script(SCRIPTS / "stack" / "write_reliability.py")


def table(page: str) -> list[str]:
    start = page.index("| probe | input | answer |")
    rows = []
    for line in page[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_every_probe_has_a_row_even_with_no_figures(writer: ModuleType) -> None:
    rows = table(writer.render({}))
    assert len(rows) == len(writer.PROBES)
    assert all(row.endswith("| – | not run |") for row in rows)


def test_recorded_probes_show_their_input_and_answer_as_written(writer: ModuleType, tmp_path: Path) -> None:
    figures = {
        "security_probes": {
            "wildcard_filter": {"input": 'display_name:"*a*a*b" | x', "answer": "empty page in 3 ms"},
            "huge_body": {"input": "Content-Length: 50,000,000", "answer": "413 INVALID_ARGUMENT"},
        },
        "_updated": {"security_probes": "2026-01-01 00:00 UTC"},
    }
    path = tmp_path / "figures.json"
    path.write_text(json.dumps(figures))
    out = tmp_path / "reliability.md"
    assert writer.main(["--figures", str(path), "--out", str(out)]) == 0
    page = out.read_text()
    rows = {row.split(" | ")[0].lstrip("| "): row for row in table(page)}
    titles = dict(writer.PROBES)
    assert rows[titles["wildcard_filter"]] == (
        f'| {titles["wildcard_filter"]} | display\\_name:"\\*a\\*a\\*b" \\| x | empty page in 3 ms |'
    )
    assert "413 INVALID\\_ARGUMENT" in rows[titles["huge_body"]]
    assert rows[titles["dns_rebinding"]].endswith("| not run |")
    assert "(figures of 2026-01-01 00:00 UTC)" in page
