"""Run in a process of its own by ``test_endpoint_tls.py`` (as ``endpoint_client.py`` is): the
PersistentResourceService hook, as a task would use it, against the ``vertex_dist_default`` connection
of the environment. Creates a persistent resource (``argv[1]``, its id), reads it, lists the
location's resources and deletes it; prints ``{"name", "created", "listed", "deleted"}``.
"""

from __future__ import annotations

import json
import sys

from airflow_vertex_dist.hooks.connection import RetryPolicy
from airflow_vertex_dist.hooks.persistent_resources import PersistentResourcesHook

POLICY = RetryPolicy(initial_s=0.1, maximum_s=0.5, deadline_s=20.0, rpc_timeout_s=10.0)
BODY = {"resourcePools": [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1"}]}


def main() -> None:
    resource_id = sys.argv[1]
    hook = PersistentResourcesHook(retry_policy=POLICY)
    try:
        resource, created = hook.create_resource(resource_id, BODY)
        listed = [r["name"] for r in hook.list_resources()]
        deleted = hook.delete_resource(resource_id)
    finally:
        hook.close()
    print(json.dumps({"name": resource["name"], "created": created, "listed": listed, "deleted": deleted}))


if __name__ == "__main__":
    main()
