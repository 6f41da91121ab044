"""Importing the hooks and triggers (what operators and DAG files do) loads no google.cloud module."""

from __future__ import annotations

import json
import subprocess
import sys

MODULES = [
    "airflow_vertex_dist.hooks",
    "airflow_vertex_dist.hooks.labels",
    "airflow_vertex_dist.hooks.connection",
    "airflow_vertex_dist.jobs.dicts",
    "airflow_vertex_dist.hooks.vertex_jobs",
    "airflow_vertex_dist.hooks.logs",
    "airflow_vertex_dist.hooks.off_loop",
    "airflow_vertex_dist.jobs.events",
    "airflow_vertex_dist.jobs.progress",
    "airflow_vertex_dist.jobs.replicas",
    "airflow_vertex_dist.jobs.states",
    "airflow_vertex_dist.jobs.trials",
    "airflow_vertex_dist.triggers.jobs",
    "airflow_vertex_dist.triggers.poller",
    "airflow_vertex_dist.triggers.sensors",
    "airflow_vertex_dist._compat",
]


def test_no_google_cloud_module_on_import() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for m in {MODULES!r}: importlib.import_module(m)\n"
        # the bare 'google.cloud' namespace package is created by a .pth file at interpreter start
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('google.cloud.') or m == 'grpc')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_pure_modules_import_neither_airflow_nor_google() -> None:
    code = (
        "import json, sys\n"
        "import airflow_vertex_dist.hooks.labels, airflow_vertex_dist.jobs.dicts\n"
        "from airflow_vertex_dist.jobs import events, progress, states\n"
        "heavy = ('airflow', 'grpc', 'proto')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
