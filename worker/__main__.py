"""``python -m worker``: BLAS is pinned here, before anything imports numpy.

BLAS reads its thread count once, when numpy loads it, and importing the worker's CLI
already loads numpy (jobs -> games -> engine); so the pin must come before that import.
"""

import sys

from memo_solver.core.runtime import pin_blas_threads


def run() -> int:
    pin_blas_threads()
    from memo_solver.cli.worker import main

    return main()


sys.exit(run())
