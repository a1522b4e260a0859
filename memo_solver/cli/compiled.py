"""``memo-solver compile``: every compiled loop of the solver made ready for this CPU.

The first process that meets a compiled function compiles it (seconds for all of them) and
keeps the machine code in the cache folder, where later processes load it in milliseconds
(:mod:`memo_solver.core.compiled`). This command pays that once, ahead of time: CI runs it
before the tests, the Docker image at build time. It runs the workloads of
:mod:`memo_solver.games.yahtzee.warm_loops`, which call every compiled function through the
code paths real commands take, and says what it found.
"""

from __future__ import annotations

import time

from memo_solver.cli.common import Output


def compile_command(out: Output) -> int:
    started = time.monotonic()
    from memo_solver.core import compiled
    from memo_solver.games.yahtzee import warm_up

    warm_up()
    counts = compiled.compile_counts()
    folder = compiled.cache_dir()
    payload = {
        "cache_dir": str(folder),
        "caching": compiled.CACHING,
        "cpu": compiled.host_cpu(),
        "functions": counts.functions,
        "compiled": counts.compiled,
        "loaded": counts.loaded,
        "seconds": round(time.monotonic() - started, 3),
    }
    if compiled.CACHING:
        kept = f"cache: {folder} (later processes load it; ${compiled.CACHE_ENV} chooses another)"
    else:
        kept = (
            f"cache: none ({folder} cannot be written): every process compiles in memory "
            f"again; set ${compiled.CACHE_ENV} to a writable folder"
        )
    out.emit(
        payload,
        f"{counts.functions} compiled functions ready for this CPU ({payload['cpu']}) in "
        f"{payload['seconds']} s: {counts.compiled} compiled now, {counts.loaded} loaded "
        f"from the cache (with the functions they call)\n{kept}",
    )
    return 0
