"""``_compat.redact`` masks what Airflow's secrets masker knows, from the masker's current home: no
deprecation warning on the Airflow this venv runs (the old home warns on 3.3)."""

from __future__ import annotations

import warnings

from airflow.sdk.log import mask_secret

from airflow_vertex_dist._compat import redact


def test_redact_masks_a_registered_secret_without_a_deprecation_warning() -> None:
    mask_secret("hunter2-very-secret")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        masked = redact("the password is hunter2-very-secret, really")
    assert "hunter2-very-secret" not in masked
    assert masked.startswith("the password is ")
