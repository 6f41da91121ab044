"""The spec models' pydantic core schemas, kept across processes beside the package's bytecode.

Why: a DAG processor parses a DAG file in a fresh process every time. The first spec of each model class
a DAG file builds makes pydantic generate that class's core schema, in Python, walking every field and
nested model: about a fifth of what the package adds to a parse (a Reduction Server training task and
a tuning task), every parse, for a result that only changes when this package or pydantic does.

What: the first process that builds a spec model's schema while no valid cache exists builds the core
schema of every spec model and writes them to one file; later processes hand pydantic the stored schema
through the model's ``__get_pydantic_core_schema__`` hook (documented pydantic API). Pydantic then
cleans it and builds the validator and serializer from it (in Rust) exactly as it does when a model's
schema embeds an already-built model's schema, so validation, errors, serialization and JSON schemas
are the same as without the cache (``tests/specs/test_schema_cache.py`` compares every model both ways).

Where: ``spec-schemas-<versions>-<hash>.pickle`` in the specs package's ``__pycache__`` directory
(honouring ``PYTHONPYCACHEPREFIX``), written only when Python writes bytecode (not under
``PYTHONDONTWRITEBYTECODE``), like a ``.pyc``. The name carries the interpreter, pydantic and
pydantic-core versions and a hash of the size and modification time of every spec module's source
(what a ``.pyc`` is checked against), so an upgrade or an edit makes a new file; writing it removes the
files of older sources there (one source tree lives beside its bytecode).
``AIRFLOW_VERTEX_DIST_SCHEMA_CACHE`` overrides the place: ``off`` turns the cache off; a directory keeps
the file there, always written and never pruned (several trees or environments may share it, each with
its own file). ``airflow-vertex-dist warm-schema-cache`` writes it ahead, e.g. while building an image
whose site-packages is read-only at run time.

Trust: the file is a pickle, loaded with the same trust Python gives the ``.pyc`` files beside it (both
are code run on import); a directory others can write is as unsafe for one as for the other. Any file
that does not load (truncated, from another layout) is ignored and the schema is built as usual.
Writers write a temporary file and rename it, so concurrent parses never read a half-written cache.
A process that cannot write there (a read-only site-packages, a directory it may not write) finds out
before it builds anything more than it uses, so it costs what no cache costs. The file takes the read
bits of the specs' sources, as a ``.pyc`` does: a cache warmed by root at image build is readable by
the user Airflow runs as.

Hand-written: pydantic has no cross-process schema cache of its own. A core schema is plain data whose
classes and functions (the spec models and their validators) pickle by reference, which is what this
module relies on; it is the glue between that and pydantic's hook.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic_core import CoreSchema

__all__ = ["ENV_VAR", "cache_file", "completed", "lookup", "register", "warm"]

ENV_VAR = "AIRFLOW_VERTEX_DIST_SCHEMA_CACHE"
_OFF = {"off", "0", "false", "no", "none", ""}
_PREFIX = "spec-schemas-"
#: the specs package: importing it imports every module that defines a spec model (a test keeps that)
_PACKAGE = __name__.rpartition(".")[0]


class _State:
    """Per-process state: the loaded file's entries and whether this process should write one."""

    loaded = False
    path: Path | None = None
    writable = False
    entries: dict[str, bytes] = {}
    #: the loaded file was missing, stale or unreadable: the first schema built here writes a new one
    cold = False
    writing = False
    #: every spec model class defined so far, in definition order (see ``register``)
    models: list[type[BaseModel]] = []


def _settings() -> tuple[Path | None, bool]:
    """(directory, whether to write there), or (None, False) when the cache is off."""
    raw = os.environ.get(ENV_VAR)
    if raw is not None:
        if raw.strip().lower() in _OFF:
            return None, False
        return Path(raw).expanduser(), True
    return Path(importlib.util.cache_from_source(__file__)).parent, not sys.dont_write_bytecode


def _versions() -> str:
    """The part of the file name that differs between interpreters and pydantic versions, so that two
    of them sharing a cache directory keep one file each instead of replacing each other's."""
    import pydantic
    import pydantic_core

    return f"{sys.implementation.cache_tag}-pydantic{pydantic.VERSION}-core{pydantic_core.__version__}"


def _key() -> str | None:
    digest = hashlib.sha256(sys.version.encode() + b"\0")
    here = Path(__file__).parent
    try:
        for name in sorted(os.listdir(here)):
            if name.endswith(".py"):  # size and mtime, as a .pyc is checked against its source
                stat = os.stat(here / name)
                digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    except OSError:
        return None  # no sources to key on (an unusual install): no cache
    return f"{_versions()}-{digest.hexdigest()[:16]}"


def cache_file() -> Path | None:
    """This process's cache file (existing or not), or None when the cache is off."""
    directory, _ = _settings()
    key = _key() if directory is not None else None
    return None if directory is None or key is None else directory / f"{_PREFIX}{key}.pickle"


def _load() -> None:
    _State.loaded = True
    path = cache_file()
    if path is None:
        return
    _State.path = path
    _State.writable = _settings()[1]
    try:
        with path.open("rb") as fh:
            entries = pickle.load(fh)
        if not isinstance(entries, dict):
            raise TypeError("not a dict")
        _State.entries = entries
    except Exception:  # missing, truncated, or not ours: build as usual, and write a fresh one
        _State.entries = {}
        _State.cold = True


def _name(cls: type[Any]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def lookup(cls: type[BaseModel]) -> CoreSchema | None:
    """The stored core schema of spec model ``cls``, as a fresh object, or None (build it as usual)."""
    if not _State.loaded:
        _load()
    entry = _State.entries.get(_name(cls))
    if entry is None:
        return None
    try:
        schema: CoreSchema = pickle.loads(entry)  # a fresh copy each time: pydantic edits it in place
    except Exception:
        _State.entries = {}
        _State.cold = True
        return None
    return schema


def register(cls: type[BaseModel]) -> None:
    """Record spec model ``cls``: the spec base class calls this for each subclass as it is defined.

    Models register themselves so that this module needs nothing of the models' own modules (it sits
    below them). Only the package's own models are cached: a user's subclass elsewhere builds its schema
    as usual."""
    if cls.__module__.startswith(f"{_PACKAGE}.") and cls not in _State.models:
        _State.models.append(cls)


def _initializing(name: str) -> bool:
    module = sys.modules.get(name)
    return module is None or getattr(getattr(module, "__spec__", None), "_initializing", False)


def _spec_models() -> list[type[BaseModel]] | None:
    """Every spec model class, or None while the specs package or a model's module is being imported
    (the package imports every model module, so once it is done every model is registered)."""
    if _initializing(_PACKAGE) or any(_initializing(cls.__module__) for cls in _State.models):
        return None
    return list(_State.models)


def _open_temp(path: Path) -> tuple[int, str]:
    """A temporary file beside ``path``, readable as the specs' sources are (OSError where it cannot be
    written). ``mkstemp`` makes it private (0600); like a ``.pyc``, which takes its source's mode, the
    cache takes the sources' read bits, so a cache warmed by root while building an image is read by
    the user who runs Airflow there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{_PREFIX}", dir=path.parent)
    try:
        source_mode = os.stat(__file__).st_mode
        os.fchmod(fd, (source_mode | 0o200) & 0o666)
    except BaseException:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        raise
    return fd, tmp


def _write(path: Path, models: list[type[BaseModel]], opened: tuple[int, str] | None = None) -> None:
    fd, tmp = opened if opened is not None else _open_temp(path)
    try:
        entries = {}
        for cls in models:
            if not cls.__pydantic_complete__:
                cls.model_rebuild()
            entries[_name(cls)] = pickle.dumps(
                cls.__pydantic_core_schema__, protocol=pickle.HIGHEST_PROTOCOL
            )
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(entries, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if os.environ.get(ENV_VAR) is None:  # beside the bytecode: one source tree, so older files are stale
        for old in path.parent.glob(f"{_PREFIX}{_versions()}-*.pickle"):
            if old != path:
                old.unlink(missing_ok=True)
    _State.entries = entries
    _State.cold = False


def completed(cls: type[BaseModel]) -> None:
    """Called when a spec model's schema is built: on a cold cache, build all and write the file."""
    if not (_State.cold and _State.writable) or _State.writing or _State.path is None:
        return
    models = _spec_models()
    if models is None:
        return
    _State.writing = True
    try:
        # The file is opened before any other schema is built: where it cannot be written (a read-only
        # site-packages), the process builds only the schemas it uses, as with no cache at all.
        opened = _open_temp(_State.path)
        _write(_State.path, models, opened)
    except Exception:  # best effort, like writing a .pyc: a read-only place just means no cache
        _State.cold = False
    finally:
        _State.writing = False


def warm() -> Path | None:
    """Build every spec model's schema and write the cache now; the file written, or None when off."""
    importlib.import_module(_PACKAGE)
    path = cache_file()
    models = _spec_models()
    if path is None or models is None:
        return None
    _State.loaded, _State.path = True, path
    _write(path, models)
    return path
