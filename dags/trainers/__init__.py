"""Example training code for the example DAGs: run inside Vertex AI (or emulator) replicas.

- ``trainers.ps_trainer``: parameter-server logistic regression, standard library only
  (+ cloudml-hypertune when importable);
- ``trainers.ddp_trainer``: PyTorch DistributedDataParallel (gloo on CPU, NCCL on GPUs), for the
  Reduction Server layout (needs the ``examples`` extra: torch);
- ``trainers.prep``: writes the dataset a training job reads with ``--data-dir``;
- ``trainers.cluster``: CLUSTER_SPEC -> role, rank, world size, master address, output paths;
- ``trainers.local``: how to run them on the emulator (image map) or ship them (an sdist for a
  python package spec). See README.md beside this file.

Importing this package loads nothing but the standard library.
"""

from __future__ import annotations

__all__: list[str] = []
