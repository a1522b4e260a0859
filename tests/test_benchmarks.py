"""The benchmark scripts keep their word: each prints its targets and a verdict, and exits 1
when a target it prints is missed (``scripts/bench/_bench.py``).

The slow test runs every benchmark at its smallest options (tiny rule sets, one round, a
few games), each with one target set by its own ``--target-NAME`` option to a bound no run
can meet, so that the exit status 1 comes from a real run and a real verdict; a benchmark
with no target says so and exits 0. Four need what CI does not have (a cold compile of
every function, a base checkout with its own venv, the ``yatzy-solver`` wheel, ``wrk``):
they run under ``-m full``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _bench import NO_TARGET

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "scripts" / "bench"
AT_ONCE = 4
"""Benchmarks running side by side: enough to keep two cores busy while some wait on their
children, few enough that their own waits (60 s for a worker's first heartbeat) hold."""


@dataclass(frozen=True)
class Run:
    """A benchmark at its smallest options, and the target they make it miss."""

    script: str
    options: tuple[str, ...]
    missed: str | None = None
    """The name of the target set out of reach, as the verdict prints it; None for a
    benchmark with no target, which says so."""

    def argv(self) -> list[str]:
        return [sys.executable, str(BENCH / self.script), *self.options, "--json"]


@dataclass(frozen=True)
class Outcome:
    status: int
    report: dict[str, Any]
    errors: str
    cpu_s: float
    """The benchmark's CPU and its children's (``os.wait4``)."""


OUT_OF_REACH = "0"
"""A bound of 0 on a time, a size or a ratio of two times: no run meets it."""
BEYOND_REACH = "1e12"
"""A rate or a speed-up of 10**12: no run reaches it."""
LOWER = ("--rules", "yahtzee-lower")
"""128 blocks of one value each: solved in a blink."""

EVERY_RUN = (
    Run(
        "bench_advice.py",
        (*LOWER, "--states", "3", "--cold", "1", "--target-cold-ms", OUT_OF_REACH),
        "cold max ms, MemoryStore",
    ),
    Run(
        "bench_api.py",
        ("--runs", "1", "--batch", "2", "--cold", "1", "--target-cold-s", OUT_OF_REACH),
        "cold median s",
    ),
    Run("bench_cli.py", ("--runs", "1", "--target-advise-s", OUT_OF_REACH), "advise max wall s"),
    Run(
        "bench_cluster.py",
        (*LOWER, "--target-share", OUT_OF_REACH),
        "largest master share",
    ),
    Run("bench_cold.py", (*LOWER, "--target-cpu-ratio", OUT_OF_REACH), "CPU value/precompute"),
    Run(
        "bench_dice_of_doom.py",
        ("--rounds", "1", "--size", "2", "--workers", "1", "--target-memory-gib", OUT_OF_REACH),
        "peak memory GiB",
    ),
    Run(
        "bench_forward.py",
        ("--base", str(ROOT), *LOWER, "--games", "5", "--rounds", "1"),
        "simulate speed-up base/ours",  # the base is this checkout: 1x, not 3x
    ),
    Run(
        "bench_health.py",
        ("--foreign", "10", "--samples", "1", "--cli-samples", "1", "--target-http-ms", "0"),
        "slowest HTTP request ms",
    ),
    Run(
        "bench_kernel.py",
        ("threads", "--rounds", "1", "--target-threads", OUT_OF_REACH),
        "2 threads/1 on memory",
    ),
    Run(
        "bench_maxi.py",
        ("--runs", "1", "--sample", "1", "--target-cold-s", OUT_OF_REACH),
        "cold advice max wall s",
    ),
    Run(
        "bench_need.py",
        ("pins", *LOWER, "--cap", "60", "--targets", "50", "--target-difference", "-1"),
        "pins: backward - forward",
    ),
    Run("bench_need.py", ("table", *LOWER, "--cap", "60")),
    Run(
        "bench_need_advice.py",
        ("warm", "--warm-states", "2", "--target-warm-ms", OUT_OF_REACH),
        "warm median ms",
    ),
    Run(
        "bench_need_workers.py",
        (*LOWER, "--cap", "60", "--target-computed-twice", "-1"),
        "blocks computed twice",
    ),
    Run("bench_scaling.py", ("--threads", "1", "--workers", "", "--rounds", "1")),
    Run(
        "bench_simulate.py",
        (
            *LOWER,
            "--cold-games",
            "2",
            "--games",
            "2",
            "--warm-games",
            "2",
            *("--target-warm-games-per-s", BEYOND_REACH),
        ),
        "warm games/s",
    ),
    Run(
        "bench_workers.py",
        (*LOWER, "--rounds", "1", "--target-split", OUT_OF_REACH),
        "two workers: larger share",
    ),
    Run(
        "load_api.py",
        ("--requests", "20", "--warmup", "0", "--concurrency", "2", "--target-rps", BEYOND_REACH),
        "requests/s",
    ),
)


def run(benchmark: Run, folder: Path) -> Outcome:
    """One benchmark to its end, in a folder of its own, on an environment without the
    caller's ``MEMO_SOLVER_`` settings."""
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_SOLVER_")}
    with (folder / "out").open("w+b") as out, (folder / "err").open("w+b") as err:
        child = subprocess.Popen(benchmark.argv(), cwd=folder, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode()
        return Outcome(
            status=child.returncode,
            report=json.loads(text) if text.startswith("{") else {},
            errors=err.read().decode(errors="replace")[-3000:],
            cpu_s=usage.ru_utime + usage.ru_stime,
        )


@pytest.mark.slow
def test_every_benchmark_runs_at_its_smallest_options_and_a_missed_target_exits_1(
    tmp_path: Path,
) -> None:
    """Side by side, ``AT_ONCE`` at a time (each has its own files, ports and Redis)."""
    started = time.perf_counter()
    with ThreadPoolExecutor(AT_ONCE) as pool:
        outcomes = list(
            pool.map(lambda pair: run(pair[1], tmp_path / str(pair[0])), enumerate(EVERY_RUN))
        )
    wall = time.perf_counter() - started
    cpu = sum(o.cpu_s for o in outcomes)
    print(f"{len(EVERY_RUN)} benchmarks: {wall:.1f} s wall, {cpu:.1f} CPU s")
    for benchmark, outcome in zip(EVERY_RUN, outcomes, strict=True):
        print(f"  {outcome.cpu_s:6.1f} CPU s  {benchmark.script} {' '.join(benchmark.options)}")
        said = f"{benchmark.script} {benchmark.options}: exit {outcome.status}\n{outcome.errors}"
        if benchmark.missed is None:
            assert outcome.status == 0, said
            assert outcome.report["verdict"] == NO_TARGET, said
            continue
        assert outcome.status == 1, said
        missed = [t["name"] for t in outcome.report["targets"] if not t["met"]]
        assert any(name.startswith(benchmark.missed) for name in missed), said
