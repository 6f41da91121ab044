"""Jobs run as local processes: the runner and the driver thread of each job (``runner``, ``driver``; its
waits before a job starts: ``admission``; ``drivers``: kind to driver), a CustomJob's run (``custom_job``;
its setup, replicas and faults: ``custom_job_setup``, ``replica_slots``, ``replica_faults``) and a tuning
job's trials (``tuning_job``; its study: ``tuning_study``), each replica's environment and command
(``cluster``, ``replica_command``), python packages (``packages``), the replica processes under their
supervisors (``procs``, ``supervise``; their output: ``replica_output``) and their structured logs
(``log_records``, ``service_log``)."""
