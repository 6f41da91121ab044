"""Every DAG file in ``dags/`` imports through Airflow's DagBag with no error, fast, and loads no
``google.cloud`` submodule (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

DAGS = Path(__file__).resolve().parents[2] / "dags"

EXPECTED = {
    "backfill_tuning.py": ["vertex_dist_backfill_tuning"],
    "capacity_ladder.py": ["vertex_dist_capacity_ladder"],
    "parameter_server.py": ["vertex_dist_parameter_server"],
    "per_segment.py": ["vertex_dist_per_segment"],
    "persistent_ladder.py": ["vertex_dist_persistent_ladder", "vertex_dist_sweep_persistent_resources"],
    "prep_to_train.py": ["vertex_dist_data_prep", "vertex_dist_train_on_prep"],
    "reduction_server.py": ["vertex_dist_reduction_server"],
    "retraining.py": ["vertex_dist_retraining"],
    "spot_checkpoints.py": ["vertex_dist_spot_checkpoints"],
    "tpu_training.py": ["vertex_dist_tpu_training"],
    "training_logs.py": ["vertex_dist_training_logs", "vertex_dist_training_logs_sync"],
}

PROBE = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path

    dags = Path(sys.argv[1])
    from airflow.dag_processing.dagbag import BundleDagBag

    started = time.monotonic()
    bag = BundleDagBag(dag_folder=dags, bundle_path=dags, safe_mode=True)
    seconds = time.monotonic() - started
    # The bare ``google.cloud`` namespace package is made at interpreter start by an nspkg .pth
    # file and holds no code: anything below it (or the API core, auth, grpc) is a real load.
    loaded = sorted(
        m for m in sys.modules
        if m.startswith(("google.cloud.", "google.api_core", "google.auth", "grpc.")) or m == "grpc"
    )
    files = {}
    for dag_id, dag in bag.dags.items():
        files.setdefault(Path(dag.fileloc).name, []).append(dag_id)
    print(json.dumps({
        "errors": bag.import_errors,
        "files": {k: sorted(v) for k, v in files.items()},
        "tasks": {dag_id: len(dag.tasks) for dag_id, dag in bag.dags.items()},
        "loaded": loaded,
        "seconds": seconds,
    }))
    """
)


def test_every_dag_file_imports_cleanly_without_google_cloud(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["AIRFLOW_HOME"] = str(tmp_path / "home")
    env["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    argv = [sys.executable, "-c", PROBE, str(DAGS)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["errors"] == {}
    assert report["files"] == EXPECTED
    assert all(count >= 1 for count in report["tasks"].values()), report["tasks"]
    assert report["loaded"] == []
    assert report["seconds"] < 60, report["seconds"]
    # every DAG file in the folder is one of the examples this test knows
    assert sorted(p.name for p in DAGS.glob("*.py") if p.name != "examples_common.py") == sorted(EXPECTED)
