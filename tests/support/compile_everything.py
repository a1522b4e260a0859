"""Run ``memo-solver compile --json`` in this process, then list every compiled function of
the package with how many machine codes it holds (tests/test_compiled.py runs this file).

Run with the cache folder unusable, so that nothing is loaded from disk: then every function
the command reached holds a machine code of its own (loaded from a cache, a function's
callees hold none), and a function with none is one the warm-up leaves out. Prints the
command's JSON line, then ``{"status": ..., "signatures": {module.name: count}}``.
"""

from __future__ import annotations

import importlib
import json
import pkgutil

from numba.core.registry import CPUDispatcher

import memo_solver
from memo_solver.cli.main import main


def signatures() -> dict[str, int]:
    """Every numba function defined in a module of the package: its machine codes."""
    found: dict[str, int] = {}
    for info in pkgutil.walk_packages(memo_solver.__path__, "memo_solver."):
        if info.name.endswith("__main__"):  # runs the command when imported
            continue
        for name, value in vars(importlib.import_module(info.name)).items():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == info.name:
                found[f"{info.name}.{name}"] = len(value.signatures)
    return found


if __name__ == "__main__":
    status = main(["compile", "--json"])
    print(json.dumps({"status": status, "signatures": signatures()}))
