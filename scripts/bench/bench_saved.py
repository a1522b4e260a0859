"""Maxi Yatzy with saved rolls: cold and warm advice, and what a whole solve costs beside plain
Maxi Yatzy's, measured in the same run.

What it measures:

- ``cold``: ``memo-solver --store <fresh temp file> advise --rules maxi-yatzy-saved STATE``
  for ``--runs`` random late positions (three open boxes, any bank the scorecard allows, the
  dice rolled with any rolls left), each on an empty store, so the child solves the blocks
  it needs: wall and CPU (user + sys of the child). Target: at most 1 s wall.
- ``warm``: in this process, the same positions answered again once their blocks are in the
  engine's memo (``advise_held``, what a warm request runs): the median. Target: 1 ms.
- ``ratio``: the CPU of a whole solve of each rule set, per block by filled count: every
  layer's blocks (``--sample`` random ones, their successors random values) solved by the
  kernel as a whole solve does, weighted by the layer's block count: the projected CPU of
  each whole solve and their ratio. Target: saved at most 16 times plain (the operation
  counts differ about 15.6-fold).
- ``full`` (``--full``, about an hour on two cores): both whole precomputes for real, each a
  child ``memo-solver precompute`` into a fresh SQLite file, one after the other: CPU, wall,
  peak RSS, the store's size, the start values and the CPU ratio (the same target).
- ``stats``: the exact distribution, Scandinavian Yatzy beside Yatzy with saved rolls
  (``examples/rules/yatzy-saved.json``), from the scorecard with the first
  ``--stats-filled`` boxes filled (0: the whole game): each rule set's sub-game precomputed
  into a fresh SQLite file (untimed), then ``stats --json`` from there as a child: CPU,
  wall, peak RSS, and the mean beside the start value. The pass holds a layer's mass at
  once, each turn start's with its banks: with saved rolls the whole game's middle layer
  needs about 15 times ``yatzy``'s memory, more than a 24 GB host shared with other work
  has (BENCHMARKS.md). No target: the figures are for the record.

Run::

    .venv/bin/python scripts/bench/bench_saved.py                 # cold, warm, ratio
    .venv/bin/python scripts/bench/bench_saved.py ratio --json
    .venv/bin/python scripts/bench/bench_saved.py full            # the real whole solves
    .venv/bin/python scripts/bench/bench_saved.py stats --stats-filled 3
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from _bench import (
    ROOT,
    Target,
    add_targets,
    child_env,
    memo_solver_command,
    peak_rss_mb,
    run_child,
    verdict,
)

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.mean_advice import advise, advise_held
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import parse_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.games.yahtzee.solve.turn import solve_blocks
from memo_solver.stores.memory import MemoryStore

SAVED, PLAIN = "maxi-yatzy-saved", "maxi-yatzy"
PARTS = ("cold", "warm", "ratio", "full", "stats")
STATS_RULES = {
    "yatzy": ["--rules", "yatzy"],
    "yatzy-saved": ["--rules-file", str(ROOT / "examples" / "rules" / "yatzy-saved.json")],
}
"""The rule sets whose whole distributions ``stats`` measures, as the CLI names them."""
COLD_S, WARM_MS, RATIO = 1.0, 1.0, 16.0


def late_position(rules: RuleSet, rng: random.Random) -> str:
    """Three open boxes below the upper section (its bonus banked at 84), any bank, dice
    rolled with any rolls left the bank allows."""
    boxes = [c.name for c in rules.categories]
    opened = rng.sample(boxes[6:], 3)
    bank = rng.randint(0, rules.saved_levels(len(boxes) - 3) - 1)
    dice = "".join(str(rng.randint(1, 6)) for _ in range(rules.dice))
    left = rng.randint(0, bank + rules.rerolls)
    return f"open={','.join(opened)} upper=84 dice={dice} rolls={left}"


def cold(runs: int, seed: int) -> dict[str, Any]:
    rules = get_rule_set(SAVED)
    rng = random.Random(seed)
    command, env = memo_solver_command(None), child_env()
    walls, cpus, states = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-saved-") as tmp:
        for run in range(runs):
            state = late_position(rules, rng)
            store = str(Path(tmp) / f"cold-{run}.sqlite")
            child = run_child([command, "--store", store, "advise", "--rules", SAVED, state], env)
            walls.append(child.wall_s)
            cpus.append(child.cpu_s)
            states.append(state)
    return {
        "states": states,
        "median_wall_s": statistics.median(walls),
        "max_wall_s": max(walls),
        "median_cpu_s": statistics.median(cpus),
    }


def warm(runs: int, seed: int) -> dict[str, Any]:
    rules = get_rule_set(SAVED)
    rng = random.Random(seed)
    states = [parse_state(late_position(rules, rng), rules) for _ in range(runs)]

    async def measure() -> list[float]:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            for state in states:
                await advise(engine, rules, state)  # cold: solves and keeps the blocks
            times = []
            for _ in range(20):
                for state in states:
                    started = time.perf_counter()
                    advice = advise_held(engine.memo, rules, state)
                    times.append(time.perf_counter() - started)
                    assert advice is not None
            return times

    times = anyio.run(measure)
    return {"states": len(states), "median_ms": statistics.median(times) * 1000}


def projected_cpu(rules: RuleSet, sample: int, seed: int) -> float:
    """A whole solve's CPU: each layer's sampled blocks solved as one kernel call (as a
    whole solve does, in chunks), the CPU per block times the layer's block count."""
    rng = np.random.default_rng(seed)
    n = len(rules.categories)
    total = 0.0
    for filled_count in range(n):
        masks = [
            sum(1 << int(b) for b in rng.choice(n, filled_count, replace=False))
            for _ in range(sample)
        ]
        successors = {
            mask | 1 << b: rng.random(rules.block_shape_of(mask | 1 << b)) * 100
            for mask in masks
            for b in rules.open_boxes(mask)
        }
        solve_blocks(rules, masks[:1], successors)  # compiled, loaded, warmed
        started = time.process_time()
        solve_blocks(rules, masks, successors)
        total += (time.process_time() - started) / sample * math.comb(n, filled_count)
    return total


def ratio(sample: int, seed: int) -> dict[str, Any]:
    plain = projected_cpu(get_rule_set(PLAIN), sample, seed)
    saved = projected_cpu(get_rule_set(SAVED), sample, seed)
    return {"plain_cpu_s": plain, "saved_cpu_s": saved, "ratio": saved / plain}


def full() -> dict[str, Any]:
    command, env = memo_solver_command(None), child_env()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-saved-full-") as tmp:
        for name in (PLAIN, SAVED):
            store = Path(tmp) / f"{name}.sqlite"
            argv = [command, "--store", str(store), "precompute", "--rules", name, "--json"]
            child = run_child(argv, env)
            size = sum(p.stat().st_size for p in Path(tmp).glob(f"{name}.sqlite*"))
            figures[name] = {
                "cpu_s": child.cpu_s,
                "wall_s": child.wall_s,
                "peak_rss_mb": child.max_rss_mb,
                "store_gb": size / 1e9,
                "answer": child.stdout.strip(),
            }
    figures["ratio"] = figures[SAVED]["cpu_s"] / figures[PLAIN]["cpu_s"]
    return figures


def stats(filled: int) -> dict[str, Any]:
    command, env = memo_solver_command(None), child_env()
    boxes = [c.name for c in get_rule_set("yatzy").categories[:filled]]
    state = f"filled={','.join(boxes)}" if boxes else "start"
    figures: dict[str, Any] = {"state": state}
    with tempfile.TemporaryDirectory(prefix="bench-saved-stats-") as tmp:
        for name, rules in STATS_RULES.items():
            store = str(Path(tmp) / f"{name}.sqlite")
            asked = [command, "--store", store, "--json"]
            solved = run_child([*asked, "value", state, *rules], env)
            child = run_child([*asked, "stats", state, *rules], env)
            figures[name] = {
                "cpu_s": child.cpu_s,
                "wall_s": child.wall_s,
                "peak_rss_mb": child.max_rss_mb,
                "mean": json.loads(child.stdout)["mean"],
                "value": json.loads(solved.stdout)["value"],
            }
    figures["ratio"] = figures["yatzy-saved"]["cpu_s"] / figures["yatzy"]["cpu_s"]
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "parts", nargs="*", help=f"any of {', '.join(PARTS)} (default: all but full)"
    )
    parser.add_argument("--runs", type=int, default=5, help="cold advice runs (default 5)")
    parser.add_argument("--sample", type=int, default=8, help="blocks per layer (default 8)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--stats-filled",
        type=int,
        default=0,
        help="stats: the first N boxes filled first (default 0: the whole game)",
    )
    add_targets(parser, cold_s=COLD_S, warm_ms=WARM_MS, ratio=RATIO)
    args = parser.parse_args()
    parts = args.parts or ["cold", "warm", "ratio"]
    result: dict[str, Any] = {
        "host": {"cpu": platform.processor() or platform.machine(), "peak_rss_mb": 0.0}
    }
    targets = []
    if "cold" in parts:
        result["cold"] = cold(args.runs, args.seed)
        targets.append(
            Target("cold advice max wall s", result["cold"]["max_wall_s"], args.target_cold_s)
        )
    if "warm" in parts:
        result["warm"] = warm(args.runs, args.seed)
        targets.append(
            Target("warm advice median ms", result["warm"]["median_ms"], args.target_warm_ms)
        )
    if "ratio" in parts:
        result["ratio"] = ratio(args.sample, args.seed)
        targets.append(
            Target(
                "whole solve CPU, saved / plain (projected)",
                result["ratio"]["ratio"],
                args.target_ratio,
            )
        )
    if "full" in parts:
        result["full"] = full()
        targets.append(
            Target(
                "whole precompute CPU, saved / plain", result["full"]["ratio"], args.target_ratio
            )
        )
    if "stats" in parts:
        result["stats"] = stats(args.stats_filled)
    result["host"]["peak_rss_mb"] = peak_rss_mb()
    if args.json:
        return verdict(targets, result)
    print(
        f"host: {result['host']['cpu']}, this process's peak {result['host']['peak_rss_mb']:.0f} MB"
    )
    if "cold" in result:
        asked = result["cold"]
        print(
            f"cold advice, {len(asked['states'])} processes: median wall "
            f"{asked['median_wall_s']:.3f} s, max {asked['max_wall_s']:.3f} s, median CPU "
            f"{asked['median_cpu_s']:.3f} s"
        )
    if "warm" in result:
        print(f"warm advice in process: median {result['warm']['median_ms']:.3f} ms")
    if "ratio" in result:
        projected = result["ratio"]
        print(
            f"whole solve, projected: {PLAIN} {projected['plain_cpu_s']:.0f} CPU s, {SAVED} "
            f"{projected['saved_cpu_s']:.0f} CPU s, ratio {projected['ratio']:.2f}"
        )
    if "full" in result:
        for name in (PLAIN, SAVED):
            run = result["full"][name]
            print(
                f"whole precompute, {name}: {run['cpu_s']:.0f} CPU s, {run['wall_s']:.0f} s wall, "
                f"peak {run['peak_rss_mb']:.0f} MB, store {run['store_gb']:.2f} GB; {run['answer']}"
            )
        print(f"whole precompute CPU ratio: {result['full']['ratio']:.2f}")
    if "stats" in result:
        print(f"exact distribution from {result['stats']['state']}:")
        for name in STATS_RULES:
            run = result["stats"][name]
            print(
                f"  {name}: {run['cpu_s']:.1f} CPU s, {run['wall_s']:.1f} s wall, peak "
                f"{run['peak_rss_mb']:.0f} MB; mean {run['mean']:.10f}, value "
                f"{run['value']:.10f}"
            )
        print(f"  CPU ratio, saved / plain: {result['stats']['ratio']:.1f}")
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
