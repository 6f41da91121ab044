"""What the Google provider's connection form saves, field for field: the extras of a
``google_cloud_platform`` connection as teams have them.

Source: apache-airflow-providers-google, ``airflow/providers/google/common/hooks/base_google.py``,
``GoogleBaseHook.get_connection_form_widgets`` with the ``quota_project_id`` field added by
apache/airflow#56324 ("Add quota project id support to Google cloud base hook"). The provider's
changelog up to 21.0.0 does not list that pull request, so the first release with the field is a later
one; which one could not be checked offline. The Google provider is not installed here (it is not a
dependency of this provider): these fixtures are written from that source.

How a form leaves a field it was not given:

- Airflow 2's web server (``airflow/www/views.py``, ``ConnectionModelView.process_form``) saved
  every field of the form under its prefixed key, ``extra__google_cloud_platform__<field>``, a text
  field left empty as ``""``, ``num_retries`` as its default 5 and ``is_anonymous`` as ``false``; later
  Airflow 2 versions used the plain key, ``<field>``.
- Airflow 3's UI (``airflow/ui/src/components/FlexibleForm/FieldString.tsx``) saves a text field the
  user cleared as ``null``; ``useParamStore.serializeConf`` writes the fields the user touched.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORM_FIELDS", "PREFIX", "REFUSED", "airflow2_form", "airflow3_form", "legacy_form"]

PREFIX = "extra__google_cloud_platform__"

#: Every field of the form, in its order, with the value the form saves when the user leaves it.
FORM_FIELDS: dict[str, Any] = {
    "project": "",
    "key_path": "",
    "keyfile_dict": "",
    "credential_config_file": "",
    "scope": "",
    "key_secret_name": "",
    "key_secret_project_id": "",
    "num_retries": 5,
    "impersonation_chain": "",
    "idp_issuer_url": "",
    "client_id": "",
    "client_secret": "",
    "idp_extra_parameters": "",
    "is_anonymous": False,
    "quota_project_id": "",
}

#: The form's fields this provider cannot honour (refused by name when set).
REFUSED = (
    "key_secret_name",
    "key_secret_project_id",
    "idp_issuer_url",
    "client_id",
    "client_secret",
    "idp_extra_parameters",
)


def _check(values: dict[str, Any]) -> None:
    unknown = set(values) - set(FORM_FIELDS)
    assert not unknown, f"not fields of the Google provider's form: {sorted(unknown)}"


def legacy_form(**values: Any) -> dict[str, Any]:
    """The extras as Airflow 2's form saved them first: every field prefixed, ``""`` when left empty."""
    _check(values)
    return {f"{PREFIX}{name}": values.get(name, blank) for name, blank in FORM_FIELDS.items()}


def airflow2_form(**values: Any) -> dict[str, Any]:
    """The extras as later Airflow 2 forms saved them: every field under its plain name."""
    _check(values)
    return {name: values.get(name, blank) for name, blank in FORM_FIELDS.items()}


def airflow3_form(**values: Any) -> dict[str, Any]:
    """The extras as Airflow 3's UI saves them when every field was visited: a cleared text field is
    ``null``."""
    _check(values)
    return {name: values.get(name, None if blank == "" else blank) for name, blank in FORM_FIELDS.items()}
