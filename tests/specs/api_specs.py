"""The specs the ``from_api`` tests round-trip and mutate (`test_from_api.py`, `test_from_api_refusals.py`):
the package's examples, a spec that sets every field, and a flex-start one."""

from __future__ import annotations

from airflow_vertex_dist.specs import (
    DistributedTrainingJob,
    HyperparameterTuningJob,
)
from airflow_vertex_dist.specs.examples import (
    A2_MEGAGPU_REDUCTION_SERVER,
    EVALUATOR_EXAMPLE,
    PARAMETER_SERVER_EXAMPLE,
    SEED_REDUCTION_SERVER,
    TUNING_EXAMPLE,
)

__all__ = ["FLEX", "FULL", "SPECS"]


FULL = DistributedTrainingJob.model_validate(
    {
        "display_name": "everything",
        "location": "europe-west4",
        "primary": {
            "machine": {
                "machine_type": "a2-highgpu-1g",
                "accelerator_type": "NVIDIA_TESLA_A100",
                "accelerator_count": 1,
                "gpu_partition_size": "1g.5gb",
                "reservation_affinity": {
                    "reservation_affinity_type": "SPECIFIC_RESERVATION",
                    "key": "compute.googleapis.com/reservation-name",
                    "values": ["projects/p/zones/europe-west4-a/reservations/r"],
                },
            },
            "disk": {"boot_disk_type": "pd-standard", "boot_disk_size_gb": 250},
            "python_package": {
                "executor_image_uri": "europe-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest",
                "package_uris": ["gs://bucket/trainer-0.1.tar.gz"],
                "python_module": "trainer.task",
                "args": ["--epochs=2"],
                "env": {"B": "2", "A": "$(B)"},
            },
            "nfs_mounts": [{"server": "10.0.0.2", "path": "/export", "mount_point": "data"}],
            "lustre_mounts": [
                {"instance_ip": "10.0.0.3", "volume_handle": "v", "filesystem": "fs", "mount_point": "lustre"}
            ],
        },
        "workers": {
            "machine": {
                "machine_type": "a2-highgpu-1g",
                "accelerator_type": "NVIDIA_TESLA_A100",
                "accelerator_count": 1,
            },
            "replica_count": 3,
            "container": {
                "image_uri": "example.com/ml/trainer:1.0",
                "command": ["python", "-m", "t"],
                "args": ["-v"],
            },
        },
        "reduction_server": {"replica_count": 3, "machine_type": "n2-highcpu-16"},
        "evaluators": {
            "machine": {"machine_type": "e2-standard-4"},
            "container": {"image_uri": "example.com/e:1"},
        },
        "scheduling": {
            "timeout": "5400s",
            "restart_job_on_worker_restart": True,
            "strategy": "STANDARD",  # SPOT and FLEX_START consume no reservation (the primary has one)
            "disable_retries": True,
            "max_wait_duration": 0,  # "If set to 0, the job will wait indefinitely": a value, any strategy
        },
        "service_account": "trainer@p.iam.gserviceaccount.com",
        "network": "projects/123/global/networks/vpc",
        "reserved_ip_ranges": ["vertex-range"],
        "psc_interface_config": {
            "network_attachment": "projects/p/regions/europe-west4/networkAttachments/na",
            "dns_peering_configs": [{"domain": "corp.", "target_project": "p", "target_network": "n"}],
        },
        "base_output_directory": "gs://bucket/out",
        "protected_artifact_location_id": "europe-west1",
        "tensorboard": "projects/p/locations/europe-west4/tensorboards/1",
        "enable_web_access": True,
        "enable_dashboard_access": True,
        "persistent_resource_id": "pool-1",
        "experiment": "projects/p/locations/europe-west4/metadataStores/default/contexts/exp",
        "experiment_run": "projects/p/locations/europe-west4/metadataStores/default/contexts/exp-run1",
        "models": ["projects/p/locations/europe-west4/models/m@2"],
        "labels": {"team": "ml", "env": "prod"},
        "encryption_key": "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k",
    }
)

_A100 = {"machine_type": "a2-highgpu-1g", "accelerator_type": "NVIDIA_TESLA_A100", "accelerator_count": 1}
#: flex-start: every pool one machine with an A100 (the DWS page's requirements), a non-zero wait
FLEX = DistributedTrainingJob.model_validate(
    {
        "display_name": "flex",
        "location": "us-central1",
        "primary": {"machine": _A100, "container": {"image_uri": "example.com/ml/trainer:1.0"}},
        "workers": {
            "machine": _A100,
            "replica_count": 2,
            "container": {"image_uri": "example.com/ml/trainer:1.0"},
        },
        "scheduling": {"timeout": "86400s", "strategy": "FLEX_START", "max_wait_duration": 1800.5},
    }
)

SPECS: dict[str, DistributedTrainingJob | HyperparameterTuningJob] = {
    "flex": FLEX,
    "seed": SEED_REDUCTION_SERVER,
    "a2": A2_MEGAGPU_REDUCTION_SERVER,
    "ps": PARAMETER_SERVER_EXAMPLE,
    "evaluator": EVALUATOR_EXAMPLE,
    "tuning": TUNING_EXAMPLE,
    "full": FULL,
}
