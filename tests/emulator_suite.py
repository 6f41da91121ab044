"""The helpers of the emulator's own suite (emulator/tests/) that the provider's tests share: the strict
page check, the Cloud Logging clients and the admin endpoint.

The emulator's suite runs from the emulator's own install and is a package of its own (``tests`` under
``emulator/``), which this run does not import: each helper module is loaded here from its file, once,
so each lives in one place.
"""

from __future__ import annotations

from tests.emulator_files import EMULATOR_TESTS, load

__all__ = [
    "EMULATOR_TESTS",
    "admin",
    "check_page",
    "gapic",
    "job_filter",
    "load",
    "logging_client",
    "text_of",
]

_strict_html = load("strict_html")
_logging = load("logging_support")
_capacity = load("capacity_support")

check_page = _strict_html.check_page
gapic = _logging.gapic
job_filter = _logging.job_filter
logging_client = _logging.logging_client
text_of = _logging.text_of
admin = _capacity.admin
