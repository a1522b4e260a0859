"""Simulation speed: optimal games per second, cold (policies built on the way) and warm.

Precomputes the rule set (default ``yahtzee``; a built-in's name or a rule file's path, and
several are benched one after the other in one run) into a temporary SQLite store (or reuses
``--store``, with one rule set), opens an engine on it, then times
:func:`memo_solver.games.yahtzee.analysis.simulate.simulate`:

- cold: a fresh policy cache, ``--cold-games`` (2,000) and then, on another fresh cache,
  ``--games`` (20,000) games: every block policy a game needs is built on the way, so the
  rate includes that cost (reading the solved blocks from SQLite included);
- fill: every block's policy built into one cache (the whole strategy): seconds and MiB;
- warm: ``--games`` games and ``--warm-games`` (200,000) games on that filled cache.

With ``--no-fill`` the whole strategy is not built (a saved-rolls rule set's holds a choice
per rolls left: 6.4 GiB for ``yatzy-saved``, 1.0 for ``yatzy``) and the warm runs play on the
cold run's cache, within its bound, building what it lacks or dropped.

Wall and process-CPU seconds are both reported: on a busy machine the CPU figure tells
the work from the waiting. Target: at least 1,000 warm optimal ``yahtzee`` games per
second on a 2-core machine. Peak memory is the process's maximum resident set (MB).

Run::

    .venv/bin/python scripts/bench/bench_simulate.py                # precomputes into a temp file
    .venv/bin/python scripts/bench/bench_simulate.py --store S.db   # reuse (and fill) a store
    .venv/bin/python scripts/bench/bench_simulate.py --json
    .venv/bin/python scripts/bench/bench_simulate.py --no-fill --rules yatzy SAVED
    # SAVED: examples/rules/yatzy-saved.json, saved rolls beside the plain game in one run
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _bench import Target, add_targets, peak_rss_mb, precompute_in_process, verdict

from memo_solver.core.runtime import pin_blas_threads

if TYPE_CHECKING:
    from memo_solver.core.engine import Engine
    from memo_solver.games.yahtzee.analysis.simulate import PolicyCache
    from memo_solver.games.yahtzee.rules.rule_set import RuleSet

WARM_TARGET_GAMES_PER_S = 1000.0
MIB = 1 << 20


async def run(engine: Engine, cache: PolicyCache, games: int, seed: int) -> dict[str, Any]:
    """One timed run: its rate, its policy building and its result."""
    from memo_solver.games.yahtzee.analysis.simulate import simulate

    cpu = time.process_time()
    summary = await simulate(engine, cache, games, seed)
    cpu_s = time.process_time() - cpu
    return {
        "games": games,
        "seed": seed,
        "wall_s": summary.seconds,
        "cpu_s": cpu_s,
        "games_per_s": summary.games_per_second,
        "games_per_cpu_s": games / cpu_s if cpu_s > 0 else None,
        "policies_built": summary.policies_built,
        "policy_s": summary.policy_seconds,
        "mean": summary.mean,
        "se": summary.se,
        "cache_mib": cache.nbytes / MIB,
    }


def rule_set_of(name: str) -> RuleSet:
    """A built-in by its name, or a rule file by its path (``examples/rules/yatzy-saved.json``)."""
    from memo_solver.games.yahtzee.rules.catalog import get_rule_set
    from memo_solver.games.yahtzee.rules.rule_file import read_rule_file

    return read_rule_file(name) if name.endswith(".json") else get_rule_set(name)


async def bench(args: argparse.Namespace, name: str, tmp: Path) -> dict[str, Any]:
    from memo_solver.core.engine import open_engine
    from memo_solver.games.yahtzee.analysis.simulate import PolicyCache
    from memo_solver.games.yahtzee.solve.game import YahtzeeGame
    from memo_solver.stores.sqlite import SQLiteStore

    rules = rule_set_of(name)
    path: Path = args.store or tmp / f"{rules.name}.sqlite3"
    solve = await precompute_in_process(rules, path)
    async with SQLiteStore(path) as store, open_engine(YahtzeeGame(rules), store) as engine:
        cold_small = await run(engine, PolicyCache(rules), args.cold_games, seed=1)
        full = PolicyCache(rules)
        cold = await run(engine, full, args.games, seed=2)
        fill = None
        if args.fill:
            full = PolicyCache(rules, max_bytes=None)
            started, cpu = time.perf_counter(), time.process_time()
            await full.fill(engine)
            fill = {
                "blocks": len(full),
                "wall_s": time.perf_counter() - started,
                "cpu_s": time.process_time() - cpu,
                "cache_mib": full.nbytes / MIB,
            }
        warm = await run(engine, full, args.games, seed=3)
        warm_long = await run(engine, full, args.warm_games, seed=4)
    return {
        "rules": rules.name,
        "exact_mean": solve["start_value"],
        "store": str(path),
        "precompute": solve,
        "cold_small": cold_small,
        "cold": cold,
        "fill": fill,
        "warm": warm,
        "warm_long": warm_long,
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> int:
    pin_blas_threads()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rules",
        nargs="+",
        default=["yahtzee"],
        help="rule sets, built-in names or rule files, benched in turn (default: yahtzee)",
    )
    parser.add_argument(
        "--store", type=Path, help="reuse this SQLite store, one rule set (default: temp file)"
    )
    parser.add_argument(
        "--no-fill",
        dest="fill",
        action="store_false",
        help="warm runs on the cold run's bounded cache, not the whole strategy",
    )
    parser.add_argument("--cold-games", type=int, default=2000, help="small cold run (2000)")
    parser.add_argument("--games", type=int, default=20_000, help="cold and warm runs (20000)")
    parser.add_argument("--warm-games", type=int, default=200_000, help="long warm run (200000)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(parser, warm_games_per_s=WARM_TARGET_GAMES_PER_S)
    args = parser.parse_args()
    if args.store is not None and len(args.rules) > 1:
        parser.error("--store holds one rule set: give one --rules")

    import anyio

    with tempfile.TemporaryDirectory(prefix="bench-simulate-") as tmp:
        results = [anyio.run(bench, args, name, Path(tmp)) for name in args.rules]
    several = len(results) > 1
    targets = [
        Target(
            f"{result['rules'] + ' ' if several else ''}{name} games/s",
            result[name]["games_per_s"],
            args.target_warm_games_per_s,
            True,
        )
        for result in results
        for name in ("warm", "warm_long")
    ]
    if args.json:
        return verdict(targets, {"rule_sets": results} if several else results[0])
    for result in results:
        report(result)
    return verdict(targets)


def report(result: dict[str, Any]) -> None:
    """One rule set's runs as a table."""
    solve = result["precompute"]
    print(
        f"{result['rules']}: precompute {solve['blocks_computed']} blocks in "
        f"{solve['wall_s']:.1f} s ({solve['cpu_s']:.1f} CPU s), exact mean "
        f"{result['exact_mean']:.4f}"
    )
    print(
        f"{'run':<22} {'games':>8} {'wall s':>8} {'CPU s':>8} {'games/s':>9} "
        f"{'games/CPU s':>11} {'built':>6} {'build s':>8} {'mean ± SE':>16} {'cache MiB':>9}"
    )
    for name in ("cold_small", "cold", "warm", "warm_long"):
        row = result[name]
        print(
            f"{name:<22} {row['games']:>8,} {row['wall_s']:>8.2f} {row['cpu_s']:>8.2f} "
            f"{row['games_per_s']:>9,.0f} {row['games_per_cpu_s']:>11,.0f} "
            f"{row['policies_built']:>6} {row['policy_s']:>8.2f} "
            f"{row['mean']:>9.2f} ± {row['se']:<4.2f} {row['cache_mib']:>9.0f}"
        )
    fill = result["fill"]
    whole = (
        "whole strategy not built (--no-fill)"
        if fill is None
        else f"whole strategy: {fill['blocks']} block policies in {fill['wall_s']:.1f} s "
        f"({fill['cpu_s']:.1f} CPU s), {fill['cache_mib']:.0f} MiB"
    )
    print(f"{whole}; peak RSS {result['peak_rss_mb']:.0f} MB")


if __name__ == "__main__":
    raise SystemExit(main())
