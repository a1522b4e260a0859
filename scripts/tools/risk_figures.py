"""The README's table of the risk dial: for each rule set and theta, the theta strategy's
exact final-score distribution (``stats --risk``'s forward pass) as mean, SD and the 5th,
95th and 99th percentiles, and the CPU each row took (the risk table's solve and the pass,
on a fresh in-memory store).

    .venv/bin/python scripts/tools/risk_figures.py [--rules yatzy yahtzee] [--thetas ...]
"""

from __future__ import annotations

import argparse
import time

import anyio

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.analysis.distribution import score_distribution
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.state import start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.games.yahtzee.solve.risk import RiskGame, check_theta
from memo_solver.stores.memory import MemoryStore


async def row(name: str, theta: float) -> str:
    """One line of the table, timed from an empty store."""
    rules = get_rule_set(name)
    game = RiskGame(rules, theta) if theta else YahtzeeGame(rules)
    began = time.process_time()
    async with open_engine(game, MemoryStore()) as engine:
        dist = await score_distribution(engine, rules, start_state(), theta=theta)
    spent = time.process_time() - began
    cells = [f"{dist.percentile(q / 100)}" for q in (5, 95, 99)]
    return (
        f"| `{name}` | {theta:g} | {dist.mean:.2f} | {dist.std:.2f} | "
        + " | ".join(cells)
        + f" | {spent:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", nargs="+", default=["yatzy", "yahtzee"])
    parser.add_argument("--thetas", nargs="+", default=["-0.1", "-0.05", "0", "0.05", "0.1"])
    args = parser.parse_args()
    print("| rules | theta | mean | SD | 5th | 95th | 99th | CPU s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in args.rules:
        for typed in args.thetas:
            print(anyio.run(row, name, check_theta(typed)), flush=True)


if __name__ == "__main__":
    main()
