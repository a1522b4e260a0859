"""How a cold full solve scales over the cores of one host: threads in one process, and
worker processes sharing one Redis (issue #17's scaling table).

- threads (``--threads 1,2,4,8,16``): one child process loads the kernel and builds the
  tables (one untimed solve), then, ``--rounds`` times and for each count, times the solve
  phase of a cold ``yahtzee`` solve (``Engine.solve_layers`` from the root, as
  ``precompute`` runs it once started) on a fresh in-memory store and on a fresh SQLite
  file: wall, the process's CPU (user + sys of all its threads, ``getrusage``), the cores
  other processes kept busy meanwhile (``/proc/stat`` less its own CPU), the value against
  the pin. The counts' order turns every round, so a drifting host hits each alike.
- maxi threads (``--maxi-threads 16,1``): a cold full ``maxi-yatzy`` precompute as a whole
  process, ``python -m memo_solver --store <fresh SQLite file> precompute --rules
  maxi-yatzy --threads N --json``, once per count: wall, its solve phase (the command's
  own ``seconds``), CPU (``os.wait4``), peak RSS, the value against the pin. Minutes of CPU
  each, so none by default.
- workers (``--workers 1,2,4,8,16``): N ``python -m worker`` processes (one thread each)
  on a fresh redis-server serve a cold full ``yahtzee`` precompute job
  (``bench_workers.run_pool``), once they have served a warm-up job (``WARM_UP``): the
  job's wall (its record's ``queued_at`` to ``finished_at``; and as seen from here, the
  queueing CLI's start-up included), the CPU of the workers and of redis-server from just
  before the job is queued to just after it is done (the workers' start-up left out), each
  worker's blocks computed (their sum must be the block count: no block computed twice),
  the value against the pin.
- maxi workers (``--maxi-workers 16``): the same for ``maxi-yatzy``, once per count (none
  by default).

Speed-up is one's median wall over N's (where one is among the counts); efficiency is the
speed-up over N; CPU over wall is how many cores the run kept busy. The host's ``lscpu``
and the load average before and after go with the figures. Words print a Markdown table
per part; ``--json`` prints one object with every run. No target: the figures are for the
record (BENCHMARKS.md, "Scaling on 16 cores").

Run on any many-core host from a checkout (installed, or ``PYTHONPATH=$PWD``; the worker
parts need ``redis-server`` on the PATH, see tests/support/redis_server.py), with the compile
cache warmed first (``python -m memo_solver compile``); about two minutes for the
``yahtzee`` parts on 16 cores, plus about 130 CPU s per ``maxi-yatzy`` run::

    python scripts/bench/bench_scaling.py                                  # yahtzee, 1-16
    python scripts/bench/bench_scaling.py --threads 1,2,4,8,16 --workers 1,2,4,8,16 \\
        --rounds 3 --json
    python scripts/bench/bench_scaling.py --threads '' --workers '' --maxi-threads 16,1 \\
        --maxi-workers 16
    python scripts/bench/bench_scaling.py --threads 1,2 --workers 1,2 --rounds 1   # a 2-core check
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_workers as bw
from _bench import ROOT, child_env, run_child, verdict
from bench_kernel import host
from support.redis_server import ensure_redis_server

LSCPU_KEYS = (
    "Model name",
    "CPU(s)",
    "Thread(s) per core",
    "Core(s) per socket",
    "Socket(s)",
    "NUMA node(s)",
    "Hypervisor vendor",
    "L2 cache",
    "L3 cache",
)

WARM_UP = {"yahtzee": "yahtzee-free-joker", "maxi-yatzy": "yahtzee"}
"""What a pool precomputes, untimed, before the measured job: workers are started once and
serve many jobs, and a worker's first job loads numba and the compiled kernel (about 0.4
CPU s on a 2-core AMD EPYC), which would swamp a ``yahtzee`` job spread over 16."""

THREADS_CHILD = """
import json, resource, sys, tempfile, time
from pathlib import Path
import anyio
sys.path.insert(0, "scripts/bench")
from _bench import machine_busy_s
from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.memory import MemoryStore
from memo_solver.stores.sqlite import SQLiteStore

counts, rounds = [int(n) for n in sys.argv[1].split(",")], int(sys.argv[2])
kinds = sys.argv[3].split(",")
game = YahtzeeGame(get_rule_set("yahtzee"))

def clock() -> tuple[float, float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return machine_busy_s(), usage.ru_utime + usage.ru_stime, time.perf_counter()

async def solve(threads: int, kind: str, path: Path) -> dict[str, float]:
    store = SQLiteStore(path) if kind == "sqlite" else MemoryStore()
    async with store, open_engine(game, store, threads=threads) as engine:
        busy, own, started = clock()
        root = await engine.solve_layers(game.root())
        busy_after, own_after, ended = clock()
    wall, cpu = ended - started, own_after - own
    others = max(0.0, (busy_after - busy) - cpu) / wall
    return {"wall_s": wall, "cpu_s": cpu, "others_cores": others, "value": float(root[0, 0])}

async def main() -> dict[str, list[dict[str, float]]]:
    runs = {f"{kind}/{n}": [] for kind in kinds for n in counts}
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        await solve(1, "memory", Path(tmp))  # untimed: load the kernel, build the tables
        for round_no in range(rounds):
            turned = counts[round_no % len(counts):] + counts[:round_no % len(counts)]
            for n in turned:
                for kind in kinds:
                    path = Path(tmp) / f"{kind}-{n}-{round_no}.sqlite3"
                    runs[f"{kind}/{n}"].append(await solve(n, kind, path))
    return runs

print(json.dumps(anyio.run(main)))
"""


def counts(text: str) -> list[int]:
    """``1,2,4`` as a list; an empty text skips the part."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of counts: {text!r}") from None
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"counts must be 1 or more: {text!r}")
    return values


def lscpu() -> dict[str, str]:
    """The host's CPU as ``lscpu`` names it (empty where there is no ``lscpu``)."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    rows = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, v in rows if k.strip() in LSCPU_KEYS}


def check_value(value: float, pin: float, what: str) -> None:
    if abs(value - pin) > bw.TOLERANCE:
        raise SystemExit(f"{what}: start value {value!r}, pinned {pin}")


def table(
    runs: dict[int, list[dict[str, Any]]], wall: str, cpu: Callable[[dict[str, Any]], float]
) -> list[dict[str, Any]]:
    """Per count: median wall and CPU, the cores kept busy (CPU over wall), and the speed-up
    and efficiency against one (none where one was not measured)."""
    rows: list[dict[str, Any]] = []
    for n in sorted(runs):
        wall_s = statistics.median(r[wall] for r in runs[n])
        cpu_s = statistics.median(cpu(r) for r in runs[n])
        rows.append({"n": n, "wall_s": wall_s, "cpu_s": cpu_s, "busy_cores": cpu_s / wall_s})
    one = rows[0]["wall_s"] if rows[0]["n"] == 1 else None
    for row in rows:
        row["speedup"] = one / row["wall_s"] if one else None
        row["efficiency"] = row["speedup"] / row["n"] if one else None
    return rows


def bench_threads(threads: list[int], rounds: int) -> dict[str, Any]:
    kinds = ["memory", "sqlite"]
    argv = [sys.executable, "-c", THREADS_CHILD, ",".join(map(str, threads)), str(rounds)]
    runs = json.loads(run_child([*argv, ",".join(kinds)], child_env(), cwd=ROOT).stdout)
    pin = _pin("yahtzee")
    report: dict[str, Any] = {}
    for kind in kinds:
        by_count = {n: runs[f"{kind}/{n}"] for n in threads}
        for n, rows in by_count.items():
            for row in rows:
                check_value(row["value"], pin, f"{kind} store, {n} threads")
        report[kind] = {
            "table": table(by_count, "wall_s", lambda r: float(r["cpu_s"])),
            "runs": {str(n): rows for n, rows in by_count.items()},
        }
    return report


def bench_maxi_threads(threads: list[int]) -> dict[str, Any]:
    pin = _pin("maxi-yatzy")
    runs: dict[int, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scaling-maxi-") as tmp:
        for n in threads:
            store = Path(tmp) / f"maxi-{n}.sqlite3"
            argv = [sys.executable, "-m", "memo_solver", "--store", str(store), "precompute"]
            argv += ["--rules", "maxi-yatzy", "--threads", str(n), "--json"]
            child = run_child(argv, child_env(), cwd=ROOT)
            payload = json.loads(child.stdout)
            check_value(float(payload["value"]), pin, f"maxi-yatzy, {n} threads")
            if payload["blocks_computed"] != payload["blocks_total"]:
                raise SystemExit(f"not a cold solve: {payload}")
            runs[n] = [
                {
                    "wall_s": child.wall_s,
                    "solve_s": float(payload["seconds"]),
                    "cpu_s": child.cpu_s,
                    "max_rss_mb": child.max_rss_mb,
                    "value": float(payload["value"]),
                }
            ]
            for leftover in Path(tmp).glob(store.name + "*"):
                leftover.unlink()
    return {
        "table": table(runs, "wall_s", lambda r: float(r["cpu_s"])),
        "runs": {str(n): rows for n, rows in runs.items()},
    }


def bench_workers(rules: str, workers: list[int], rounds: int, say: Callable[[str], None]) -> Any:
    bw.use_rules(rules)
    binary = ensure_redis_server()
    runs: dict[int, list[dict[str, Any]]] = {n: [] for n in workers}
    with tempfile.TemporaryDirectory(prefix="bench-scaling-workers-") as tmp:
        for round_no in range(rounds):
            for n in workers[round_no % len(workers) :] + workers[: round_no % len(workers)]:
                folder = Path(tmp) / f"{rules}-{n}-{round_no}"
                names = [f"w{i + 1}" for i in range(n)]
                run = bw.run_pool(binary, folder, names, warm_up=WARM_UP[rules])
                if run.total != bw.BLOCKS:
                    raise SystemExit(f"{n} workers computed {run.total} blocks, not {bw.BLOCKS}")
                runs[n].append(
                    {
                        "job_s": run.job_s,
                        "wall_s": run.wall_s,
                        "cpu_s": run.cpu_s,
                        "workers_cpu_s": sum(run.worker_cpu_s.values()),
                        "redis_cpu_s": run.redis_cpu_s,
                        "computed": run.computed,
                        "workers_that_computed": sum(1 for c in run.computed.values() if c),
                        "value": run.value,
                    }
                )
                say(
                    f"  {rules}, {n:>2} workers, round {round_no + 1}: job {run.job_s:.2f} s, "
                    f"CPU {run.cpu_s:.2f} s, blocks {run.total} (larger share "
                    f"{run.larger_share:.1%})"
                )
    return {
        "rules": rules,
        "blocks": bw.BLOCKS,
        "table": table(runs, "job_s", lambda r: float(r["cpu_s"])),
        "runs": {str(n): rows for n, rows in runs.items()},
    }


def _pin(rules: str) -> float:
    from memo_solver.games.yahtzee.rules.catalog import get_rule_set

    pin = get_rule_set(rules).start_value
    assert pin is not None
    return pin


def markdown(title: str, rows: list[dict[str, Any]], unit: str) -> str:
    lines = [
        title,
        "",
        f"| {unit} | wall s | CPU s | CPU / wall | speed-up | efficiency |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        speedup = "-" if row["speedup"] is None else f"{row['speedup']:.2f}"
        efficiency = "-" if row["efficiency"] is None else f"{row['efficiency']:.2f}"
        lines.append(
            f"| {row['n']} | {row['wall_s']:.3f} | {row['cpu_s']:.2f} | "
            f"{row['busy_cores']:.2f} | {speedup} | {efficiency} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=counts, default=[1, 2, 4, 8, 16], help="e.g. 1,2,4")
    parser.add_argument("--workers", type=counts, default=[1, 2, 4, 8, 16], help="e.g. 1,2,4")
    parser.add_argument("--maxi-threads", type=counts, default=[], help="e.g. 16,1")
    parser.add_argument("--maxi-workers", type=counts, default=[], help="e.g. 16")
    parser.add_argument("--rounds", type=int, default=3, help="yahtzee rounds (default 3)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    report: dict[str, Any] = {
        "host": {**host(), "lscpu": lscpu()},
        "load_start": os.getloadavg(),
        "command": " ".join(sys.argv),
    }
    if args.threads:
        say(f"threads {args.threads}, yahtzee solve phase, {args.rounds} rounds")
        report["threads"] = bench_threads(args.threads, args.rounds)
    if args.workers:
        say(f"workers {args.workers}, yahtzee precompute job, {args.rounds} rounds")
        report["workers"] = bench_workers("yahtzee", args.workers, args.rounds, say)
    if args.maxi_threads:
        say(f"maxi-yatzy precompute, threads {args.maxi_threads}")
        report["maxi_threads"] = bench_maxi_threads(args.maxi_threads)
    if args.maxi_workers:
        say(f"maxi-yatzy precompute job, workers {args.maxi_workers}")
        report["maxi_workers"] = bench_workers("maxi-yatzy", args.maxi_workers, 1, say)
    report["load_end"] = os.getloadavg()
    if args.json:
        return verdict([], report)
    cpu = report["host"]["lscpu"].get("Model name", report["host"]["cpu"])
    print(f"host: {cpu}, {report['host']['cores']} cores; load average at start")
    print(f"{report['load_start']}, at end {report['load_end']}\n")
    parts = [
        ("threads", "memory", "yahtzee solve phase, in-memory store", "threads"),
        ("threads", "sqlite", "yahtzee solve phase, SQLite store", "threads"),
        ("workers", None, "yahtzee precompute job through workers on one Redis", "workers"),
        ("maxi_threads", None, "maxi-yatzy precompute, whole process", "threads"),
        ("maxi_workers", None, "maxi-yatzy precompute job through workers", "workers"),
    ]
    for part, kind, title, unit in parts:
        if part in report and (kind is None or kind in report[part]):
            figures = report[part][kind] if kind else report[part]
            print(markdown(title, figures["table"], unit))
    return verdict([])


if __name__ == "__main__":
    sys.exit(main())
