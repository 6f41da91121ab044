"""Which driver runs which kind of job: the emulator's one table from job kind to driver class.

The runner looks a job's kind up here (``driver_for``) and knows no driver class itself; a driver
knows the runner only as a ``DriverHost``. A new kind of job
is one driver module and one entry of ``DRIVERS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from vertex_emulator.core.jobkinds import JobKind
from vertex_emulator.runtime.custom_job import CustomJobRun
from vertex_emulator.runtime.driver import DriverHost, JobDriver
from vertex_emulator.runtime.tuning_job import TuningRun

__all__ = ["DRIVERS", "driver_for", "kind_of"]

#: job kind (the collection in the resource name) -> the driver that runs a job of that kind
DRIVERS: Mapping[JobKind, Callable[[DriverHost, str], JobDriver]] = {
    "customJobs": CustomJobRun,
    "hyperparameterTuningJobs": TuningRun,
}


def kind_of(name: str) -> JobKind:
    """The kind of the job named ``name``: a tuning job's name holds ``/hyperparameterTuningJobs/``,
    anything else is run as a CustomJob."""
    return "hyperparameterTuningJobs" if "/hyperparameterTuningJobs/" in name else "customJobs"


def driver_for(host: DriverHost, name: str) -> JobDriver:
    """A new (not started) driver for job ``name``."""
    return DRIVERS[kind_of(name)](host, name)
