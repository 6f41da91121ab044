"""Cloud Logging's severities, in one place for the logs hook, the log poller and the emulator's
Logging API (a neutral module: the emulator imports it without loading the hooks or Airflow)."""

from __future__ import annotations

__all__ = ["SEVERITIES"]

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
