"""The Cloud Logging v2 read API over the emulator's job logs: ``entries.list`` (``api``) served over gRPC
and REST (``transports``), the query language subset it understands (``query``) and the ``LogEntry`` shape
Vertex AI writes (``entries``)."""
