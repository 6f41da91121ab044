"""What the example DAGs share: where their files live, the trainer images, and ``gs://`` file access.

Copy this file along with the DAG files that import it (the DAG folder is on ``sys.path`` when
Airflow parses a DAG file). Nothing here imports ``google.cloud`` at module level: parsing a DAG
stays cheap.

Where the jobs run is the business of the ``vertex_dist_default`` connection only: pointed at the
local emulator (``"emulator": true``), the same DAG files run on this machine; pointed at Vertex AI,
in Google Cloud.

- **Images.** ``PS_TRAINER_IMAGE`` and ``DDP_TRAINER_IMAGE`` (from ``trainers.local``) are the images
  holding ``dags/trainers``, with ``python -m trainers.ps_trainer`` / ``python -m trainers.ddp_trainer``
  as entrypoint (``dags/trainers/README.md`` has the Dockerfile): on Vertex AI, push them under your
  registry and change the two names there. The emulator has no images: ``emulator_image_map``
  gives its ``--image-map`` entries, which run the same modules from this folder on the host. By
  hand, from the checkout's root::

      vertex-emulator --gcs-root gcs \
        --image-map "example.com/ml/ps-trainer:1.0=env PYTHONPATH=$PWD/dags python -m trainers.ps_trainer" \
        --image-map "example.com/ml/ddp-trainer:1.0=env PYTHONPATH=$PWD/dags python -m trainers.ddp_trainer"
      export GCS_MOUNT_ROOT=$PWD/gcs   # for the Airflow processes: prep and promote tasks

- **Files.** ``BUCKET`` (``VERTEX_DIST_EXAMPLES_BUCKET``, default ``gs://vertex-dist-examples``)
  holds datasets, job outputs and promoted models. Tasks that run in Airflow (data prep, promote)
  reach ``gs://`` through a local directory standing for it when ``GCS_MOUNT_ROOT`` is set
  (``gs://bucket/a`` is ``$GCS_MOUNT_ROOT/bucket/a``: the emulator's ``--gcs-root``, or a Cloud Storage
  FUSE mount), and through the ``google-cloud-storage`` client otherwise. The trainers' replicas use
  the client (on the emulator it reaches the Cloud Storage API the emulator serves over its
  ``--gcs-root``), so both sides see the same objects.
- **Polling.** ``POLL_INTERVAL`` (``VERTEX_DIST_EXAMPLES_POLL_INTERVAL``, default 30 s) is how
  often the waits ask for the job's state: a minute-long job on the emulator wants less.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainers.local import DDP_TRAINER_IMAGE, PS_TRAINER_IMAGE, image_map

__all__ = [
    "BUCKET",
    "CONN_ID",
    "DAGS_DIR",
    "DDP_TRAINER_IMAGE",
    "POLL_INTERVAL",
    "PS_TRAINER_IMAGE",
    "copy_tree",
    "emulator_image_map",
    "gcs_mount_root",
    "join",
    "list_tree",
    "local_path",
    "read_text",
    "writable_dir",
]

#: The connection every example uses (the operators' default): emulator or Vertex AI.
CONN_ID = "vertex_dist_default"

#: This folder: the trainers package lives in it.
DAGS_DIR = Path(__file__).resolve().parent

#: Where the examples keep datasets, job outputs and promoted models (no trailing slash).
BUCKET = os.environ.get("VERTEX_DIST_EXAMPLES_BUCKET", "gs://vertex-dist-examples").rstrip("/")

#: Seconds between two looks at a job's state while a task waits on it.
POLL_INTERVAL = float(os.environ.get("VERTEX_DIST_EXAMPLES_POLL_INTERVAL", "30"))

_GCS = "gs://"


def emulator_image_map(python: str | None = None) -> dict[str, list[str]]:
    """The emulator's image map for the example images: each runs its trainer module from this folder
    with ``python`` (default: this interpreter), as the image's entrypoint would."""
    return image_map(python or sys.executable)


def join(base: str, *parts: str) -> str:
    """``join("gs://b/x/", "y", "z/")`` -> ``gs://b/x/y/z``."""
    out = base.rstrip("/")
    for part in parts:
        out = f"{out}/{part.strip('/')}"
    return out


def _split(uri: str) -> tuple[str, str]:
    if not uri.startswith(_GCS):
        raise ValueError(f"uri: must start with gs:// (got {uri!r})")
    bucket, _, obj = uri[len(_GCS) :].partition("/")
    if not bucket or ".." in obj.split("/"):
        raise ValueError(f"uri: needs a bucket and no '..' (got {uri!r})")
    return bucket, obj.strip("/")


def gcs_mount_root() -> Path | None:
    """The local directory standing for ``gs://`` (``GCS_MOUNT_ROOT``), or None to use the client."""
    root = os.environ.get("GCS_MOUNT_ROOT")
    return Path(root) if root else None


def local_path(uri: str) -> Path | None:
    """The local path of ``uri`` under ``gcs_mount_root``, or None when there is no mount."""
    bucket, obj = _split(uri)
    root = gcs_mount_root()
    if root is None:
        return None
    return root / bucket / obj if obj else root / bucket


def _client() -> Any:
    from google.cloud import storage

    return storage.Client()


@contextmanager
def writable_dir(uri: str) -> Iterator[Path]:
    """A local directory whose files end up under ``uri``: the mount itself, or a temporary
    directory uploaded (every file, relative paths kept) when the block ends without error."""
    local = local_path(uri)
    if local is not None:
        local.mkdir(parents=True, exist_ok=True)
        yield local
        return
    bucket_name, prefix = _split(uri)
    with tempfile.TemporaryDirectory(prefix="vertex-dist-upload-") as tmp:
        yield Path(tmp)
        bucket = _client().bucket(bucket_name)
        for path in sorted(p for p in Path(tmp).rglob("*") if p.is_file()):
            rel = path.relative_to(tmp).as_posix()
            bucket.blob(f"{prefix}/{rel}" if prefix else rel).upload_from_filename(str(path))


def list_tree(uri: str) -> dict[str, int]:
    """Every file under ``uri`` as ``{relative path: size in bytes}``."""
    local = local_path(uri)
    if local is not None:
        if not local.is_dir():
            return {}
        files = sorted(p for p in local.rglob("*") if p.is_file())
        return {p.relative_to(local).as_posix(): p.stat().st_size for p in files}
    bucket_name, prefix = _split(uri)
    start = f"{prefix}/" if prefix else ""
    return {
        blob.name[len(start) :]: int(blob.size or 0)
        for blob in _client().list_blobs(bucket_name, prefix=start)
        if not blob.name.endswith("/")
    }


def read_text(uri: str) -> str:
    """The text of the file at ``uri``; FileNotFoundError when there is none."""
    local = local_path(uri)
    if local is not None:
        return local.read_text()
    bucket_name, obj = _split(uri)
    blob = _client().bucket(bucket_name).blob(obj)
    if not blob.exists():
        raise FileNotFoundError(uri)
    return str(blob.download_as_text())


def copy_tree(src: str, dst: str) -> list[str]:
    """Copy every file under ``src`` to ``dst`` (relative paths kept); the copied relative paths.

    FileNotFoundError when ``src`` holds no file."""
    files = list_tree(src)
    if not files:
        raise FileNotFoundError(f"{src}: no files to copy")
    src_local, dst_local = local_path(src), local_path(dst)
    if src_local is not None and dst_local is not None:
        for rel in files:
            target = dst_local / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src_local / rel, target)
        return list(files)
    client = _client()
    (sb, sp), (db, dp) = _split(src), _split(dst)
    source_bucket, target_bucket = client.bucket(sb), client.bucket(db)
    for rel in files:
        blob = source_bucket.blob(f"{sp}/{rel}" if sp else rel)
        source_bucket.copy_blob(blob, target_bucket, f"{dp}/{rel}" if dp else rel)
    return list(files)
