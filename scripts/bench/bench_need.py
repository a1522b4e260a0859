"""The chance objective's whole table, and the pins two computations of it agree on (#19).

Two subcommands, each run once in its own process so that its figures are its own:

- ``table``: solve a rule set's whole need table (``NeedGame(rules, cap)``, every block
  of the game at its width) into a SQLite store through the engine's layered whole-solve
  path (what ``precompute`` runs), and print the process's CPU time (user + sys, every
  thread), wall time, peak RSS, the store's size on disk, the blocks and values stored,
  and the 1-minute load average before and after (the machine is shared);
- ``pins``: from a store holding that table (solved first if it does not), for each target
  T: (a) the best chance of a final score of at least T, read from the table's start block,
  (b) the same chance computed by the forward pass under the target policy
  (:func:`memo_solver.games.yahtzee.analysis.distribution.target_pass`: the mass moved turn by turn
  by the policy's choices, a road independent of the backward values' own sum), and the
  mean policy's P(final >= T) from its exact distribution; with the CPU and wall time of
  each pass and the largest difference between (a) and (b) (they must agree to 1e-9).

Run::

    .venv/bin/python scripts/bench/bench_need.py table --store /tmp/need.sqlite3 --threads 2
    .venv/bin/python scripts/bench/bench_need.py pins --store /tmp/need.sqlite3
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from _bench import Target, add_targets, peak_rss_mb, verdict

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.analysis.distribution import (
    blocks_below,
    forward_pass,
    target_pass,
)
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.state import start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.need import DEFAULT_CAP, NeedGame
from memo_solver.stores.sqlite import SQLiteStore

TARGETS = (200, 250, 300, 350)
TOLERANCE = 1e-9


def _store_bytes(path: Path) -> int:
    files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
    return sum(f.stat().st_size for f in files if f.exists())


def _load() -> float:
    return os.getloadavg()[0]


def _chance(root: Any, target: int) -> float:
    """The start block's chance of ``target`` points: 0 past the block's width (its reach)."""
    return float(root[0, 0, target - 1]) if target <= root.shape[2] else 0.0


async def _table(args: argparse.Namespace) -> dict[str, Any]:
    rules = get_rule_set(args.rules)
    game = NeedGame(rules, args.cap)
    load = _load()
    cpu, wall = time.process_time(), time.perf_counter()
    async with (
        SQLiteStore(args.store) as store,
        open_engine(game, store, threads=args.threads) as engine,
    ):
        root = await engine.solve_layers(game.root())
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        keys = [block_key(mask) for mask in rules.reachable_masks(0)]
        blocks = (await engine.blocks(keys)).values()
        values = sum(int((~np.isnan(block)).sum()) for block in blocks)
    return {
        "rules": rules.name,
        "cap": args.cap,
        "threads": args.threads,
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "store_mb": round(_store_bytes(args.store) / 2**20, 1),
        "blocks": len(keys),
        "values": values,
        "values_mb": round(values * 8 / 2**20, 1),
        "start_chances": {str(t): _chance(root, t) for t in args.targets},
        "load_before": load,
        "load_after": _load(),
    }


async def _pins(args: argparse.Namespace) -> dict[str, Any]:
    rules = get_rule_set(args.rules)
    state = start_state()
    load = _load()
    async with (
        SQLiteStore(args.store) as store,
        open_engine(YahtzeeGame(rules), store, threads=args.threads) as mean,
        open_engine(NeedGame(rules, args.cap), store, threads=args.threads) as need,
    ):
        for engine in (mean, need):
            await engine.solve_layers(engine.game.root())
        blocks = await blocks_below(mean, rules, state)
        need_blocks = await blocks_below(need, rules, state)
    cpu, wall = time.process_time(), time.perf_counter()
    dist = forward_pass(blocks, rules, state)
    mean_pass = {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall}
    root = need_blocks[block_key(0)]
    pins = []
    for target in args.targets:
        cpu, wall = time.process_time(), time.perf_counter()
        scores = target_pass(blocks, need_blocks, rules, state, target, args.cap)
        value = _chance(root, target)
        forward = scores.survival(target)
        pins.append(
            {
                "target": target,
                "value": value,
                "target_policy": forward,
                "difference": abs(value - forward),
                "mean_policy": dist.survival(target),
                "target_policy_mean": scores.mean,
                "cpu_s": round(time.process_time() - cpu, 2),
                "wall_s": round(time.perf_counter() - wall, 2),
            }
        )
    worst = max(p["difference"] for p in pins)
    return {
        "rules": rules.name,
        "cap": args.cap,
        "mean_policy_mean": dist.mean,
        "mean_pass": {k: round(v, 2) for k, v in mean_pass.items()},
        "pins": pins,
        "largest_difference": worst,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "load_before": load,
        "load_after": _load(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=("table", "pins"))
    parser.add_argument("--rules", default="yahtzee")
    parser.add_argument("--cap", type=int, default=DEFAULT_CAP)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--store", type=Path, default=Path("/tmp/memo-solver-need.sqlite3"))
    parser.add_argument("--targets", type=int, nargs="+", default=list(TARGETS))
    add_targets(parser, difference=TOLERANCE)
    args = parser.parse_args()
    if args.what == "table":  # figures for the record
        return verdict([], anyio.run(_table, args))
    result = anyio.run(_pins, args)
    worst = result["largest_difference"]
    return verdict([Target("pins: backward - forward", worst, args.target_difference)], result)


if __name__ == "__main__":
    raise SystemExit(main())
