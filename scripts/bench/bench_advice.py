"""Advice latency in process: warm (every block already solved) and cold (empty store).

Warm: precompute ``yahtzee`` (or ``--rules``) into a temporary SQLite store (or reuse
``--store``), open an engine on it (``open_engine(YahtzeeGame(rules), SQLiteStore(path))``),
warm it by loading every block into the process memo and running a few untimed calls, then
time ``advise(engine, rules, state)`` for ``--states`` random valid states (default 1,000,
fixed seed; tests/support/random_states.py): a random filled mask (never all filled), a
random upper total the filled upper boxes can make, the Yahtzee-bonus flag at random only
when the Yahtzee box is filled, 0..2 rerolls left and random dice. Targets: median <= 0.5
ms, p99 <= 2 ms. The same states are also timed on a fresh engine without the preload
(blocks read from SQLite on first use), for information.

Cold: a late-game state (three open boxes) on an empty store, a fresh one for every state
(``MemoryStore``, then a fresh SQLite file), so ``advise`` solves the 8 blocks it needs.
Median and max; target <= 50 ms.

Run::

    .venv/bin/python scripts/bench/bench_advice.py                 # precomputes into a temp file
    .venv/bin/python scripts/bench/bench_advice.py --store S.db    # reuse (and fill) a store
    .venv/bin/python scripts/bench/bench_advice.py --json
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _bench import Target, add_targets, percentile, precompute_in_process, verdict
from support.random_states import late_state, random_state

from memo_solver.core.runtime import pin_blas_threads

if TYPE_CHECKING:
    from memo_solver.core.store import Store
    from memo_solver.games.yahtzee.rules.rule_set import RuleSet
    from memo_solver.games.yahtzee.rules.state import State

WARM_MEDIAN_TARGET_MS = 0.5
WARM_P99_TARGET_MS = 2.0
COLD_TARGET_MS = 50.0
WARMUP_CALLS = 50


def random_states(rules: RuleSet, rng: random.Random, count: int) -> list[State]:
    """Uniform random filled masks, the all-filled (game over) mask skipped."""
    return [random_state(rules, rng, rng.randrange(rules.all_filled)) for _ in range(count)]


def late_states(rules: RuleSet, rng: random.Random, count: int, open_boxes: int) -> list[State]:
    return [late_state(rules, rng, open_boxes) for _ in range(count)]


def summary_ms(walls: Sequence[float], cpus: Sequence[float]) -> dict[str, float]:
    ms = [s * 1e3 for s in walls]
    cpu_ms = [s * 1e3 for s in cpus]
    return {
        "n": len(ms),
        "median_ms": statistics.median(ms),
        "p99_ms": percentile(ms, 0.99),
        "max_ms": max(ms),
        "mean_ms": statistics.fmean(ms),
        "median_cpu_ms": statistics.median(cpu_ms),
        "p99_cpu_ms": percentile(cpu_ms, 0.99),
        "max_cpu_ms": max(cpu_ms),
    }


async def time_advice(
    rules: RuleSet, store: Store, states: Sequence[State], *, preload: bool
) -> tuple[list[float], list[float]]:
    """Wall and process-CPU seconds per ``advise`` call on one engine, after an optional
    preload and warm-up. CPU tells preemption on a busy machine from real work."""
    from memo_solver.core.engine import open_engine
    from memo_solver.games.yahtzee.advice.mean_advice import advise
    from memo_solver.games.yahtzee.solve.game import YahtzeeGame

    async with open_engine(YahtzeeGame(rules), store) as engine:
        if preload:
            await engine.blocks(await store.keys(engine.namespace))
            warmup = random_states(rules, random.Random(-1), WARMUP_CALLS)
            for state in warmup:
                await advise(engine, rules, state)
        walls, cpus = [], []
        for state in states:
            started, cpu = time.perf_counter(), time.process_time()
            await advise(engine, rules, state)
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu)
    return walls, cpus


async def time_cold(
    rules: RuleSet, states: Sequence[State], make_store: Callable[[], Store]
) -> tuple[list[float], list[float]]:
    """Wall and process-CPU seconds of ``advise`` on a fresh, empty store per state."""
    from memo_solver.core.engine import open_engine
    from memo_solver.games.yahtzee.advice.mean_advice import advise
    from memo_solver.games.yahtzee.solve.game import YahtzeeGame

    walls, cpus = [], []
    for state in states:
        store = make_store()
        try:
            async with open_engine(YahtzeeGame(rules), store) as engine:
                started, cpu = time.perf_counter(), time.process_time()
                await advise(engine, rules, state)
                walls.append(time.perf_counter() - started)
                cpus.append(time.process_time() - cpu)
        finally:
            await store.aclose()
    return walls, cpus


async def bench(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from memo_solver.games.yahtzee.rules.catalog import get_rule_set
    from memo_solver.stores.memory import MemoryStore
    from memo_solver.stores.sqlite import SQLiteStore

    rules = get_rule_set(args.rules)
    path: Path = args.store or tmp / "warm.sqlite3"
    solve = await precompute_in_process(rules, path)
    states = random_states(rules, random.Random(args.seed), args.states)

    store = SQLiteStore(path)
    try:
        from_store = summary_ms(*await time_advice(rules, store, states, preload=False))
        warm = summary_ms(*await time_advice(rules, store, states, preload=True))
    finally:
        await store.aclose()

    cold_states = late_states(rules, random.Random(args.seed + 1), args.cold, 3)
    # One untimed cold call first, so the figures are not the process's first numpy pass.
    await time_cold(rules, late_states(rules, random.Random(-2), 1, 3), MemoryStore)
    files = iter(range(10**6))
    cold_mem = summary_ms(*await time_cold(rules, cold_states, MemoryStore))
    cold_sql = summary_ms(
        *await time_cold(
            rules, cold_states, lambda: SQLiteStore(tmp / f"cold{next(files)}.sqlite3")
        )
    )
    return {
        "store": str(path),
        "precompute": solve,
        "seed": args.seed,
        "warm": warm,
        "warm_from_store_no_preload": from_store,
        "cold_three_open_memory": cold_mem,
        "cold_three_open_sqlite": cold_sql,
    }


def main() -> int:
    pin_blas_threads()
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rules", default="yahtzee", help="rule set (default: yahtzee)")
    parser.add_argument("--store", type=Path, help="reuse this SQLite store (default: temp file)")
    parser.add_argument("--states", type=int, default=1000, help="warm states (default 1000)")
    parser.add_argument("--cold", type=int, default=10, help="cold states (default 10)")
    parser.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(
        parser,
        warm_median_ms=WARM_MEDIAN_TARGET_MS,
        warm_p99_ms=WARM_P99_TARGET_MS,
        cold_ms=COLD_TARGET_MS,
    )
    args = parser.parse_args()

    import anyio

    with tempfile.TemporaryDirectory(prefix="bench-advice-") as tmp:
        result = anyio.run(bench, args, Path(tmp))
    targets = [
        Target("warm median ms", result["warm"]["median_ms"], args.target_warm_median_ms),
        Target("warm p99 ms", result["warm"]["p99_ms"], args.target_warm_p99_ms),
        Target(
            "cold max ms, MemoryStore",
            result["cold_three_open_memory"]["max_ms"],
            args.target_cold_ms,
        ),
        Target(
            "cold max ms, fresh SQLite",
            result["cold_three_open_sqlite"]["max_ms"],
            args.target_cold_ms,
        ),
    ]
    if args.json:
        return verdict(targets, result)
    solve = result["precompute"]
    print(
        f"store {result['store']}: precompute {solve['blocks_computed']} blocks in "
        f"{solve['cpu_s']:.2f} CPU s, start value {solve['start_value']:.10f}"
    )
    rows = (
        ("warm, all blocks in memo", result["warm"]),
        ("warm store, fresh engine", result["warm_from_store_no_preload"]),
        ("cold, 3 open, MemoryStore", result["cold_three_open_memory"]),
        ("cold, 3 open, fresh SQLite", result["cold_three_open_sqlite"]),
    )
    print(
        f"{'advise, ms per call':<28} {'n':>5} {'median':>8} {'p99':>8} {'max':>8}"
        f"   {'CPU med':>8} {'CPU p99':>8} {'CPU max':>8}"
    )
    for name, row in rows:
        print(
            f"{name:<28} {row['n']:>5} {row['median_ms']:>8.3f} {row['p99_ms']:>8.3f} "
            f"{row['max_ms']:>8.3f}   {row['median_cpu_ms']:>8.3f} {row['p99_cpu_ms']:>8.3f} "
            f"{row['max_cpu_ms']:>8.3f}"
        )
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
