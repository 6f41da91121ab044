"""``airflow-vertex-dist demo``: the seed's Reduction Server example, rendered and explained."""

from __future__ import annotations

import json

__all__ = ["run_demo"]


def run_demo() -> int:
    from airflow_vertex_dist.specs import pools_table
    from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER

    spec = SEED_REDUCTION_SERVER
    body = spec.to_api(location="us-central1")
    pools = body["jobSpec"]["workerPoolSpecs"]
    print(f"== {spec.display_name}: the Reduction Server example of Vertex AI's distributed-training page\n")
    print(pools_table(spec))
    print(f"\n{len(pools)} worker pools in the request; pool 2 runs {pools[2]['containerSpec']['imageUri']}")
    print("\n== CustomJob request body (POST .../customJobs):\n")
    print(json.dumps(body, sort_keys=True, indent=2))
    return 0
