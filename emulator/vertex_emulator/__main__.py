"""``python -m vertex_emulator``: the same as the ``vertex-emulator`` console script."""

from __future__ import annotations

import sys

from vertex_emulator.cli import console_main

sys.exit(console_main())
