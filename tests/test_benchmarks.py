"""The benchmark scripts keep their word: each prints its targets and a verdict, and exits 1
when a target it prints is missed (``scripts/bench/_bench.py``).

Each benchmark runs at its smallest options (tiny rule sets, one round, a few games), with
one target set by its own ``--target-NAME`` option to a bound no run can meet, so that the
exit status 1 comes from a real run and a real verdict; a benchmark with no target says so
and exits 0. The suite runs those that fit its growth budget (about 25 CPU s in all, the
fewest processes for what they cover); the others run under ``-m full``: those that start
the most processes (Redis Cluster, the HTTP pairs, the worker pools), and those that need
what CI has not (a cold compile of every function, a base checkout with its own venv, the
``yatzy-solver`` wheel, ``wrk``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _bench import NO_TARGET, Target, add_targets, bare_env, verdict

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "scripts" / "bench"
AT_ONCE = 4
"""Benchmarks running side by side: enough to keep two cores busy while some wait on their
children, few enough that their own waits (60 s for a worker's first heartbeat) hold."""


@dataclass(frozen=True)
class Run:
    """A benchmark at its smallest options, and the target they make it miss."""

    script: str
    options: str
    """As typed at a shell; ``{root}`` stands for this checkout."""
    missed: str | None = None
    """The name of the target set out of reach, as the verdict prints it; None for a
    benchmark with no target, which says so."""
    words: bool = False
    """True for a benchmark that prints JSON without being asked (``--json``)."""

    def argv(self) -> list[str]:
        form = [] if self.words else ["--json"]
        options = shlex.split(self.options.format(root=ROOT))
        return [sys.executable, str(BENCH / self.script), *options, *form]


@dataclass(frozen=True)
class Outcome:
    status: int
    report: dict[str, Any]
    errors: str
    cpu_s: float
    """The benchmark's CPU and its children's (``os.wait4``)."""


IN_THE_SUITE = (
    Run(
        "bench_advice.py",
        "--rules yahtzee-lower --states 3 --cold 1 --target-cold-ms 0",
        "cold max ms, MemoryStore",
    ),
    Run("bench_cli.py", "--runs 1 --target-advise-s 0", "advise max wall s"),
    Run("bench_cold.py", "--rules yahtzee-lower --target-cpu-ratio 0", "CPU value/precompute"),
    Run(
        "bench_dice_of_doom.py",
        "--rounds 1 --size 2 --workers 1 --target-memory-gib 0",
        "peak memory GiB",
    ),
    Run(
        "bench_kernel.py",
        "threads --rules yahtzee-lower --rounds 1 --target-threads 0",
        "2 threads/1 on memory",
    ),
    Run("bench_maxi.py", "--runs 1 --sample 1 --target-cold-s 0", "cold advice max wall s"),
    Run(
        "bench_need.py",
        "pins --store need.db --rules yahtzee-lower --cap 60 --targets 50 --target-difference -1",
        "pins: backward - forward",
        words=True,
    ),
    Run("bench_need.py", "table --store need.db --rules yahtzee-lower --cap 60", words=True),
    Run("bench_need_advice.py", "warm --warm-states 2 --target-warm-ms 0", "warm median ms"),
    Run(
        "bench_need_workers.py",
        "--rules yahtzee-lower --cap 60 --target-computed-twice -1",
        "blocks computed twice",
    ),
    Run(
        "bench_simulate.py",
        "--rules yahtzee-lower --cold-games 2 --games 2 --warm-games 2"
        " --target-warm-games-per-s 1e12",
        "warm games/s",
    ),
    Run(
        "load_api.py",
        "--rules yahtzee-lower --requests 20 --warmup 0 --concurrency 2 --target-p50-ms 0",
        "p50 ms",
    ),
)
"""Each with a bound of 0 on a time, a size, a ratio of times or a difference, or of 10**12
on a rate: out of any run's reach."""

UNDER_FULL = (
    Run("bench_api.py", "--runs 1 --batch 2 --cold 1 --target-cold-s 0", "cold median s"),
    Run("bench_cluster.py", "--rules yahtzee-lower --target-share 0", "largest master share"),
    Run("bench_compile.py", "--rounds 1"),
    Run(
        "bench_forward.py",
        "--base {root} --rules yahtzee-lower --games 5 --rounds 1",
        "simulate speed-up base/ours",  # this checkout as its own base: 1x, not 3x
    ),
    Run(
        "bench_health.py",
        "--foreign 10 --samples 1 --cli-samples 1 --target-http-ms 0",
        "slowest HTTP request ms",
    ),
    Run(
        "bench_kernel.py",
        "maxi --rounds 1 --sample 1 --repeats 1 --target-maxi-speedup 1e12",
        "maxi speed-up",  # the base checkout and its venv made on first use (pip, minutes)
    ),
    Run(
        "bench_precompute.py",
        "--rounds 1 --target-store-mb 0",
        "store MB",  # the wheel installed into a scratch venv on first use
    ),
    Run(
        "bench_risk.py",
        "--rules yahtzee-lower --rounds 1 --states 1 --target-cold-5-s 0",
        "cold, 5 open, median wall s",
    ),
    Run(
        "bench_saved.py",
        "cold warm --runs 1 --target-warm-ms 0",
        "warm advice median ms",  # cold advice on maxi-yatzy-saved: seconds, not minutes
    ),
    Run(
        "bench_lean.py",
        "--rules yahtzee-lower --target-cpu-ratio 0",
        "workers' CPU / one process's",
    ),
    Run(
        "bench_redis_memory.py",
        "--rules yahtzee-lower --target-gib 0",
        "redis-server with its fork + workers' peaks, GiB",
    ),
    Run("bench_scaling.py", "--threads 1 --workers '' --rounds 1"),
    Run(
        "bench_serve.py",
        "--base {root} --runs 1 --duration 1 --warmup 1 --workers 1 --bodies 10"
        " --target-cpu-ratio 0",
        "CPU/request this/base",  # wrk installed with apt-get on first use (as root)
    ),
    Run(
        "bench_workers.py",
        "--rules yahtzee-lower --rounds 1 --target-split 0",
        "two workers: larger share",
    ),
)


def test_a_missed_target_fails_the_run_and_its_line_says_which(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = verdict([Target("wall s", 0.5, 1.0), Target("requests/s", 900, 1000, at_least=True)])
    assert status == 1
    assert capsys.readouterr().out.splitlines() == [
        "  PASS  wall s: 0.5 (target <= 1)",
        "  FAIL  requests/s: 900 (target >= 1000)",
    ]


def test_a_run_that_meets_every_target_passes_and_a_condition_shows_no_number(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert verdict([Target("wall s", 1.0, 1.0), Target.holds("no block twice", True)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "  PASS  wall s: 1 (target <= 1)",
        "  PASS  no block twice",
    ]


def test_a_figure_that_could_not_be_measured_misses_its_target() -> None:
    assert not Target("p99 ms", math.nan, 25.0).met
    assert not Target("requests/s", math.nan, 1000.0, at_least=True).met
    assert not Target.holds("every answer given", False).met


def test_a_benchmark_with_no_target_says_so_and_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert verdict([]) == 0
    assert capsys.readouterr().out == NO_TARGET + "\n"
    assert verdict([], {"figure": 1.0}) == 0
    assert json.loads(capsys.readouterr().out) == {
        "figure": 1.0,
        "targets": [],
        "verdict": NO_TARGET,
    }


def test_the_json_verdict_carries_every_target_and_the_word() -> None:
    missed = Target("cold ms", 60.0, 50.0)
    assert missed.as_json() == {
        "name": "cold ms",
        "value": 60.0,
        "bound": 50.0,
        "at_least": False,
        "met": False,
    }


def test_each_bound_is_an_option_that_defaults_to_the_issues() -> None:
    parser = argparse.ArgumentParser()
    add_targets(parser, cold_ms=50.0, warm_games_per_s=1000.0)
    assert vars(parser.parse_args([])) == {
        "target_cold_ms": 50.0,
        "target_warm_games_per_s": 1000.0,
    }
    forced = parser.parse_args(["--target-cold-ms", "0"])
    assert forced.target_cold_ms == 0.0


def run(benchmark: Run, folder: Path) -> Outcome:
    """One benchmark to its end, in a folder of its own (its temporary files too), on an
    environment without the caller's ``MEMO_SOLVER_`` settings."""
    folder.mkdir()
    env = bare_env() | {"TMPDIR": str(folder)}  # what a benchmark leaves goes with it
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


def run_side_by_side(runs: tuple[Run, ...], folder: Path) -> None:
    """Every run to its end, ``AT_ONCE`` at a time (each has its own files, ports and Redis),
    then each one's verdict checked: its forced target missed and exit 1, or no target and
    exit 0. Prints the wall and the CPU of each (``-s`` shows them)."""
    started = time.perf_counter()
    with ThreadPoolExecutor(AT_ONCE) as pool:
        outcomes = list(pool.map(lambda i: run(runs[i], folder / str(i)), range(len(runs))))
    wall = time.perf_counter() - started
    print(f"{len(runs)} benchmarks: {wall:.1f} s wall, {sum(o.cpu_s for o in outcomes):.1f} CPU s")
    for benchmark, outcome in zip(runs, outcomes, strict=True):
        print(f"  {outcome.cpu_s:6.1f} CPU s  {benchmark.script} {benchmark.options}")
    for benchmark, outcome in zip(runs, outcomes, strict=True):
        said = f"{benchmark.script} {benchmark.options}: exit {outcome.status}\n{outcome.errors}"
        if benchmark.missed is None:
            assert outcome.status == 0, said
            assert outcome.report["verdict"] == NO_TARGET, said
            continue
        assert outcome.status == 1, said
        missed = [t["name"] for t in outcome.report["targets"] if not t["met"]]
        assert any(name.startswith(benchmark.missed) for name in missed), said


@pytest.mark.slow
def test_every_benchmark_in_the_suite_runs_small_and_a_missed_target_exits_1(
    tmp_path: Path,
) -> None:
    run_side_by_side(IN_THE_SUITE, tmp_path)


@pytest.mark.full
def test_the_costlier_benchmarks_run_small_and_a_missed_target_exits_1(tmp_path: Path) -> None:
    run_side_by_side(UNDER_FULL, tmp_path)


def test_the_suite_and_full_between_them_run_every_benchmark() -> None:
    scripts = {path.name for path in BENCH.glob("*.py") if not path.name.startswith("_")}
    assert {r.script for r in IN_THE_SUITE + UNDER_FULL} == scripts
