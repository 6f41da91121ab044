"""``dags/examples_common.py``: gs:// paths through the local mount, copies, and refusals."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

DAGS = Path(__file__).resolve().parents[2] / "dags"


@pytest.fixture
def common(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(DAGS))
    monkeypatch.setenv("GCS_MOUNT_ROOT", str(tmp_path / "gcs"))
    monkeypatch.setenv("VERTEX_DIST_EXAMPLES_BUCKET", "gs://my-bucket/")
    sys.modules.pop("examples_common", None)
    import examples_common

    yield examples_common
    sys.modules.pop("examples_common", None)


def test_files_go_through_the_mount(common: Any, tmp_path: Path) -> None:
    assert common.BUCKET == "gs://my-bucket"
    assert common.join("gs://b/x/", "/y/", "z/") == "gs://b/x/y/z"
    src = common.join(common.BUCKET, "runs", "1", "model")
    with common.writable_dir(src) as out:
        (out / "model.json").write_text("{}")
        (out / "sub").mkdir()
        (out / "sub" / "w.bin").write_bytes(b"1234")
    assert (tmp_path / "gcs" / "my-bucket" / "runs" / "1" / "model" / "model.json").is_file()
    assert common.list_tree(src) == {"model.json": 2, "sub/w.bin": 4}
    assert common.read_text(common.join(src, "model.json")) == "{}"
    assert sorted(common.copy_tree(src, "gs://other/promoted")) == ["model.json", "sub/w.bin"]
    assert (tmp_path / "gcs" / "other" / "promoted" / "sub" / "w.bin").read_bytes() == b"1234"
    assert common.list_tree("gs://my-bucket/nothing") == {}


def test_refusals_name_the_rule(common: Any) -> None:
    with pytest.raises(ValueError, match=r"uri: must start with gs:// \(got '/tmp/x'\)"):
        common.local_path("/tmp/x")
    with pytest.raises(ValueError, match="uri: needs a bucket and no '..'"):
        common.local_path("gs://b/a/../../etc")
    with pytest.raises(ValueError, match="uri: needs a bucket"):
        common.writable_dir("gs:///x").__enter__()
    with pytest.raises(FileNotFoundError, match="gs://my-bucket/empty: no files to copy"):
        common.copy_tree("gs://my-bucket/empty", "gs://my-bucket/to")
    with pytest.raises(FileNotFoundError):
        common.read_text("gs://my-bucket/missing.json")


def test_the_image_map_runs_the_trainer_modules(common: Any) -> None:
    mapping = common.emulator_image_map("/usr/bin/python3")
    assert mapping[common.PS_TRAINER_IMAGE][-3:] == ["/usr/bin/python3", "-m", "trainers.ps_trainer"]
    assert mapping[common.DDP_TRAINER_IMAGE][-3:] == ["/usr/bin/python3", "-m", "trainers.ddp_trainer"]
    assert all(argv[0] == "env" and argv[1].startswith(f"PYTHONPATH={DAGS}") for argv in mapping.values())


def test_copy_tree_through_the_cloud_storage_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a local mount the helpers use google-cloud-storage, as a replica does; against the
    emulator's storage server ``copy_tree`` copies with objects.copy (``copy_blob``)."""
    from vertex_emulator.cloud_storage.api import StorageServer

    root = tmp_path / "gcs"
    (root / "my-bucket" / "runs" / "1" / "model" / "sub").mkdir(parents=True)
    (root / "my-bucket" / "runs" / "1" / "model" / "model.json").write_text("{}")
    (root / "my-bucket" / "runs" / "1" / "model" / "sub" / "w.bin").write_bytes(b"1234")
    (root / "other").mkdir()
    server = StorageServer(root)
    server.start()
    monkeypatch.syspath_prepend(str(DAGS))
    monkeypatch.delenv("GCS_MOUNT_ROOT", raising=False)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.endpoint)
    sys.modules.pop("examples_common", None)
    try:
        import examples_common as common

        assert sorted(common.copy_tree("gs://my-bucket/runs/1/model", "gs://other/promoted")) == [
            "model.json",
            "sub/w.bin",
        ]
        assert (root / "other" / "promoted" / "sub" / "w.bin").read_bytes() == b"1234"
        assert common.list_tree("gs://other/promoted") == {"model.json": 2, "sub/w.bin": 4}
    finally:
        sys.modules.pop("examples_common", None)
        server.stop()
