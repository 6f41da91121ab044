"""The emulator's base: its settings (``config``), the job kinds and states it serves (``jobkinds``), the job
store in SQLite (``jobstore``, damage repair in ``jobstore_repair``), RFC 3339 times (``timefmt``), the one
``gs://`` to local path mapping (``gcs``) and API fault injection (``faults``). Imports nothing else of the
emulator."""
