"""A cold question from the start against a precompute of the same game, side by side.

Both children start on an empty SQLite store of their own and solve the whole game:

- ``memo-solver --store <empty> precompute --rules R --json``: a whole solve, a layer at a
  time;
- ``memo-solver --store <empty> value --rules R --json``: the question of a new user, whose
  cone is the whole game, so that it too must be solved a layer at a time.

Each child's CPU (user + sys) and peak RSS come from ``os.wait4``, so each figure is that
child's own on a noisy shared machine. The two alternate ``--rounds`` times (the order flips
every round so drift hits both); the script prints each run, the medians, the ratios
value/precompute and the targets: peak RSS at most 1.5 times, CPU at most 1.2 times.

Run (``yahtzee``: seconds; ``maxi-yatzy``: about two CPU minutes a child)::

    .venv/bin/python scripts/bench/bench_cold.py --rules yahtzee
    .venv/bin/python scripts/bench/bench_cold.py --rules maxi-yatzy --rounds 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from _bench import ChildRun, Target, add_targets, child_env, memo_solver_command, run_child, verdict

RSS_RATIO_TARGET = 1.5
CPU_RATIO_TARGET = 1.2
COMMANDS = ("precompute", "value")


def run(cli: str, command: str, rules: str, folder: Path) -> ChildRun:
    """One cold solve of ``rules`` by ``command`` on a store of its own in ``folder``."""
    store = folder / f"{command}.sqlite3"
    return run_child([cli, "--store", str(store), command, "--rules", rules, "--json"], child_env())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rules", default="maxi-yatzy", help="the game (default: maxi-yatzy)")
    parser.add_argument("--rounds", type=int, default=1, help="alternations (default: 1)")
    parser.add_argument("--memo-solver", help="the CLI to run (default: beside this python)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    add_targets(parser, rss_ratio=RSS_RATIO_TARGET, cpu_ratio=CPU_RATIO_TARGET)
    args = parser.parse_args()
    cli = memo_solver_command(args.memo_solver)
    runs: dict[str, list[ChildRun]] = {command: [] for command in COMMANDS}
    for round_ in range(args.rounds):
        order = COMMANDS if round_ % 2 == 0 else COMMANDS[::-1]
        for command in order:
            with tempfile.TemporaryDirectory(prefix="bench-cold-") as folder:
                runs[command].append(run(cli, command, args.rules, Path(folder)))
    values = {command: json.loads(runs[command][-1].stdout)["value"] for command in COMMANDS}
    median = {
        command: {
            "cpu_s": statistics.median(r.cpu_s for r in runs[command]),
            "max_rss_mb": statistics.median(r.max_rss_mb for r in runs[command]),
            "wall_s": statistics.median(r.wall_s for r in runs[command]),
        }
        for command in COMMANDS
    }
    ratios = {
        figure: median["value"][figure] / median["precompute"][figure]
        for figure in ("cpu_s", "max_rss_mb")
    }
    report = {
        "rules": args.rules,
        "rounds": args.rounds,
        "median": median,
        "ratios_value_over_precompute": ratios,
        "start_values": values,
    }
    targets = [
        Target("peak RSS value/precompute", ratios["max_rss_mb"], args.target_rss_ratio),
        Target("CPU value/precompute", ratios["cpu_s"], args.target_cpu_ratio),
    ]
    if args.json:
        return verdict(targets, report)
    print(f"cold solves of {args.rules}, {args.rounds} round(s), medians:")
    for command in COMMANDS:
        m = median[command]
        print(
            f"  {command:<10} CPU {m['cpu_s']:8.1f} s   peak RSS {m['max_rss_mb']:8.1f} MB   "
            f"wall {m['wall_s']:8.1f} s   start value {values[command]:.10f}"
        )
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
