"""Process settings for solving: what a CLI, a worker or a server calls before numpy work.

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
from typing import Final

_M_TRIM_THRESHOLD: Final = -1
_M_TOP_PAD: Final = -2
_KEEP_BYTES: Final = 128 << 20
_PAD_BYTES: Final = 64 << 20


def pin_blas_threads() -> None:
    """Must run before numpy is imported to take effect; harmless after."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")


def keep_freed_memory() -> bool:
    """Tune glibc's malloc; returns False where there is no glibc (nothing to tune)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES) and mallopt(_M_TOP_PAD, _PAD_BYTES))


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
