"""Cloud Logging's severities, in one place for the logs hook and the log poller (a pure module: the
DAG-parse path loads no ``google.*``, so the proto enum is not imported here; tests/test_wire_pairs.py
checks this table against it)."""

from __future__ import annotations

import logging

__all__ = ["SEVERITIES", "python_level"]

#: severity name -> number (google.logging.type.LogSeverity)
SEVERITIES: dict[str, int] = {
    "DEFAULT": 0,
    "DEBUG": 100,
    "INFO": 200,
    "NOTICE": 300,
    "WARNING": 400,
    "ERROR": 500,
    "CRITICAL": 600,
    "ALERT": 700,
    "EMERGENCY": 800,
}


def python_level(severity: str) -> int:
    """The Python ``logging`` level a line of Cloud Logging ``severity`` is written to a task log at.

    DEFAULT, DEBUG, INFO and NOTICE are INFO (a DEBUG line a user selected is still shown: a task log
    drops records below INFO), WARNING is WARNING, ERROR is ERROR, CRITICAL and above (ALERT,
    EMERGENCY) are CRITICAL. An unknown name is INFO.
    """
    number = SEVERITIES.get(str(severity).upper(), 0)
    if number >= SEVERITIES["CRITICAL"]:
        return logging.CRITICAL
    if number >= SEVERITIES["ERROR"]:
        return logging.ERROR
    if number >= SEVERITIES["WARNING"]:
        return logging.WARNING
    return logging.INFO
