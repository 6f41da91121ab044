"""A migrated metadata DB kept between rehearsals (``--db-cache DIR``): one SQLite file per Airflow
version and Airflow settings, copied instead of migrating again.

Migrating a new SQLite metadata DB (every table of Airflow's schema, the DAG bundles' rows) is the same
work for every rehearsal on one Airflow install with the same settings: the first rehearsal with a cache
keeps a copy of its DB made right after the migration (before any DAG is stored in it), and later ones
copy that file. The file is named by the Airflow core distribution's version and a digest of every
``AIRFLOW*`` setting of the Airflow processes' environment (``--env`` included) but their home, the
provider's own section (``AIRFLOW__VERTEX_DIST__*``) and connections and variables (``AIRFLOW_CONN_*``,
``AIRFLOW_VAR_*``), none of which the migration reads: a new Airflow or another Airflow setting makes
(and keeps) a DB of its own. A copy is written beside its name and renamed into place, so rehearsals
sharing a cache never read half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Mapping
from contextlib import closing
from importlib import metadata
from pathlib import Path

__all__ = ["DB_NAME", "cached_db", "restore", "save"]

#: the metadata DB's file in an ``AIRFLOW_HOME`` (Airflow's default SQLite connection)
DB_NAME = "airflow.db"
#: environment the migration does not read: the home (each rehearsal's own), the provider's settings,
#: connections and variables
_NOT_READ = ("AIRFLOW_HOME", "AIRFLOW__VERTEX_DIST__", "AIRFLOW_CONN_", "AIRFLOW_VAR_")


def _airflow_version() -> str:
    for distribution in ("apache-airflow-core", "apache-airflow"):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def cached_db(cache_dir: Path, env: Mapping[str, str]) -> Path:
    """Where the cache in ``cache_dir`` keeps the DB of Airflow processes run with ``env``."""
    settings = {k: v for k, v in env.items() if k.startswith("AIRFLOW") and not k.startswith(_NOT_READ)}
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir / f"airflow-{_airflow_version()}-{digest}.db"


def restore(cached: Path, home: Path) -> bool:
    """Copy ``cached`` into ``home`` as its metadata DB: False (nothing copied) when it is not there."""
    if not cached.is_file():
        return False
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cached, home / DB_NAME)
    return True


def save(db: Path, cached: Path) -> None:
    """Keep a consistent copy of the SQLite DB ``db`` (SQLite's online backup: whatever its journal holds
    is in it) as ``cached``, written beside it and renamed into place."""
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f".{cached.name}.{os.getpid()}.partial")
    with closing(sqlite3.connect(db)) as source, closing(sqlite3.connect(partial)) as copy:
        source.backup(copy)
    os.replace(partial, cached)
