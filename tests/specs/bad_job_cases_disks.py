"""The bad-spec table's training-job rows on disks, tasks and mounts. Part of `JOB_CASES`
(`bad_job_cases.py`)."""

from __future__ import annotations

from .bad_job_bases import (
    EXEC_IMG,
    GPU,
    IMG,
    Case,
    J,
)

__all__ = ["DISK_CASES"]

DISK_CASES: list[Case] = [
    # -- disks, tasks, mounts
    (
        "disk-small",
        J(("primary.disk", {"boot_disk_size_gb": 50})),
        "primary.disk.boot_disk_size_gb",
        "within [100, 64000]",
    ),
    (
        "disk-type",
        J(("primary.disk", {"boot_disk_type": "pd-fast"})),
        "primary.disk.boot_disk_type",
        "'pd-fast' is not a boot disk type of Vertex AI training (did you mean pd-ssd?)",
    ),
    (
        "disk-pd-balanced",
        J(("workers.disk", {"boot_disk_type": "pd-balanced"})),
        "workers.disk.boot_disk_type",
        "'pd-balanced' is not a boot disk type of Vertex AI training",
    ),
    (
        "disk-hyperdisk-on-n1",
        J(("primary.disk", {"boot_disk_type": "hyperdisk-balanced"})),
        "primary.disk.boot_disk_type",
        "n1-highmem-96 does not take boot disk type hyperdisk-balanced (it takes pd-ssd, pd-standard)",
    ),
    (
        "disk-pd-ssd-on-a3-ultra",
        J(
            ("primary.machine", {"machine_type": "a3-ultragpu-8g", **GPU("NVIDIA_H200_141GB", 8)}),
            ("primary.disk", {"boot_disk_type": "pd-ssd"}),
            ("workers", ...),
        ),
        "primary.disk.boot_disk_type",
        "a3-ultragpu-8g does not take boot disk type pd-ssd (it takes hyperdisk-balanced)",
    ),
    (
        "rs-disk-hyperdisk",
        J(("reduction_server", {"disk": {"boot_disk_type": "hyperdisk-balanced"}})),
        "reduction_server.disk.boot_disk_type",
        "n1-highcpu-16 does not take boot disk type hyperdisk-balanced",
    ),
    ("env-name", J(("primary.container.env", {"1BAD": "x"})), "primary.container.env", "C identifier"),
    (
        "image-empty",
        J(("primary.container.image_uri", " ")),
        "primary.container.image_uri",
        "must not be empty",
    ),
    (
        "package-no-uris",
        J(
            ("primary.container", ...),
            (
                "primary.python_package",
                {"executor_image_uri": EXEC_IMG, "package_uris": [], "python_module": "t.task"},
            ),
        ),
        "primary.python_package.package_uris",
        "at least one package URI",
    ),
    (
        "package-not-gcs",
        J(
            ("primary.container", ...),
            (
                "primary.python_package",
                {
                    "executor_image_uri": EXEC_IMG,
                    "package_uris": ["dist/t.tar.gz"],
                    "python_module": "t.task",
                },
            ),
        ),
        "primary.python_package.package_uris",
        "Cloud Storage location",
    ),
    (
        "package-module",
        J(
            ("primary.container", ...),
            (
                "primary.python_package",
                {
                    "executor_image_uri": EXEC_IMG,
                    "package_uris": ["gs://b/p.tar.gz"],
                    "python_module": "my-task",
                },
            ),
        ),
        "primary.python_package.python_module",
        "dotted Python module name",
    ),
    (
        "package-custom-image",
        J(
            ("primary.container", ...),
            (
                "primary.python_package",
                {"executor_image_uri": IMG, "package_uris": ["gs://b/p.tar.gz"], "python_module": "t.task"},
            ),
        ),
        "primary.python_package.executor_image_uri",
        "must be one of Vertex AI's prebuilt training containers",
    ),
    (
        "nfs-relative-path",
        J(("primary.nfs_mounts", [{"server": "10.0.0.2", "path": "data", "mount_point": "d"}])),
        "primary.nfs_mounts[0].path",
        "must start with '/'",
    ),
]
