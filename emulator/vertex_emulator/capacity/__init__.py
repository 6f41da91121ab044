"""Capacity as the service shows it and as one host allows: the host's ceilings on replicas (``host``),
GPU quota, stockouts, Spot and flex-start rules with their sources (``gpus``), the GPU books the service and
the drivers share (``ledger``) and the capacity settings as JSON (``settings``)."""
