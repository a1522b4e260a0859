"""What the benchmark scripts share: finding the CLI, running a child and reading its cost,
a store precomputed for them, peak memory, and the verdict on their targets.

Each script runs as ``python scripts/bench/<name>.py``, so this folder is first on
``sys.path`` and ``from _bench import ...`` finds this module without installing it; importing
it puts ``tests/`` on the path too, for the suite's helpers (``support.redis_server``,
``support.random_states``), so a benchmark runs what the tests check.
"""

from __future__ import annotations

import argparse
import json
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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memo_solver.games.yahtzee.rules.rule_set import RuleSet

ROOT = Path(__file__).resolve().parents[2]
"""The checkout the scripts belong to."""
sys.path.insert(0, str(ROOT / "tests"))
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


def bare_env() -> dict[str, str]:
    """:func:`child_env` without the caller's ``MEMO_SOLVER_`` settings: the workers and the
    CLI of a measured set-up read only what the benchmark gives them."""
    return {k: v for k, v in child_env().items() if not k.startswith("MEMO_SOLVER_")}


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


def peak_rss_mb(pid: int | None = None) -> float:
    """The peak resident set in MB (10**6 bytes) of a live process (``VmHWM`` of
    ``/proc/<pid>/status``), or of this one when ``pid`` is None (``getrusage``): what a
    benchmark with a memory target reads."""
    if pid is None:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # KiB on Linux
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e6
    return math.nan


def precompute_cli(
    command: str, store: Path | str, rules: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """``memo-solver --store STORE precompute --rules RULES --json`` as a child (filling the
    store, or finding it full; ``env``: :func:`child_env`'s by default): its JSON answer. The
    warm figures are timed on that store."""
    argv = [command, "--store", str(store), "precompute", "--rules", rules, "--json"]
    payload: dict[str, Any] = json.loads(run_child(argv, env or child_env()).stdout)
    return payload


async def precompute_in_process(rules: RuleSet, path: Path) -> dict[str, Any]:
    """Solve ``rules`` into the SQLite store at ``path`` in this process (its blocks stay in
    this process's memo, as a warm benchmark wants): the start value, the blocks computed
    (0 on a full store), wall and CPU seconds."""
    from memo_solver.core.engine import open_engine
    from memo_solver.games.yahtzee.solve.game import YahtzeeGame
    from memo_solver.stores.sqlite import SQLiteStore

    started, cpu = time.perf_counter(), time.process_time()
    async with SQLiteStore(path) as store, open_engine(YahtzeeGame(rules), store) as engine:
        root = await engine.block(engine.game.root())
        computed = engine.counters.computed
    return {
        "start_value": float(root.flat[0]),  # upper 0, no bonus (and an empty bank) first
        "blocks_computed": computed,
        "wall_s": time.perf_counter() - started,
        "cpu_s": time.process_time() - cpu,
    }


@dataclass(frozen=True)
class Target:
    """One figure an issue bounded, and the bound: the run passes it or misses it."""

    name: str
    value: float
    bound: float
    at_least: bool = False
    """True where the figure must reach the bound (a rate), False where it must stay
    under it (a time, a ratio, a size)."""
    figure: bool = True
    """False for a condition (:meth:`holds`), whose line shows no number."""

    @classmethod
    def holds(cls, name: str, passed: bool) -> Target:
        """A condition rather than a figure (no block computed twice, every answer given):
        it passes or it does not."""
        return cls(name, 1.0 if passed else 0.0, 1.0, at_least=True, figure=False)

    @property
    def met(self) -> bool:
        """NaN (a figure that could not be measured) misses every bound."""
        return self.value >= self.bound if self.at_least else self.value <= self.bound

    def line(self) -> str:
        verdict = "PASS" if self.met else "FAIL"
        if not self.figure:
            return f"  {verdict}  {self.name}"
        sign = ">=" if self.at_least else "<="
        return f"  {verdict}  {self.name}: {self.value:.4g} (target {sign} {self.bound:g})"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "bound": self.bound,
            "at_least": self.at_least,
            "met": self.met,
        }


NO_TARGET = "no target: this benchmark reports its figures for the record"


def add_targets(parser: argparse.ArgumentParser, **bounds: float) -> None:
    """One option ``--target-NAME`` per bound an issue set (its default), so that a run can
    ask for another bound: a test sets one no run can meet and sees the exit status 1."""
    group = parser.add_argument_group(
        "targets", "the bounds the issues set; a run that misses one exits with status 1"
    )
    for name, bound in bounds.items():
        group.add_argument(
            f"--target-{name.replace('_', '-')}",
            dest=f"target_{name}",
            type=float,
            default=bound,
            metavar="BOUND",
            help=f"default {bound:g}",
        )


def verdict(targets: Sequence[Target], result: dict[str, Any] | None = None) -> int:
    """The benchmark's last word and its exit status: with ``result``, that object printed as
    JSON with the targets in it; without, one line per target (or that there is none).
    0 when every target is met (or there is none), 1 when one is missed."""
    if result is not None:
        met = "every target met" if all(t.met for t in targets) else "a target missed"
        said = {"targets": [t.as_json() for t in targets], "verdict": met if targets else NO_TARGET}
        print(json.dumps(result | said, indent=2))
    elif targets:
        for target in targets:
            print(target.line())
    else:
        print(NO_TARGET)
    return 0 if all(t.met for t in targets) else 1
