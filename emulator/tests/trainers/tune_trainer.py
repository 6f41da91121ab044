"""A tuning trial: reports -(x - 3)^2 as "score" through cloudml-hypertune, records its run.

x == 2 reports nothing (the trial must end INFEASIBLE); --fail makes it exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import hypertune

p = argparse.ArgumentParser()
p.add_argument("--x", type=int, required=True)
p.add_argument("--fail", action="store_true")
p.add_argument("--work", type=float, default=0.3)
a = p.parse_args()

start = time.time()
time.sleep(a.work)  # the "training"
if a.fail:
    print("diverged", flush=True)
    sys.exit(1)
if a.x != 2:
    ht = hypertune.HyperTune()
    ht.report_hyperparameter_tuning_metric("score", -1.0, global_step=1)  # an early, worse value
    ht.report_hyperparameter_tuning_metric("score", -float((a.x - 3) ** 2), global_step=2)
record = {
    "x": a.x,
    "start": start,
    "end": time.time(),
    "trial": os.environ.get("CLOUD_ML_TRIAL_ID"),
    "cluster_spec": json.loads(os.environ["CLUSTER_SPEC"]),
    "model_dir": os.environ.get("AIP_MODEL_DIR"),
    "argv": sys.argv[1:],
}
with open(os.path.join(os.environ["RECORD_DIR"], f"trial-{record['trial']}.json"), "w") as fh:
    json.dump(record, fh)
