"""Import the Google clients off the event loop.

The first import of ``airflow_vertex_dist.hooks._clients`` loads google-cloud-aiplatform, grpc,
google-auth and proto-plus: over a second of CPU on a busy machine. Done on the triggerer's event loop
(the first time a trigger polls), it stops every trigger of that triggerer, and its heartbeat, for that
long. The asyncio hook and the shared pollers therefore call ``load_clients`` before their first
client use: the import runs in a worker thread and the loop keeps serving other triggers meanwhile.
Later calls return at once.

This module imports nothing from Google, so importing it is as light as importing the hooks.
"""

from __future__ import annotations

import asyncio
import importlib

__all__ = ["CLIENTS_MODULE", "load_clients"]

#: the module that imports every Google client the hooks use
CLIENTS_MODULE = "airflow_vertex_dist.hooks._clients"

_loaded = False


async def load_clients() -> None:
    """Import ``CLIENTS_MODULE`` in a worker thread, once per process.

    Concurrent first callers each wait on a thread; Python's import lock lets one of them import and
    the others find the finished module. Only a completed import sets the flag, so a caller never sees
    a half-initialised module.
    """
    global _loaded
    if not _loaded:
        await asyncio.to_thread(importlib.import_module, CLIENTS_MODULE)
        _loaded = True
