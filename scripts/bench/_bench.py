"""What the benchmark scripts share: finding the CLI, running a child and reading its cost.

Each script runs as ``python scripts/bench/<name>.py``, so this folder is first on ``sys.path``
and ``from _bench import ...`` finds this module without installing it.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def memo_solver_command(given: str | None) -> str:
    """``--memo-solver`` if given, else the console script beside this interpreter or on
    the PATH."""
    if given:
        return given
    beside = Path(sys.executable).parent / "memo-solver"
    if beside.exists():
        return str(beside)
    found = shutil.which("memo-solver")
    if found is None:
        raise SystemExit("memo-solver not found: install the project or pass --memo-solver")
    return found


def child_env(**extra: str) -> dict[str, str]:
    """This environment with BLAS pinned to one thread, as every solver process runs."""
    return {**os.environ, "OPENBLAS_NUM_THREADS": "1", **extra}


@dataclass(frozen=True)
class ChildRun:
    """One child process: its output and what it cost."""

    stdout: str
    wall_s: float
    cpu_s: float
    user_s: float
    sys_s: float
    max_rss_mb: float


def run_child(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> ChildRun:
    """Run ``argv`` (in ``cwd``) to completion and read its own rusage with ``os.wait4``."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=errors)
        assert proc.stdout is not None
        out = proc.stdout.read().decode()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{message}")
    return ChildRun(
        stdout=out,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        user_s=usage.ru_utime,
        sys_s=usage.ru_stime,
        max_rss_mb=usage.ru_maxrss * 1024 / 1e6,  # ru_maxrss is KiB on Linux
    )


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process, from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # the name may hold spaces: skip past it
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / CLOCK_TICKS


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy (all but idle and iowait), from the
    first line of ``/proc/stat``: less a process's own CPU over the same span, what other
    processes kept busy."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / CLOCK_TICKS


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest rank: the smallest value with ``share`` of them at or below it."""
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]
