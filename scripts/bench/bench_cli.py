"""``memo-solver advise`` on a warm store as a whole process, and ``memo-solver --help``.

What it measures: the wall and CPU time (user + sys of each child, from ``os.wait4``) of
``memo-solver --store S advise --rules yahtzee STATE`` run ``--runs`` times (default 10)
against a store that already holds the whole ``yahtzee`` game, so the figure is process
start, imports, opening the store and answering: what a player waits for at a shell.
Target: at most 0.6 s wall. The store is precomputed first with ``memo-solver precompute``
into a temporary file (or ``--store`` is reused and filled if needed). ``memo-solver
--help`` is timed the same way.

Run::

    .venv/bin/python scripts/bench/bench_cli.py
    .venv/bin/python scripts/bench/bench_cli.py --json
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from _bench import (
    ChildRun,
    Target,
    add_targets,
    child_env,
    memo_solver_command,
    precompute_cli,
    run_child,
    verdict,
)

STATE = "- x x x x x x x x x x - x 62 False 2 1 2 2 2 6"
ADVISE_TARGET_S = 0.6


def summary(runs: list[ChildRun]) -> dict[str, float]:
    return {
        "n": len(runs),
        "median_wall_s": statistics.median(r.wall_s for r in runs),
        "max_wall_s": max(r.wall_s for r in runs),
        "median_cpu_s": statistics.median(r.cpu_s for r in runs),
        "max_cpu_s": max(r.cpu_s for r in runs),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=10, help="runs of each command (default 10)")
    parser.add_argument("--store", type=Path, help="reuse this store (default: temp file)")
    parser.add_argument("--state", default=STATE, help=f"state to advise (default: {STATE!r})")
    parser.add_argument("--memo-solver", help="our console script (default: beside python)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(parser, advise_s=ADVISE_TARGET_S)
    args = parser.parse_args()

    command = memo_solver_command(args.memo_solver)
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        store = str(args.store or Path(tmp) / "warm.sqlite3")
        env = child_env()
        solve = precompute_cli(command, store, "yahtzee")
        advise_argv = [command, "--store", store, "advise", "--rules", "yahtzee", args.state]
        run_child(advise_argv, env)  # untimed: page cache and .pyc files warm
        advise = [run_child(advise_argv, env) for _ in range(args.runs)]
        helps = [run_child([command, "--help"], env) for _ in range(args.runs)]

    advise_sum, help_sum = summary(advise), summary(helps)
    result = {
        "command": [*advise_argv[:2], "<store>", *advise_argv[3:]],
        "precompute": solve,
        "advise": advise_sum,
        "help": help_sum,
        "advice_text": advise[0].stdout,
    }
    targets = [Target("advise max wall s", advise_sum["max_wall_s"], args.target_advise_s)]
    if args.json:
        return verdict(targets, result)
    print(f"memo-solver advise on a warm store, {args.runs} runs (state {args.state!r})")
    print(f"{'':<22} {'median wall':>12} {'max wall':>9} {'median CPU':>11} {'max CPU':>8}")
    for name, row in (("advise", advise_sum), ("--help", help_sum)):
        print(
            f"{name:<22} {row['median_wall_s']:>11.3f}s {row['max_wall_s']:>8.3f}s "
            f"{row['median_cpu_s']:>10.3f}s {row['max_cpu_s']:>7.3f}s"
        )
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
