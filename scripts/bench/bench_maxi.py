"""Maxi Yatzy (six dice, 20 boxes): cold late-game advice as a whole process, and what a full
solve costs, measured on a sample of blocks and projected.

What it measures:

- cold advice: ``memo-solver --store <fresh temp file> advise --rules maxi-yatzy STATE`` for
  ``--runs`` random late positions (three open boxes, dice rolled, two rerolls left), each
  on an empty store, so the child solves the 8 blocks it needs: wall and CPU (user + sys of
  the child, ``os.wait4``). Target: at most 1 s wall.
- the full solve, projected: the CPU of one block depends on how many boxes are open (the
  scoring step's width), how many upper levels it holds (1 to 85, by the upper boxes
  filled) and the dice; the script times ``solve_block`` on ``--sample`` random blocks of
  every (open boxes, upper boxes filled) class, weights each class by its number of blocks
  (2**20 in all), and prints the projected CPU of the whole solve, the values' memory
  (float64, 85 levels a block) and, for N workers, the wall time if they share the blocks
  evenly (claims keep any block from being computed twice; the longest chain is 21 blocks
  deep, negligible beside the total).

Run (about a minute)::

    .venv/bin/python scripts/bench/bench_maxi.py
    .venv/bin/python scripts/bench/bench_maxi.py --json
"""

from __future__ import annotations

import argparse
import math
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _bench import Target, add_targets, child_env, memo_solver_command, run_child, verdict

from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.solve.turn import solve_block

TARGET_S = 1.0
WORKERS = (1, 2, 16)


def late_position(rng: random.Random, boxes: list[str]) -> str:
    """Three open boxes, the upper section full at 84 (its bonus banked), dice rolled."""
    opened = rng.sample(boxes[6:], 3)
    dice = "".join(str(rng.randint(1, 6)) for _ in range(6))
    return f"open={','.join(opened)} upper=84 dice={dice} rerolls=2"


def cold_advice(runs: int, seed: int) -> dict[str, Any]:
    rules = get_rule_set("maxi-yatzy")
    boxes = [c.name for c in rules.categories]
    rng = random.Random(seed)
    command = memo_solver_command(None)
    env = child_env()
    samples: list[dict[str, Any]] = []
    walls: list[float] = []
    cpus: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-maxi-") as tmp:
        for run in range(runs):
            state = late_position(rng, boxes)
            store = str(Path(tmp) / f"cold-{run}.sqlite")
            argv = [command, "--store", store, "advise", "--rules", "maxi-yatzy", state, "--json"]
            child = run_child(argv, env)
            samples.append({"state": state, "wall_s": child.wall_s, "cpu_s": child.cpu_s})
            walls.append(child.wall_s)
            cpus.append(child.cpu_s)
    return {
        "runs": samples,
        "median_wall_s": statistics.median(walls),
        "max_wall_s": max(walls),
        "median_cpu_s": statistics.median(cpus),
    }


def projected_solve(per_class: int, seed: int) -> dict[str, Any]:
    rules = get_rule_set("maxi-yatzy")
    rng = np.random.default_rng(seed)
    n = len(rules.categories)
    upper = [i for i, c in enumerate(rules.categories) if c.upper_face]
    lower = [i for i in range(n) if i not in upper]
    total_cpu = 0.0
    classes = []
    for upper_filled in range(len(upper) + 1):
        for lower_filled in range(len(lower) + 1):
            if upper_filled + lower_filled == n:
                continue  # the last block is zeros
            count = math.comb(len(upper), upper_filled) * math.comb(len(lower), lower_filled)
            costs = []
            for _ in range(per_class):
                filled = sum(1 << b for b in rng.choice(upper, upper_filled, replace=False))
                filled |= sum(1 << b for b in rng.choice(lower, lower_filled, replace=False))
                successors = {
                    filled | 1 << b: rng.random(rules.block_shape) * 100
                    for b in rules.open_boxes(filled)
                }
                started = time.process_time()
                solve_block(rules, filled, successors)
                costs.append(time.process_time() - started)
            mean = statistics.fmean(costs)
            total_cpu += count * mean
            classes.append((upper_filled, lower_filled, count, mean))
    blocks = rules.block_count
    values_mb = blocks * math.prod(rules.block_shape) * 8 / 1e6
    return {
        "blocks": blocks,
        "turn_starts": blocks * math.prod(rules.block_shape),
        "projected_cpu_s": total_cpu,
        "values_mb_float64": values_mb,
        "projected_wall_s_by_workers": {str(w): total_cpu / w for w in WORKERS},
        "slowest_class_ms": max(c[3] for c in classes) * 1000,
        "per_class_samples": per_class,
    }


def two_workers(binary: str) -> dict[str, Any]:
    """A cold full precompute by two workers on a fresh redis-server (AOF as in
    docker-compose.yml): wall, each worker's CPU and blocks computed (their sum must be the
    block count: no block twice), redis-server's CPU and memory, the value against the pin."""
    import bench_workers as bw

    bw.use_rules("maxi-yatzy")
    with tempfile.TemporaryDirectory(prefix="bench-maxi-workers-") as tmp:
        run = bw.run_pool(binary, Path(tmp), ["maxi-1", "maxi-2"])
    return {
        "wall_s": run.wall_s,
        "value": run.value,
        "worker_cpu_s": run.worker_cpu_s,
        "redis_server_cpu_s": run.redis_cpu_s,
        "blocks_computed": run.computed,
        "no_block_twice": run.total == bw.BLOCKS,
        "redis_used_memory_mb": run.redis_used_memory_mb,
        "redis_blocks_hash_mb": run.redis_blocks_hash_mb,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="cold advice runs (default 5)")
    parser.add_argument("--sample", type=int, default=3, help="blocks timed per class (default 3)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--two-workers",
        action="store_true",
        help="also precompute the whole game with two workers on a fresh redis-server "
        "(about 6 minutes of wall time on two free cores)",
    )
    add_targets(parser, cold_s=TARGET_S)
    args = parser.parse_args()
    result = {
        "host": {
            "cpu": platform.processor() or platform.machine(),
            "python": platform.python_version(),
        },
        "cold_advice": cold_advice(args.runs, args.seed),
        "full_solve": projected_solve(args.sample, args.seed),
    }
    cold, full = result["cold_advice"], result["full_solve"]
    targets = [Target("cold advice max wall s", cold["max_wall_s"], args.target_cold_s)]
    if args.two_workers:
        from support.redis_server import ensure_redis_server

        result["two_workers"] = two_workers(ensure_redis_server())
        targets.append(
            Target.holds("two workers: no block twice", result["two_workers"]["no_block_twice"])
        )
    if args.json:
        return verdict(targets, result)
    print(f"maxi-yatzy cold late-game advice (three open boxes), {args.runs} processes:")
    print(
        f"  median wall {cold['median_wall_s']:.3f} s, max {cold['max_wall_s']:.3f} s, "
        f"median CPU {cold['median_cpu_s']:.3f} s"
    )
    print(f"maxi-yatzy full solve, projected from {args.sample} blocks per class:")
    print(
        f"  {full['blocks']:,} blocks, {full['turn_starts']:,} turn starts, values "
        f"{full['values_mb_float64']:.0f} MB in float64"
    )
    print(f"  CPU {full['projected_cpu_s'] / 3600:.2f} h in one process")
    for workers, wall in full["projected_wall_s_by_workers"].items():
        print(f"  {workers:>2} workers: {wall / 60:.1f} min wall if the blocks are shared evenly")
    if args.two_workers:
        two = result["two_workers"]
        print("maxi-yatzy full precompute, two workers on Redis:")
        print(
            f"  wall {two['wall_s']:.0f} s; worker CPU {two['worker_cpu_s']}; redis-server "
            f"CPU {two['redis_server_cpu_s']:.1f} s"
        )
        print(
            f"  blocks computed {two['blocks_computed']} "
            f"({'no block twice' if two['no_block_twice'] else 'SOME BLOCK TWICE'}); value "
            f"{two['value']!r} (the pin: checked)"
        )
        print(
            f"  Redis used_memory {two['redis_used_memory_mb']:.0f} MB, the blocks hash "
            f"{two['redis_blocks_hash_mb']:.0f} MB"
        )
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
