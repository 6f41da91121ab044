"""A stand-alone emulator runner for the recovery test: the test SIGKILLs this process.

Usage: run_runner.py STATE_DIR GCS_ROOT JOBS_JSON -- creates each job body of JOBS_JSON (a list of
CustomJob bodies), submits it, prints the job names as one JSON line, then waits to be killed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from vertex_emulator.core.config import EmulatorConfig
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.runtime.runner import Runner

state_dir, gcs_root, jobs = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())
store = JobStore(state_dir / "jobs.sqlite3")
runner = Runner(store, EmulatorConfig(state_dir=state_dir, gcs_root=gcs_root))
names = []
for body in jobs:
    name = store.insert("customJobs", "projects/p/locations/us-central1", body)["name"]
    runner.submit(name)
    names.append(name)
print(json.dumps(names), flush=True)
sys.stdin.read()  # until the test kills this process (or closes stdin)
runner.close()
