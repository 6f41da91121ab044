"""``make floors`` (scripts/check_floors.py): how it reads uv's resolution and what it fails on.

The script itself resolves against the package index in ``make test``'s first stage; here uv is a
script that prints a resolution in uv's own output format, so the judgement is tested offline.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.version import Version

from tests.script_files import SCRIPTS, load_script

floors_script = load_script(SCRIPTS / "check_floors.py")


def _output(versions: dict[str, tuple[str, list[str]]]) -> str:
    """uv pip compile's output (``--no-header``) for ``{name: (version, [via, ...])}``."""
    lines = ["-e .", "    # via -r floors.in"]
    for name, (version, via) in versions.items():
        lines.append(f"{name}=={version}")
        if len(via) == 1:
            lines.append(f"    # via {via[0]}")
        else:
            lines += ["    # via", *(f"    #   {v}" for v in via)]
    return "\n".join(lines) + "\n"


def _fake_uv(tmp_path: Path, stdout: str, rc: int = 0, stderr: str = "") -> str:
    out = tmp_path / "out.txt"
    out.write_text(stdout)
    uv = tmp_path / "uv"
    uv.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stdout.write(open({str(out)!r}).read())\n"
        f"sys.stderr.write({stderr!r})\nsys.exit({rc})\n"
    )
    uv.chmod(0o755)
    return str(uv)


def _at_floors(**overrides: tuple[str, list[str]]) -> dict[str, tuple[str, list[str]]]:
    pins = {name: (str(v), ["airflow-vertex-dist"]) for name, v in floors_script.floors().items()}
    pins.update(overrides)
    return pins


RELEASE = floors_script.Release("3.3.2", "3.10", "2026-09-18")


def test_every_declared_floor_is_read_from_both_distributions() -> None:
    found = floors_script.floors()
    assert found["google-cloud-aiplatform"] >= Version("1.60")  # both declare it
    assert "psutil" in found and "cloudml-hypertune" not in found  # the emulator's; an extra with no floor
    assert "apache-airflow" not in found  # pinned per release


def test_the_releases_are_the_matrixs_dated_airflow_releases_once_each() -> None:
    releases = floors_script.releases()
    assert [r.airflow for r in releases] == sorted({r.airflow for r in releases}, key=Version)
    assert all(r.date and r.python for r in releases) and len(releases) >= 3


def test_floors_that_resolve_pass(tmp_path: Path) -> None:
    uv = _fake_uv(tmp_path, _output(_at_floors()))
    assert floors_script.check(RELEASE, uv, tmp_path) == ([], [])


def test_a_floor_lifted_by_another_package_is_listed_not_failed(tmp_path: Path) -> None:
    uv = _fake_uv(
        tmp_path, _output(_at_floors(pyyaml=("6.0.3", ["airflow-vertex-dist", "apache-airflow-core"])))
    )
    problems, lifted = floors_script.check(RELEASE, uv, tmp_path)
    assert problems == []
    assert lifted == [
        f"pyyaml {floors_script.floors()['pyyaml']} -> 6.0.3 (asked for by apache-airflow-core)"
    ]


def test_a_floor_only_we_ask_for_that_resolves_higher_fails(tmp_path: Path) -> None:
    uv = _fake_uv(
        tmp_path, _output(_at_floors(grpcio=("1.99.0", ["airflow-vertex-dist", "vertex-emulator"])))
    )
    problems, _ = floors_script.check(RELEASE, uv, tmp_path)
    floor = floors_script.floors()["grpcio"]
    assert problems == [f"grpcio: resolves to 1.99.0, not its floor {floor}, and only we ask for it"]


def test_a_resolution_that_fails_fails_with_uvs_words(tmp_path: Path) -> None:
    uv = _fake_uv(tmp_path, "", rc=1, stderr="No solution found when resolving dependencies")
    problems, _ = floors_script.check(RELEASE, uv, tmp_path)
    assert len(problems) == 1 and "No solution found" in problems[0]


@pytest.mark.parametrize("missing", ["pydantic"])
def test_a_declared_dependency_missing_from_the_resolution_fails(tmp_path: Path, missing: str) -> None:
    pins = _at_floors()
    del pins[missing]
    problems, _ = floors_script.check(RELEASE, _fake_uv(tmp_path, _output(pins)), tmp_path)
    assert problems == [f"{missing}: declared but not in the resolution"]
