"""The Vertex AI SDK (``google-cloud-aiplatform``'s ``aiplatform``) pointed at an emulator in one call.

``aiplatform.init(api_endpoint="127.0.0.1:8780", api_transport="rest")`` alone cannot reach an emulator:
without Application Default Credentials it fails with ``DefaultCredentialsError``, and with them it
speaks HTTPS to the emulator's plain-HTTP port. ``init`` passes what works: the endpoint with its
``http://`` scheme, the REST transport, and anonymous credentials (or the emulator's access token, for
one started with ``--auth-token``). The SDK offers no environment variable for an endpoint or for
anonymous credentials, so this is the one step.

The endpoint is, in this order: the ``endpoint`` argument, the ``VERTEX_EMULATOR_ENDPOINT`` environment
variable, or ``http://127.0.0.1:8780`` (the REST port of a ``vertex-emulator`` started with its
defaults). The token: the ``token`` argument or ``VERTEX_EMULATOR_TOKEN``.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["DEFAULT_ENDPOINT", "ENDPOINT_ENV", "TOKEN_ENV", "credentials", "init", "resolve_endpoint"]

#: The REST port of a ``vertex-emulator`` started with its default flags.
DEFAULT_ENDPOINT = "http://127.0.0.1:8780"
#: The environment variable naming the emulator's REST endpoint (``http://host:port``).
ENDPOINT_ENV = "VERTEX_EMULATOR_ENDPOINT"
#: The environment variable holding the emulator's access token (``--auth-token``), if it has one.
TOKEN_ENV = "VERTEX_EMULATOR_TOKEN"


def resolve_endpoint(value: str | None = None) -> str:
    """The emulator's REST endpoint as the SDK needs it: with its ``http://`` scheme (``host:port`` gets
    one), from ``value``, ``$VERTEX_EMULATOR_ENDPOINT`` or the default."""
    found = (value or os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT).strip().rstrip("/")
    if found.startswith("https://"):
        raise ValueError(f"the emulator serves plain HTTP, not HTTPS: {found!r} (use http://)")
    return found if found.startswith("http://") else f"http://{found}"


def credentials(token: str | None = None) -> Any:
    """Anonymous credentials, or bearer credentials holding the emulator's access token (``token`` or
    ``$VERTEX_EMULATOR_TOKEN``)."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if token:
        from google.oauth2.credentials import Credentials

        return Credentials(token=token)  # type: ignore[no-untyped-call]
    from google.auth.credentials import AnonymousCredentials

    return AnonymousCredentials()  # type: ignore[no-untyped-call]


def init(
    project: str = "local-project",
    location: str = "us-central1",
    *,
    endpoint: str | None = None,
    token: str | None = None,
    **init_kwargs: Any,
) -> None:
    """Call ``aiplatform.init`` so the SDK's jobs (``aiplatform.CustomJob``,
    ``aiplatform.HyperparameterTuningJob``, ...) go to the emulator.

    :param project: the project of the jobs' resource names (any name: the emulator has no projects).
    :param location: their region.
    :param endpoint: the emulator's REST endpoint (``http://127.0.0.1:8780``; ``host:port`` is taken as
        ``http://host:port``); ``None``: ``$VERTEX_EMULATOR_ENDPOINT`` or ``http://127.0.0.1:8780``.
    :param token: the emulator's access token (``--auth-token``); ``None``: ``$VERTEX_EMULATOR_TOKEN``,
        else anonymous credentials.
    :param init_kwargs: passed on to ``aiplatform.init`` (``staging_bucket=``, ``experiment=``, ...).
    """
    from google.cloud.aiplatform import initializer

    # aiplatform.init is this bound method, taken when aiplatform was imported: calling it through the
    # module's current global_config also configures one a test swapped in
    initializer.global_config.init(
        project=project,
        location=location,
        api_endpoint=resolve_endpoint(endpoint),
        api_transport="rest",
        credentials=credentials(token),
        **init_kwargs,
    )
