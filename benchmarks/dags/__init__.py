"""The three DAG files whose parse cost is measured (each is run by path in a fresh interpreter)."""
