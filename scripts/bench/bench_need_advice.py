"""Advice playing for a need, and against an opponent: issue #19's latency targets.

- ``cold``: ``memo-solver advise --need N`` as a whole process on an empty SQLite store,
  for ``--states`` random states with five open boxes and as many with six (``yahtzee``,
  fixed seed, N drawn in 1..200), start-up included. The start-up share is what the same
  command costs on the store it just filled (the interpreter, the imports, the store: no
  block solved). Targets: five open boxes within 1 s, six within 3 s.
- ``warm``: ``advise_need`` in process on engines holding every block the states need, for
  ``--warm-states`` random states with five open boxes (N in 1..200). Target: 1 ms.
- ``beat``: ``memo-solver advise --opponent`` as a whole process on an empty store, both
  players with five open boxes (``--beat-open 5,7,9`` for more), random banked scores
  within 30 points of each other. Target: 2 s with five.

Figures are medians and maxima of wall and CPU (user + sys of the child), with the load
average before and after.

Run (about a minute)::

    .venv/bin/python scripts/bench/bench_need_advice.py
    .venv/bin/python scripts/bench/bench_need_advice.py cold --states 3 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from _bench import (
    Target,
    add_targets,
    child_env,
    memo_solver_command,
    percentile,
    run_child,
    verdict,
)
from bench_advice import late_states

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.need_advice import advise_need
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State, state_to_json
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.games.yahtzee.solve.need import NeedGame
from memo_solver.stores.memory import MemoryStore

PARTS = ("cold", "warm", "beat")
TARGETS = {"cold_5_s": 1.0, "cold_6_s": 3.0, "warm_ms": 1.0, "beat_5_s": 2.0}
RULES = "yahtzee"
MAX_NEED = 200


def as_text(state: State, rules: RuleSet) -> str:
    return json.dumps(state_to_json(state, rules))


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "max": max(values)}


def cold(cli: str, rules: RuleSet, rng: random.Random, count: int, tmp: Path) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for open_boxes in (5, 6):
        walls, cpus, starts = [], [], []
        for i, state in enumerate(late_states(rules, rng, count, open_boxes)):
            store = tmp / f"cold-{open_boxes}-{i}.sqlite3"
            need = str(rng.randint(1, MAX_NEED))
            argv = [cli, "--store", str(store), "advise", "--rules", RULES]
            argv += [as_text(state, rules), "--need", need, "--json"]
            first = run_child(argv, child_env())
            walls.append(first.wall_s)
            cpus.append(first.cpu_s)
            starts.append(run_child(argv, child_env()).wall_s)
        result[f"open_{open_boxes}"] = {
            "wall_s": summary(walls),
            "cpu_s": summary(cpus),
            "start_up_wall_s": summary(starts),
            "start_up_share": statistics.median(starts) / statistics.median(walls),
        }
    return result


async def warm(rules: RuleSet, rng: random.Random, count: int) -> dict[str, Any]:
    states = late_states(rules, rng, count, 5)
    needs = [rng.randint(1, MAX_NEED) for _ in states]
    store = MemoryStore()
    async with (
        open_engine(YahtzeeGame(rules), store) as mean,
        open_engine(NeedGame(rules), store) as engine,
    ):
        for state, need in zip(states, needs, strict=True):  # solve and hold every block
            await advise_need(engine, mean, rules, state, need)
        times = []
        for state, need in zip(states, needs, strict=True):
            started = time.perf_counter()
            await advise_need(engine, mean, rules, state, need)
            times.append((time.perf_counter() - started) * 1e3)
    return {
        "states": count,
        "median_ms": statistics.median(times),
        "p99_ms": percentile(times, 0.99),
    }


def beat(
    cli: str, rules: RuleSet, rng: random.Random, count: int, tmp: Path, open_boxes: int
) -> dict[str, Any]:
    mine = late_states(rules, rng, count, open_boxes)
    theirs = late_states(rules, rng, count, open_boxes)
    walls, cpus = [], []
    for i, (state, them) in enumerate(zip(mine, theirs, strict=True)):
        score = rng.randint(100, 250)
        store = tmp / f"beat-{open_boxes}-{i}.sqlite3"
        argv = [cli, "--store", str(store), "advise", "--rules", RULES]
        argv += [as_text(state, rules), "--score", str(score), "--json"]
        turn_start = State(them.filled, them.upper, them.yahtzee_bonus, None, None)
        argv += ["--opponent", as_text(turn_start, rules)]
        argv += ["--opponent-score", str(score + rng.randint(-30, 30))]
        run = run_child(argv, child_env())
        walls.append(run.wall_s)
        cpus.append(run.cpu_s)
    return {"wall_s": summary(walls), "cpu_s": summary(cpus)}


def targets_of(report: dict[str, Any], args: argparse.Namespace) -> list[Target]:
    """The bounds of the parts that ran, on the medians; the beat part's only where both
    players have five open boxes (more are reported, held to no bound)."""
    targets = []
    for open_boxes in (5, 6) if "cold" in report else ():
        median = report["cold"][f"open_{open_boxes}"]["wall_s"]["median"]
        bound = getattr(args, f"target_cold_{open_boxes}_s")
        targets.append(Target(f"cold, {open_boxes} open, median wall s", median, bound))
    if "warm" in report:
        targets.append(Target("warm median ms", report["warm"]["median_ms"], args.target_warm_ms))
    if "open_5" in report.get("beat", {}):
        median = report["beat"]["open_5"]["wall_s"]["median"]
        targets.append(Target("beat, 5 open, median wall s", median, args.target_beat_5_s))
    return targets


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("parts", nargs="*", help=f"some of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--states", type=int, default=5, help="cold states per size")
    parser.add_argument("--warm-states", type=int, default=200)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument(
        "--beat-open",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[5],
        help="open boxes of both players in the beat part, comma-separated (default: 5)",
    )
    parser.add_argument("--memo-solver", help="the CLI to run (default: beside this Python)")
    parser.add_argument("--json", action="store_true")
    add_targets(parser, **TARGETS)
    args = parser.parse_args()
    parts = args.parts or list(PARTS)
    if set(parts) - set(PARTS):
        parser.error(f"parts are {', '.join(PARTS)}, not {', '.join(set(parts) - set(PARTS))}")
    rules, rng = get_rule_set(RULES), random.Random(args.seed)
    cli = memo_solver_command(args.memo_solver)
    report: dict[str, Any] = {"host": platform.processor() or platform.machine()}
    report["load_before"] = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        if "cold" in parts:
            report["cold"] = cold(cli, rules, rng, args.states, tmp)
        if "warm" in parts:
            report["warm"] = anyio.run(warm, rules, rng, args.warm_states)
        if "beat" in parts:
            report["beat"] = {
                f"open_{n}": beat(cli, rules, rng, args.states, tmp, n) for n in args.beat_open
            }
    report["load_after"] = os.getloadavg()
    targets = targets_of(report, args)
    if args.json:
        return verdict(targets, report)
    print(json.dumps(report, indent=2))
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
