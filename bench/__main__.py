"""``python -m bench [--only NAME[,NAME]] [--smoke] [--rows N] [--reps N]``."""

from __future__ import annotations

import sys

from bench.runner import main

if __name__ == "__main__":
    sys.exit(main())
