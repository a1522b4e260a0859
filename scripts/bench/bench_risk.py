"""The risk dial's costs: issue #32's targets for a whole risk table and cold risk advice.

- ``table``: a whole table of ``--rules`` (default ``yahtzee``) solved from nothing, the mean
  table's and the risk table's at ``--theta`` in alternating rounds (the order flips every
  round, so drift hits both), each in its own process on a memory store with one thread.
  The figure is the solve phase's CPU (``time.process_time`` around the engine's solve of
  the root, after the compiled code is loaded by solving the last block): the process's
  start and imports are the same for both and would hide the ratio. Target: the risk
  table within 1.3 times the mean table's, medians.
- ``cold``: ``memo-solver advise --risk THETA`` as a whole process on an empty SQLite store,
  for ``--states`` random states of ``yahtzee`` with five open boxes (fixed seed), start-up
  included: the risk table's cone and the mean table's (its values and ties). The start-up
  share is what the same command costs on the store it just filled (the interpreter, the
  imports, the store: no block solved); beside them, the same state's cold mean advice
  (no ``--risk``) on a store of its own. Target: within 1 s, median wall.
- ``in_process``: the same question in this process, ``--states`` random states of
  ``yahtzee`` with five open boxes (seed ``--seed`` + 1): cold, on fresh engines (the risk
  table's and the mean table's) over an empty memory store per state, the compiled code
  already loaded (one untimed question first); then warm, the same question again on those
  engines, ``--repeats`` times. Wall and CPU medians. Targets: cold within 50 ms, warm
  within 1 ms, medians.

Figures are medians and maxima, with the load average before and after.

Run (about a minute)::

    .venv/bin/python scripts/bench/bench_risk.py
    .venv/bin/python scripts/bench/bench_risk.py table --rounds 5 --json
    .venv/bin/python scripts/bench/bench_risk.py in_process --states 20 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from _bench import Target, add_targets, child_env, memo_solver_command, run_child, verdict
from bench_advice import late_states

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee import advise_risk, entry_for, risk_entry_of
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.state import State, state_to_json
from memo_solver.stores.memory import MemoryStore

PARTS = ("table", "cold", "in_process")
TARGETS = {"table_cpu_ratio": 1.3, "cold_5_s": 1.0, "in_process_cold_ms": 50.0, "warm_ms": 1.0}
THETA = "0.1"

SOLVE = """
import json, sys, time
import anyio
from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee import entry_for, get_rule_set, risk_entry_of
from memo_solver.games.yahtzee.solve.game import block_key
from memo_solver.stores.memory import MemoryStore

rules = get_rule_set(sys.argv[1])
game = risk_entry_of(entry_for(rules), sys.argv[2]).game
game.solve_many([block_key(rules.all_filled)], {})  # the compiled code loaded


async def main() -> None:
    async with open_engine(game, MemoryStore()) as engine:
        started = time.process_time()
        root = await engine.block(game.root())
        cpu = time.process_time() - started
    print(json.dumps({"solve_cpu_s": cpu, "start": float(root.flat[0])}))


anyio.run(main)
"""
"""One table solved in a child: its solve phase's CPU and its start value."""


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "max": max(values)}


def table(rules: str, theta: str, rounds: int) -> dict[str, Any]:
    cpus: dict[str, list[float]] = {"mean": [], "risk": []}
    starts: dict[str, float] = {}
    for round_no in range(rounds):
        order = ("mean", "risk") if round_no % 2 == 0 else ("risk", "mean")
        for kind in order:
            argv = [sys.executable, "-c", SOLVE, rules, theta if kind == "risk" else "0"]
            payload = json.loads(run_child(argv, child_env()).stdout)
            cpus[kind].append(payload["solve_cpu_s"])
            starts[kind] = payload["start"]
    mean, risk = statistics.median(cpus["mean"]), statistics.median(cpus["risk"])
    return {
        "rules": rules,
        "theta": float(theta),
        "rounds": rounds,
        "mean_solve_cpu_s": summary(cpus["mean"]),
        "risk_solve_cpu_s": summary(cpus["risk"]),
        "cpu_ratio": risk / mean,
        "mean_start": starts["mean"],
        "risk_start_certainty_equivalent": starts["risk"],
    }


def cold(cli: str, theta: str, count: int, seed: int, tmp: Path) -> dict[str, Any]:
    rules = get_rule_set("yahtzee")
    walls, cpus, starts, start_cpus, means, mean_cpus = [], [], [], [], [], []
    for i, state in enumerate(late_states(rules, random.Random(seed), count, 5)):
        argv = [cli, "--store", str(tmp / f"cold-{i}.sqlite3"), "advise", "--rules", "yahtzee"]
        argv += [json.dumps(state_to_json(state, rules)), "--json"]
        run = run_child([*argv, "--risk", theta], child_env())
        walls.append(run.wall_s)
        cpus.append(run.cpu_s)
        again = run_child([*argv, "--risk", theta], child_env())
        starts.append(again.wall_s)
        start_cpus.append(again.cpu_s)
        argv[2] = str(tmp / f"mean-{i}.sqlite3")
        mean = run_child(argv, child_env())
        means.append(mean.wall_s)
        mean_cpus.append(mean.cpu_s)
    return {
        "states": count,
        "theta": float(theta),
        "wall_s": summary(walls),
        "cpu_s": summary(cpus),
        "start_up_wall_s": summary(starts),
        "start_up_cpu_s": summary(start_cpus),
        "start_up_share": statistics.median(starts) / statistics.median(walls),
        "mean_advice_wall_s": summary(means),
        "mean_advice_cpu_s": summary(mean_cpus),
    }


async def _in_process(theta: str, states: list[State], repeats: int) -> dict[str, list[float]]:
    rules = get_rule_set("yahtzee")
    mean_entry = entry_for(rules)
    table = risk_entry_of(mean_entry, theta).game
    times: dict[str, list[float]] = {"cold": [], "cold_cpu": [], "warm": [], "warm_cpu": []}
    for at, state in enumerate(states):
        store = MemoryStore()
        async with (
            open_engine(mean_entry.game, store, definition=mean_entry.definition) as mean,
            open_engine(table, store, definition=mean_entry.definition) as engine,
        ):
            for again in range(1 + repeats):
                wall, cpu = time.perf_counter(), time.process_time()
                await advise_risk(engine, mean, rules, state, float(theta))
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                if at > 0:  # the first state only loads the compiled code
                    kind = "warm" if again else "cold"
                    times[kind].append(wall * 1e3)
                    times[f"{kind}_cpu"].append(cpu * 1e3)
    return times


def in_process(theta: str, count: int, seed: int, repeats: int) -> dict[str, Any]:
    rules = get_rule_set("yahtzee")
    states = late_states(rules, random.Random(seed + 1), count + 1, 5)
    times = anyio.run(_in_process, theta, states, repeats)
    return {
        "states": count,
        "repeats": repeats,
        "theta": float(theta),
        "cold_ms": summary(times["cold"]),
        "cold_cpu_ms": summary(times["cold_cpu"]),
        "warm_ms": summary(times["warm"]),
        "warm_cpu_ms": summary(times["warm_cpu"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("parts", nargs="*", help=f"some of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--rules", default="yahtzee", help="the table part's rule set")
    parser.add_argument("--theta", default=THETA, help=f"the risk (default: {THETA})")
    parser.add_argument("--rounds", type=int, default=3, help="alternating table rounds")
    parser.add_argument("--states", type=int, default=5, help="cold and in-process states")
    parser.add_argument("--repeats", type=int, default=20, help="warm questions per state")
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--memo-solver", help="the CLI to run (default: beside this Python)")
    parser.add_argument("--json", action="store_true")
    add_targets(parser, **TARGETS)
    args = parser.parse_args()
    parts = args.parts or list(PARTS)
    if set(parts) - set(PARTS):
        parser.error(f"parts are {', '.join(PARTS)}, not {', '.join(set(parts) - set(PARTS))}")
    report: dict[str, Any] = {"host": platform.processor() or platform.machine()}
    report["load_before"] = os.getloadavg()
    targets = []
    if "table" in parts:
        report["table"] = table(args.rules, args.theta, args.rounds)
        ratio = report["table"]["cpu_ratio"]
        targets.append(Target("risk/mean table solve CPU", ratio, args.target_table_cpu_ratio))
    if "cold" in parts:
        with tempfile.TemporaryDirectory(prefix="bench-risk-") as tmp:
            report["cold"] = cold(
                memo_solver_command(args.memo_solver), args.theta, args.states, args.seed, Path(tmp)
            )
        median = report["cold"]["wall_s"]["median"]
        targets.append(Target("cold, 5 open, median wall s", median, args.target_cold_5_s))
    if "in_process" in parts:
        report["in_process"] = in_process(args.theta, args.states, args.seed, args.repeats)
        cold_ms = report["in_process"]["cold_ms"]["median"]
        warm_ms = report["in_process"]["warm_ms"]["median"]
        targets.append(
            Target("in process, cold, median ms", cold_ms, args.target_in_process_cold_ms)
        )
        targets.append(Target("in process, warm, median ms", warm_ms, args.target_warm_ms))
    report["load_after"] = os.getloadavg()
    if args.json:
        return verdict(targets, report)
    print(json.dumps(report, indent=2))
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
