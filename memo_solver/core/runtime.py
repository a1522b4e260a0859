"""Process settings for solving: what a CLI, a worker, a server (and, for the allocator,
:func:`memo_solver.core.engine.open_engine`) call before numpy work.

- BLAS pinned to one thread: on these 2-core machines two BLAS threads were 8-9x slower on
  small matrices, and a solver process already keeps its cores busy.
- glibc's allocator told to keep freed memory instead of trimming it back to the system
  after every block: each block pass allocates a few MiB of temporaries, and trimming and
  faulting them in again cost as much CPU as the numpy work itself (8.1 s against 4.8 s
  for a cold ``yahtzee`` precompute on this machine).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable
from typing import Final

_M_TRIM_THRESHOLD: Final = -1
_M_TOP_PAD: Final = -2
_KEEP_BYTES: Final = 128 << 20
_PAD_BYTES: Final = 64 << 20


def pin_blas_threads() -> None:
    """Must run before numpy is imported to take effect; harmless after."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")


KEEP_FREED_MEMORY_ENV: Final = "MEMO_SOLVER_KEEP_FREED_MEMORY"
"""Set to ``0`` to leave glibc's allocator as it is in every process that solves."""
_kept: bool | None = None
"""What :func:`keep_freed_memory` did in this process: None until its first call."""


def keep_freed_memory() -> bool:
    """Tune glibc's malloc, once per process (later calls answer what the first one did).

    Returns False where there is no glibc (nothing to tune) or where
    ``MEMO_SOLVER_KEEP_FREED_MEMORY=0`` says to leave the allocator alone. The CLI, the
    workers and :func:`memo_solver.core.engine.open_engine` all call it, so a script or a
    notebook that solves gets it too: without it a cold ``yahtzee`` solve took twice the
    CPU on an AMD host (12.5 against 5.5-6.2 s; no difference on an Intel Xeon).
    """
    global _kept
    if _kept is None:
        mallopt = None if os.environ.get(KEEP_FREED_MEMORY_ENV) == "0" else _mallopt()
        _kept = mallopt is not None and bool(
            mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES) and mallopt(_M_TOP_PAD, _PAD_BYTES)
        )
    return _kept


def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt``, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        mallopt: Callable[[int, int], int] = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return None
    return mallopt


def freeze_startup_objects() -> None:
    """For a long-lived server: move everything allocated so far (modules, schemas, numpy
    tables) out of the cyclic GC's sight, and collect the young generation less often.

    A full collection otherwise walks every object the imports made, tens of ms each time,
    which is the tail of the latency; and at the default threshold (700) a server answering
    requests runs a young collection every few requests.
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)
