"""Process settings: what a CLI, a worker or a server calls before numpy work.

- BLAS pinned to one thread: on these 2-core machines two BLAS threads were 8-9x slower on
  small matrices, and a solver process already keeps its cores busy.
- A server's start-up objects frozen out of the cyclic GC's sight.

(glibc's allocator used to be tuned here too, to keep the few MiB of numpy temporaries each
block pass allocated; the compiled kernel allocates nothing per block, so any program that
solves, the CLI or a script calling :func:`memo_solver.core.engine.open_engine`, runs as fast
with the allocator as it is.)
"""

from __future__ import annotations

import os


def pin_blas_threads() -> None:
    """Must run before numpy is imported to take effect; harmless after."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")


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
