"""The schema cache where it cannot write, and the mode of the file it writes.

A process that cannot write the cache must cost what no cache costs: it builds only the schemas it
uses (before, it built every spec model's schema for a file it then failed to write, in every
process). A written file is readable by others, like the ``.pyc`` beside it.
"""

from __future__ import annotations

import stat
from pathlib import Path

from airflow_vertex_dist.specs._schema_cache import ENV_VAR

from .test_schema_cache import COUNT_GENERATED, _cache_files, _probe, _run

#: Builds one small spec model, as a DAG file with one task builds a few; prints what was generated.
ONE_MODEL = COUNT_GENERATED + """
import json

from airflow_vertex_dist.specs import Machine
Machine(machine_type="n1-standard-4")
print(json.dumps({"generated": generated}))
"""


def _generated(env: dict[str, str | None]) -> list[str]:
    return list(_run(env, "-c", ONE_MODEL)["generated"])


def test_an_unwritable_place_builds_only_what_the_process_uses(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a directory under a file can never be made, whoever runs
    off = _generated({ENV_VAR: "off"})
    assert 1 <= len(off) <= 3 and "Machine" in off, off
    assert _generated({ENV_VAR: str(blocker / "cache")}) == off
    beside = {ENV_VAR: None, "PYTHONPYCACHEPREFIX": str(blocker / "pycache"), "PYTHONDONTWRITEBYTECODE": None}
    assert _generated(beside) == off  # the default place, in a read-only tree
    assert _generated({**beside, "PYTHONDONTWRITEBYTECODE": "1"}) == off
    # Where it can write, the first process builds every model once, for all later ones.
    assert len(_generated({ENV_VAR: str(tmp_path / "cache")})) > 20


def test_the_file_is_readable_by_others_like_the_bytecode(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _probe({ENV_VAR: str(cache)})
    [written] = _cache_files(cache)
    source = Path(__file__).resolve().parents[2] / "airflow_vertex_dist" / "specs" / "_base.py"
    assert stat.S_IMODE(written.stat().st_mode) == (stat.S_IMODE(source.stat().st_mode) | 0o200) & 0o666
    assert stat.S_IMODE(written.stat().st_mode) & 0o044 == 0o044, oct(written.stat().st_mode)
