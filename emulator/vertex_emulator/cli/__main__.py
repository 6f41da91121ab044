"""``python -m vertex_emulator.cli``: the ``vertex-emulator`` console script."""

from __future__ import annotations

import sys

from vertex_emulator.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
