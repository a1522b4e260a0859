"""The compiled turn kernel against the numpy one it replaced, side by side in one run.

Each figure comes from child processes (CPU = user + sys of the child, ``os.wait4``, or the
child's own ``time.process_time`` around the timed part), alternating the two versions
``--rounds`` times so that a shared machine's drift hits both; medians are printed.

- ``maxi``: Maxi Yatzy blocks of three layers (5, 10 and 15 boxes filled), ``--sample``
  random blocks each with random successor values (the same for both versions, seeded),
  solved the way each version's precompute solves them: the base one block at a time
  (``solve_block``), ours a layer chunk at a time (``solve_blocks``). Target: ours at least
  5x faster.
- ``advice``: each version's ``scripts/bench/bench_advice.py --json``: warm advice median (the
  whole game in the process memo) and cold advice for a three-open-box state (a fresh
  in-memory store, then a fresh SQLite file, per state). Targets: warm no slower than the
  base; cold on the in-memory store at most 5 ms.
- ``library``: ours only, a cold ``yahtzee`` precompute into a fresh SQLite file through the
  CLI and through ``open_engine`` from a script: the library path as fast as the CLI.
- ``threads``: ours only, in one process with the kernel already loaded, the solve phase of
  a cold ``yahtzee`` solve (or ``--rules``; ``solve_layers`` on an in-memory store, then on
  a fresh SQLite file, as ``precompute`` does) with one thread and with two, and the bare
  kernel on the widest layer in one Python thread and in two (what two cores give the SIMD
  code itself, before any engine work); the load average before and after, and for each
  run how many cores other processes kept busy (``/proc/stat`` less this process's own
  CPU): medians over every round, and over the quiet rounds (others under ``QUIET_CORES``
  in both runs of the pair). Target: two threads at most 0.6 of one.

The base version is a git worktree of ``--base-commit`` (default: the commit before the
kernel) with its own venv, made under ``/tmp/memo-solver-bench/base`` on first use (pip,
about 2 minutes) and reused after.

Run (about 3 minutes)::

    .venv/bin/python scripts/bench/bench_kernel.py                 # every part, words
    .venv/bin/python scripts/bench/bench_kernel.py maxi threads    # some parts
    .venv/bin/python scripts/bench/bench_kernel.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _bench import ROOT, Target, add_targets, child_env, memo_solver_command, run_child, verdict

BASE_COMMIT = "7438a9f"
"""main before the compiled kernel: the numpy turn math."""
DEFAULT_BASE = Path("/tmp/memo-solver-bench/base")
PARTS = ("maxi", "advice", "library", "threads")
MAXI_SPEEDUP_TARGET = 5.0
COLD_ADVICE_TARGET_MS = 5.0
THREADS_TARGET = 0.6
WARM_ADVICE_RATIO_TARGET = 1.05
"""Warm advice no slower than the base's, with 5 % for noise."""
QUIET_CORES = 0.05
"""Other processes' average busy cores under which a threads round counts as quiet."""

# Run by both checkouts, ours and the base: written for either layout of the family.
MAXI_CHILD = """
import json, sys, time
import numpy as np
try:
    from memo_solver.games.yahtzee.rules.catalog import get_rule_set
    from memo_solver.games.yahtzee.solve import turn
except ImportError:  # the base commit's family, before its rooms (issue 30)
    from memo_solver.games.yahtzee.catalog import get_rule_set
    from memo_solver.games.yahtzee import turn
rules = get_rule_set("maxi-yatzy")
rng = np.random.default_rng(20261124)
sample, repeats = int(sys.argv[1]), int(sys.argv[2])
layers = []
for filled_count in (5, 10, 15):
    boxes = len(rules.categories)
    masks = []
    for _ in range(sample):
        chosen = rng.choice(boxes, size=filled_count, replace=False)
        masks.append(int(sum(1 << int(c) for c in chosen)))
    successors = {}
    for mask in masks:
        for box in rules.open_boxes(mask):
            successors[mask | 1 << box] = rng.random(rules.block_shape) * 300
    layers.append((masks, successors))
batch = getattr(turn, "solve_blocks", None)
def solve(masks, successors):
    if batch is not None:
        batch(rules, masks, successors)
    else:
        for mask in masks:
            turn.solve_block(rules, mask, successors)
for masks, successors in layers:  # untimed: compile or load, first numpy passes
    solve(masks[:2], successors)
started = time.process_time()
for _ in range(repeats):
    for masks, successors in layers:
        solve(masks, successors)
blocks = repeats * sum(len(m) for m, _ in layers)
print(json.dumps({"cpu_s": time.process_time() - started, "blocks": blocks}))
"""

LIBRARY_CHILD = """
import json, sys
from pathlib import Path
import anyio
from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.sqlite import SQLiteStore

async def main() -> float:
    game = YahtzeeGame(get_rule_set("yahtzee"))
    async with SQLiteStore(Path(sys.argv[1])) as store, open_engine(game, store) as engine:
        return float((await engine.solve_layers(game.root()))[0, 0])

print(json.dumps({"value": anyio.run(main)}))
"""

THREADS_CHILD = """
import gc, json, os, resource, shutil, sys, tempfile, threading, time
from pathlib import Path
import anyio
from memo_solver.games.yahtzee.solve import turn
from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.memory import MemoryStore
from memo_solver.stores.sqlite import SQLiteStore

rounds = int(sys.argv[1])
game = YahtzeeGame(get_rule_set(sys.argv[2]))
folder = Path(tempfile.mkdtemp(prefix="bench-threads-"))
files = iter(range(10**6))
TICKS = os.sysconf("SC_CLK_TCK")

def clock() -> tuple[float, float, float]:
    # the machine's busy CPU seconds, this process's, the wall clock
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\\n")[0].split()[1:]]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    busy = (sum(fields) - fields[3] - fields[4]) / TICKS
    return busy, usage.ru_utime + usage.ru_stime, time.perf_counter()

def timed(started: tuple[float, float, float]) -> tuple[float, float]:
    # the wall since ``started``, and how many cores other processes kept busy meanwhile
    busy, own, now = clock()
    wall = now - started[2]
    return wall, max(0.0, (busy - started[0]) - (own - started[1])) / wall

async def solve(threads: int, kind: str) -> tuple[float, float]:
    store = MemoryStore() if kind == "memory" else SQLiteStore(folder / f"{next(files)}.db")
    # The rounds' garbage collected before the clock starts: a full collection walks the
    # 110,000 objects of the loaded modules holding the GIL (25-50 ms), and fell in a timed
    # solve now and then, whichever the thread count.
    gc.collect()
    async with store, open_engine(game, store, threads=threads) as engine:
        started = clock()
        await engine.solve_layers(game.root())
        return timed(started)

# The widest layer solved by the bare kernel, split over Python threads: what two cores
# give this SIMD code before any engine work.
def bare_kernel(threads: int, blocks: dict[int, object], layer: list[int]) -> tuple[float, float]:
    parts = [(game.rules, layer[i::threads], blocks) for i in range(threads)]
    workers = [threading.Thread(target=turn.solve_blocks, args=part) for part in parts]
    gc.collect()
    started = clock()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return timed(started)


async def main() -> dict[str, object]:
    await solve(1, "memory")  # untimed: load the kernel, build the tables
    runs = {f"{kind}/{n}": [] for kind in ("memory", "sqlite", "kernel") for n in (1, 2)}
    load_before = os.getloadavg()
    blocks: dict[int, object] = {}
    for layer in game.rules.layers(0):
        for mask, block in zip(layer, turn.solve_blocks(game.rules, layer, blocks)):
            blocks[mask] = block
    widest = max(game.rules.layers(0), key=len)
    for _ in range(rounds):
        for kind in ("memory", "sqlite"):
            for threads in (1, 2):
                runs[f"{kind}/{threads}"].append(await solve(threads, kind))
        for threads in (1, 2):
            runs[f"kernel/{threads}"].append(bare_kernel(threads, blocks, widest))
    return {"runs": runs, "load_before": load_before, "load_after": os.getloadavg()}

try:
    print(json.dumps(anyio.run(main)))
finally:
    shutil.rmtree(folder)
"""


def ensure_base(path: Path, commit: str) -> Path:
    """The base checkout's python, made once (a git worktree and a venv), then reused."""
    python = path / ".venv" / "bin" / "python"
    if not python.exists():
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), commit],
                check=True,
                stdout=sys.stderr,
            )
        subprocess.run([sys.executable, "-m", "venv", str(path / ".venv")], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "-e", f"{path}[dev]"],
            check=True,
            stdout=sys.stderr,
        )
    return python


def child_json(argv: list[str]) -> dict[str, Any]:
    """A child's JSON output; it runs in its own checkout (``python -c`` imports the
    package from the current folder first)."""
    run = run_child(argv, child_env(), cwd=Path(argv[0]).parents[2])
    result: dict[str, Any] = json.loads(run.stdout)
    result["child_cpu_s"] = run.cpu_s
    return result


def median(values: list[float]) -> float:
    return statistics.median(values)


def bench_maxi(ours: str, base: str, rounds: int, sample: int, repeats: int) -> dict[str, Any]:
    cpu: dict[str, list[float]] = {"ours": [], "base": []}
    blocks = 0
    for round_no in range(rounds):
        order = [("ours", ours), ("base", base)]
        for name, python in order if round_no % 2 == 0 else order[::-1]:
            result = child_json([python, "-c", MAXI_CHILD, str(sample), str(repeats)])
            cpu[name].append(result["cpu_s"])
            blocks = result["blocks"]
    ours_s, base_s = median(cpu["ours"]), median(cpu["base"])
    return {
        "blocks_timed": blocks,
        "ours_cpu_s": ours_s,
        "base_cpu_s": base_s,
        "ours_ms_per_block": 1e3 * ours_s / blocks,
        "base_ms_per_block": 1e3 * base_s / blocks,
        "speedup": base_s / ours_s,
        "runs": cpu,
    }


def bench_advice(ours: str, base: str, rounds: int, states: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "base": []}
    for round_no in range(rounds):
        order = [("ours", ours, ROOT), ("base", base, Path(base).parents[2])]
        for name, python, checkout in order if round_no % 2 == 0 else order[::-1]:
            # Since the scripts moved into folders (``scripts/bench/``); older bases have
            # the benchmark at the top of ``scripts/``.
            moved = checkout / "scripts" / "bench" / "bench_advice.py"
            script = str(moved if moved.exists() else checkout / "scripts" / "bench_advice.py")
            runs[name].append(child_json([python, script, "--json", "--states", str(states)]))

    def figure(name: str, *path: str) -> float:
        values = []
        for run in runs[name]:
            value: Any = run
            for part in path:
                value = value[part]
            values.append(float(value))
        return median(values)

    result: dict[str, Any] = {}
    for name in ("ours", "base"):
        result[name] = {
            "warm_median_ms": figure(name, "warm", "median_ms"),
            "warm_p99_ms": figure(name, "warm", "p99_ms"),
            "cold_three_open_memory_median_ms": figure(name, "cold_three_open_memory", "median_ms"),
            "cold_three_open_sqlite_median_ms": figure(name, "cold_three_open_sqlite", "median_ms"),
        }
    ours_fig, base_fig = result["ours"], result["base"]
    result["warm_ratio_ours_over_base"] = ours_fig["warm_median_ms"] / base_fig["warm_median_ms"]
    return result


def bench_library(ours: str, rounds: int, tmp: Path) -> dict[str, Any]:
    command = memo_solver_command(str(Path(ours).parent / "memo-solver"))
    cpu: dict[str, list[float]] = {"cli": [], "library": []}
    for round_no in range(rounds):
        cli = [command, "--store", str(tmp / f"cli{round_no}.sqlite3"), "precompute"]
        library = [ours, "-c", LIBRARY_CHILD, str(tmp / f"lib{round_no}.sqlite3")]
        order = [("cli", [*cli, "--rules", "yahtzee", "--json"]), ("library", library)]
        for name, argv in order if round_no % 2 == 0 else order[::-1]:
            cpu[name].append(run_child(argv, child_env()).cpu_s)
    cli_s, library_s = median(cpu["cli"]), median(cpu["library"])
    return {
        "cli_cpu_s": cli_s,
        "library_cpu_s": library_s,
        "ratio_library_over_cli": library_s / cli_s,
        "runs": cpu,
    }


def bench_threads(ours: str, rounds: int, rules: str) -> dict[str, Any]:
    """Medians over every round, and over the quiet rounds: those in which other processes
    kept less than ``QUIET_CORES`` busy during both runs of the pair (on a 2-core machine
    shared with other sessions, one busy neighbour turns two threads into one)."""
    result = child_json([ours, "-c", THREADS_CHILD, str(rounds), rules])
    report: dict[str, Any] = {
        "load_before": result["load_before"],
        "load_after": result["load_after"],
        "runs": result["runs"],
    }
    for kind in ("memory", "sqlite", "kernel"):
        pairs = list(zip(result["runs"][f"{kind}/1"], result["runs"][f"{kind}/2"], strict=True))
        quiet = [(one, two) for one, two in pairs if max(one[1], two[1]) < QUIET_CORES]
        one, two = median([p[0][0] for p in pairs]), median([p[1][0] for p in pairs])
        report[kind] = {
            "one_thread_wall_s": one,
            "two_threads_wall_s": two,
            "ratio": two / one,
            "quiet_rounds": len(quiet),
        }
        if quiet:
            one, two = median([p[0][0] for p in quiet]), median([p[1][0] for p in quiet])
            report[kind]["quiet"] = {
                "one_thread_wall_s": one,
                "two_threads_wall_s": two,
                "ratio": two / one,
            }
    return report


def targets_of(report: dict[str, Any], args: argparse.Namespace) -> list[Target]:
    """The bounds of the parts that ran. The threads' is the solve phase's, over the quiet
    rounds where there are any (a busy neighbour turns two threads into one); the bare
    kernel's figure says what is left of it before any engine work (a diagnosis, held to no
    bound)."""
    targets = []
    if "maxi" in report:
        speedup = report["maxi"]["speedup"]
        targets.append(Target("maxi speed-up", speedup, args.target_maxi_speedup, at_least=True))
    if "advice" in report:
        advice = report["advice"]
        ratio = advice["warm_ratio_ours_over_base"]
        cold = advice["ours"]["cold_three_open_memory_median_ms"]
        targets.append(Target("warm advice ours/base", ratio, args.target_warm_advice_ratio))
        targets.append(Target("cold advice ms, memory", cold, args.target_cold_advice_ms))
    for kind in ("memory", "sqlite") if "threads" in report else ():
        row = report["threads"][kind]
        which = "quiet rounds" if "quiet" in row else "every round"
        ratio = row.get("quiet", row)["ratio"]
        targets.append(Target(f"2 threads/1 on {kind}, {which}", ratio, args.target_threads))
    return targets


def host() -> dict[str, Any]:
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("Run (about 3 minutes)::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("parts", nargs="*", help=f"any of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--sample", type=int, default=24, help="maxi blocks per layer")
    parser.add_argument("--repeats", type=int, default=2, help="maxi passes over the sample")
    parser.add_argument("--states", type=int, default=300, help="warm advice states")
    parser.add_argument("--rules", default="yahtzee", help="the threads part's (yahtzee)")
    parser.add_argument("--base", type=Path, default=DEFAULT_BASE, help="base checkout")
    parser.add_argument("--base-commit", default=BASE_COMMIT, help="its commit, if made")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(
        parser,
        maxi_speedup=MAXI_SPEEDUP_TARGET,
        warm_advice_ratio=WARM_ADVICE_RATIO_TARGET,
        cold_advice_ms=COLD_ADVICE_TARGET_MS,
        threads=THREADS_TARGET,
    )
    args = parser.parse_args()
    parts = args.parts or list(PARTS)
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown parts {unknown}: choose from {', '.join(PARTS)}")
    ours = sys.executable
    base = str(ensure_base(args.base, args.base_commit)) if {"maxi", "advice"} & set(parts) else ""
    report: dict[str, Any] = {"host": host(), "load_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-kernel-") as tmp:
        if "maxi" in parts:
            report["maxi"] = bench_maxi(ours, base, args.rounds, args.sample, args.repeats)
        if "advice" in parts:
            report["advice"] = bench_advice(ours, base, args.rounds, args.states)
        if "library" in parts:
            report["library"] = bench_library(ours, args.rounds, Path(tmp))
        if "threads" in parts:
            report["threads"] = bench_threads(ours, args.rounds, args.rules)
    report["load_end"] = os.getloadavg()
    targets = targets_of(report, args)
    if args.json:
        return verdict(targets, report)
    print(f"host: {report['host']['cpu']}, {report['host']['cores']} cores")
    print(f"load average at start {report['load_start']}, at end {report['load_end']}")
    if "maxi" in report:
        m = report["maxi"]
        print(
            f"maxi-yatzy, {m['blocks_timed']} sampled blocks of 3 layers: ours "
            f"{m['ours_ms_per_block']:.3f} ms/block, base {m['base_ms_per_block']:.3f} "
            f"ms/block: {m['speedup']:.1f}x"
        )
    if "advice" in report:
        a = report["advice"]
        for name in ("ours", "base"):
            f = a[name]
            print(
                f"advice {name}: warm median {f['warm_median_ms']:.3f} ms (p99 "
                f"{f['warm_p99_ms']:.3f}); cold three open, memory "
                f"{f['cold_three_open_memory_median_ms']:.2f} ms, SQLite "
                f"{f['cold_three_open_sqlite_median_ms']:.2f} ms"
            )
        print(f"  warm ours/base {a['warm_ratio_ours_over_base']:.2f}")
    if "library" in report:
        lib = report["library"]
        print(
            f"cold yahtzee precompute, CPU: CLI {lib['cli_cpu_s']:.2f} s, library path "
            f"{lib['library_cpu_s']:.2f} s (ratio {lib['ratio_library_over_cli']:.2f})"
        )
    if "threads" in report:
        t = report["threads"]
        for kind in ("memory", "sqlite", "kernel"):
            k = t[kind]
            what = "the bare kernel, widest layer" if kind == "kernel" else f"solve phase on {kind}"
            diagnosis = (
                " (no target: what two cores give the kernel and its batch set-up)"
                if kind == "kernel"
                else ""
            )
            print(
                f"yahtzee {what}, wall: 1 thread {k['one_thread_wall_s']:.3f} s, "
                f"2 threads {k['two_threads_wall_s']:.3f} s: {k['ratio']:.2f}{diagnosis}"
            )
            if "quiet" in k:
                q = k["quiet"]
                print(
                    f"  {k['quiet_rounds']} quiet rounds: 1 thread {q['one_thread_wall_s']:.3f}"
                    f" s, 2 threads {q['two_threads_wall_s']:.3f} s: {q['ratio']:.2f}"
                )
        print(f"  load {t['load_before']} -> {t['load_after']}")
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
