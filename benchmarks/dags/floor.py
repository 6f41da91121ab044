"""The floor: the same two tasks' shape written with ``airflow.sdk`` only (no provider at all)."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, task

with DAG("bench_parse_floor", schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False) as dag:

    @task
    def train() -> str:
        return "train"

    @task
    def tune() -> str:
        return "tune"

    train() >> tune()
