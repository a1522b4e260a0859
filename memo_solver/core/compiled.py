"""Compiled loops: numba, and where its machine code is kept between processes.

The turn kernel and the forward passes are loops over dice lattices that numpy can only
express as gathers into temporaries; numba compiles them to machine code (LLVM, which
vectorizes the loops over lanes) that allocates nothing, runs without the GIL, and is
written in the same Python syntax as the rest of the package. Compiling takes seconds, so
the code is cached on disk and loaded by later processes in milliseconds:

- the cache folder is :func:`cache_dir`: ``$MEMO_SOLVER_COMPILE_CACHE`` if set, else
  ``$NUMBA_CACHE_DIR`` if set, else the user's cache folder (``~/.cache/memo-solver/
  compiled`` on Linux); one per user, since it holds machine code for this user's CPU;
- numba writes each file under a unique temporary name and renames it into place, so
  processes that start together at most compile the same function twice, never read half a
  file;
- machine code is specific to the CPU it was compiled for: numba keys its cache entries by
  CPU model and features, so a cache copied to another CPU (a Docker image built on one
  host, run on another) is not used there and the first process compiles again;
- a folder that cannot be written (a read-only image, a full disk) is not an error: the
  code compiles in memory in each process, with one warning saying so;
- ``memo-solver compile`` (:mod:`memo_solver.cli.compiled`) fills the folder ahead of time,
  counting what it compiled and what it loaded with :func:`compile_counts`;
- loading a function from the folder readies only the runtime its machine code calls
  (:class:`_LoadedCache`), not the compiler: numba's own load first installs every typing
  and lowering registry it has (about 0.15 s of CPU at a cold command's start), which only
  compiling reads, and compiling still installs them itself.

This module must be imported before any module that defines compiled functions, since the
cache folder is read when a function is defined; :func:`jit` sees to that for its users.
"""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar, cast

import numba
from numba.core.caching import FunctionCache
from numba.core.registry import cpu_target
from numba.core.runtime.nrt import rtsys
from platformdirs import user_cache_path

log = logging.getLogger(__name__)

CACHE_ENV: Final = "MEMO_SOLVER_COMPILE_CACHE"
"""Overrides the folder that holds compiled code (:func:`cache_dir`)."""

F = TypeVar("F", bound=Callable[..., object])


class CompileCacheWarning(UserWarning):
    """The compile cache folder could not be used: code compiles in memory instead."""


def cache_dir() -> Path:
    """Where compiled code is kept: the environment's choice, else the user's cache folder."""
    chosen = os.environ.get(CACHE_ENV) or os.environ.get("NUMBA_CACHE_DIR")
    if chosen:
        return Path(chosen).expanduser()
    return user_cache_path("memo-solver") / "compiled"


def _writable(path: Path) -> str | None:
    """None when compiled code can be written under ``path``, else why not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _configure() -> bool:
    path = cache_dir()
    problem = _writable(path)
    if problem is not None:
        warnings.warn(
            f"compiled code cannot be cached in {path} ({problem}): compiling in memory, "
            f"which every process pays again; set {CACHE_ENV} to a writable folder",
            CompileCacheWarning,
            stacklevel=3,
        )
        return False
    vars(numba.config)["CACHE_DIR"] = str(
        path
    )  # what NUMBA_CACHE_DIR sets, read at each definition
    return True


CACHING: Final = _configure()
"""Whether compiled code is kept on disk in this process (False: the folder was unusable)."""


class _LoadedCache(FunctionCache):
    """numba's cache of one function, loading its machine code with the runtime readied
    (the allocator its code calls) and without the compiler's registries.

    numba's ``load_overload`` refreshes the target context before reading the file: it
    imports and installs every typing and lowering registry numba has (its array, string,
    set, dict, random and datetime implementations), about 0.15 s of CPU, the same for one
    function as for all. Loading needs none of them: the file holds machine code, linked
    against the runtime and the C helpers the context installs when it is made. A function
    not in the file is compiled by numba as before, and its compiler refreshes the context
    first (``numba.core.compiler.CompilerBase``), so nothing it reads is missing."""

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)  # type: ignore[no-untyped-call]


_DEFINED: Final[list[Any]] = []
"""Every function :func:`jit` made in this process (numba Dispatchers), in definition order."""


def jit(func: F) -> F:
    """Compile ``func`` on first call: no Python objects, the GIL released, cached on disk
    when the folder allows. Bounds are not checked: callers pass arrays that fit."""
    dispatcher = numba.njit(nogil=True, error_model="numpy")(func)
    if CACHING:
        # Where cache=True puts numba's own cache.
        dispatcher._cache = _LoadedCache(dispatcher.py_func)  # type: ignore[attr-defined,no-untyped-call]
    _DEFINED.append(dispatcher)
    # A Dispatcher, called like ``func``: typed as ``func`` for its callers.
    return cast(F, dispatcher)


@dataclass(frozen=True)
class CompileCounts:
    """The compiled functions this process has defined, and where their machine code came
    from. A function that only compiled functions call has no machine code of its own when
    its callers were loaded from the cache: its code is inside theirs."""

    functions: int
    """Compiled functions defined so far (those of the modules imported)."""
    compiled: int
    """Functions compiled in this process (for at least one set of argument types)."""
    loaded: int
    """Functions whose machine code was read from the cache folder instead."""


def compile_counts() -> CompileCounts:
    """What :func:`jit`'s functions have compiled and loaded in this process so far."""
    return CompileCounts(
        functions=len(_DEFINED),
        compiled=sum(1 for d in _DEFINED if d.stats.cache_misses),
        loaded=sum(1 for d in _DEFINED if d.stats.cache_hits),
    )


def host_cpu() -> str:
    """The CPU model machine code is compiled for: with the CPU's features, the key of
    numba's cache entries, so a cache filled on another model is not used here."""
    _triple, model, _features = cpu_target.target_context.codegen().magic_tuple()
    return str(model)
