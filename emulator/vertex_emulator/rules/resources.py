"""Rules on the names a job refers to: network, ranges, TensorBoard, experiment, models, persistent
resource, service account, CMEK key, protected-artifact location, DNS peering.

Each format is the one the v1 reference gives for the field (``CustomJobSpec`` in
``custom_job.proto``, ``EncryptionSpec`` in ``encryption_spec.proto``, ``DnsPeeringConfig`` in
``service_networking.proto``, and for ``persistent_resource_id`` the ID rule of
``CreatePersistentResourceRequest.persistent_resource_id``), quoted next to its check below. The rules:
``kms-key`` (the key's form, and its region is the job's), ``network``, ``reserved-ip-ranges`` (they need
``network``; inferred), ``tensorboard``, ``experiment`` (and ``experiment_run``), ``models``,
``persistent-resource-id``, ``service-account`` (an e-mail address: IAM, "Service accounts overview"),
``protected-artifact-location`` (a Vertex AI location, judged by ``rules.machines``) and ``dns-domain``.
"""

from __future__ import annotations

import re
from typing import Any

from vertex_emulator.rules._common import has, problem

__all__ = ["kms_problems", "resource_problems"]

# CustomJobSpec.network: "Format is of the form projects/{project}/global/networks/{network}. Where
# {project} is a project number, as in 12345, and {network} is a network name."
_NETWORK = re.compile(r"projects/\d+/global/networks/[^/\s]+")
# CustomJobSpec.tensorboard: "Format: projects/{project}/locations/{location}/tensorboards/{tensorboard}"
_TENSORBOARD = re.compile(r"projects/[^/\s]+/locations/[^/\s]+/tensorboards/[^/\s]+")
# CustomJobSpec.experiment / experiment_run: "projects/{project}/locations/{location}/metadataStores/
# {metadataStores}/contexts/{experiment-name}" (experiment_run: "{experiment-name}-{experiment-run-name}")
_CONTEXT = re.compile(r"projects/[^/\s]+/locations/[^/\s]+/metadataStores/[^/\s]+/contexts/[^/\s]+")
# CustomJobSpec.models: "projects/{project}/locations/{location}/models/{model}", "also provide the
# version ID or version alias. Example: ...models/{model}@2"
_MODEL = re.compile(r"projects/[^/\s]+/locations/[^/\s]+/models/[^/@\s]+(@[^/@\s]+)?")
# CreatePersistentResourceRequest.persistent_resource_id: "The maximum length is 63 characters, and
# valid characters are /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/."
_PERSISTENT_ID = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")
# EncryptionSpec.kms_key_name: "Has the form: projects/my-project/locations/my-region/keyRings/my-kr/
# cryptoKeys/my-key. The key needs to be in the same region as where the compute resource is created."
_KMS = re.compile(r"projects/[^/\s]+/locations/(?P<location>[^/\s]+)/keyRings/[^/\s]+/cryptoKeys/[^/\s]+")
# A service account is named by its e-mail address (IAM, "Service accounts overview").
_SERVICE_ACCOUNT = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def kms_problems(encryption_spec: Any, location: str, path: str) -> list[str]:
    """``encryption_spec`` (a raw ``EncryptionSpec``) names a key in the job's own region."""
    key = encryption_spec.kms_key_name
    if not key:
        return []  # Required: rules/required.py
    match = _KMS.fullmatch(key)
    where = f"{path}.kms_key_name"
    if match is None:
        return [
            problem(
                where,
                f"must be projects/PROJECT/locations/LOCATION/keyRings/RING/cryptoKeys/KEY (got {key!r})",
            )
        ]
    if match["location"] != location:
        return [
            problem(
                where,
                f"the key must be in the job's region {location} (got a key in {match['location']})",
            )
        ]
    return []


def resource_problems(spec: Any, path: str, location_problems: Any) -> list[str]:
    """The name rules of a raw ``CustomJobSpec``; ``location_problems(location) -> list[str]`` judges a
    Vertex AI location (``protected_artifact_location_id``)."""
    out: list[str] = []
    if spec.network and not _NETWORK.fullmatch(spec.network):
        out.append(
            problem(
                f"{path}.network",
                "must be projects/{project number}/global/networks/{network} (got "
                + repr(spec.network)
                + ")",
            )
        )
    if spec.reserved_ip_ranges and not spec.network:
        # reserved_ip_ranges: "A list of names for the reserved ip ranges under the VPC network".
        out.append(
            problem(f"{path}.reserved_ip_ranges", "needs network: the ranges are reserved in that network")
        )
    if spec.tensorboard and not _TENSORBOARD.fullmatch(spec.tensorboard):
        out.append(
            problem(
                f"{path}.tensorboard",
                "must be projects/PROJECT/locations/LOCATION/tensorboards/TENSORBOARD "
                f"(got {spec.tensorboard!r})",
            )
        )
    for field in ("experiment", "experiment_run"):
        value = getattr(spec, field)
        if value and not _CONTEXT.fullmatch(value):
            out.append(
                problem(
                    f"{path}.{field}",
                    "must be projects/PROJECT/locations/LOCATION/metadataStores/STORE/contexts/NAME "
                    f"(got {value!r})",
                )
            )
    for index, model in enumerate(spec.models):
        if not _MODEL.fullmatch(model):
            out.append(
                problem(
                    f"{path}.models[{index}]",
                    f"must be projects/PROJECT/locations/LOCATION/models/MODEL[@VERSION] (got {model!r})",
                )
            )
    if spec.persistent_resource_id and not _PERSISTENT_ID.fullmatch(spec.persistent_resource_id):
        out.append(
            problem(
                f"{path}.persistent_resource_id",
                "must be 1-63 lowercase letters, digits or '-', starting with a letter and not ending "
                "with '-' "
                f"(got {spec.persistent_resource_id!r})",
            )
        )
    if spec.service_account and not _SERVICE_ACCOUNT.fullmatch(spec.service_account):
        out.append(
            problem(
                f"{path}.service_account",
                f"must be a service account e-mail address (got {spec.service_account!r})",
            )
        )
    if spec.protected_artifact_location_id:
        out.extend(
            problem(f"{path}.protected_artifact_location_id", text.partition(": ")[2] or text)
            for text in location_problems(spec.protected_artifact_location_id)
        )
    if has(spec, "psc_interface_config"):
        for index, peering in enumerate(spec.psc_interface_config.dns_peering_configs):
            # DnsPeeringConfig.domain: "The DNS name suffix of the zone being peered to [...] Must end
            # with a dot."
            if peering.domain and not peering.domain.endswith("."):
                out.append(
                    problem(
                        f"{path}.psc_interface_config.dns_peering_configs[{index}].domain",
                        f"must end with a dot (got {peering.domain!r})",
                    )
                )
    return out
