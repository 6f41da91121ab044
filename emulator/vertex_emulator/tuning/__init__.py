"""The study algorithms of the emulator's tuning jobs, pure (no I/O, no threads) but for reading metrics
files: the search (``search``), automated early stopping (``stopping``) and cloudml-hypertune metrics files
read as v1 Measurements (``hypertune``). The tuning job's driver, which runs trials, is in runtime/."""
