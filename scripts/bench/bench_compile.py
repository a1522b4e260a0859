"""What compiling the solver's loops costs: once after an install (or on a new CPU), then never.

What it measures, each as a whole process (CPU = user + sys of the child, from
``os.wait4``), ``--rounds`` times (default 3), cold and warm alternating in one run:

- ``memo-solver compile --json`` on an empty cache folder (cold: what the first use after
  an install pays once) and again on the filled one (warm: loading the machine code);
- ``memo-solver advise --rules yahtzee STATE`` on a store holding the whole game, with an
  empty cache folder (the first command of a user who never ran ``compile``) and with the
  filled one (every later command).

Each process gets its folder through ``MEMO_SOLVER_COMPILE_CACHE``; the user's own cache is
not touched. Prints medians, the host's CPU and the load average. No target: the figures are
for the record (README, "Compiled code").

Run::

    .venv/bin/python scripts/bench/bench_compile.py
    .venv/bin/python scripts/bench/bench_compile.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
from pathlib import Path

from _bench import ChildRun, child_env, memo_solver_command, precompute_cli, run_child, verdict

STATE = "- x x x x x x x x x x - x 62 False 2 1 2 2 2 6"


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def medians(runs: list[ChildRun]) -> dict[str, float]:
    return {
        "n": len(runs),
        "median_cpu_s": round(statistics.median(r.cpu_s for r in runs), 3),
        "median_wall_s": round(statistics.median(r.wall_s for r in runs), 3),
        "max_cpu_s": round(max(r.cpu_s for r in runs), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="cold/warm pairs (default 3)")
    parser.add_argument("--memo-solver", help="our console script (default: beside python)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    command = memo_solver_command(args.memo_solver)
    runs: dict[str, list[ChildRun]] = {
        "compile_cold": [],
        "compile_warm": [],
        "advise_cold": [],
        "advise_warm": [],
    }
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as tmp:
        store = str(Path(tmp) / "yahtzee.sqlite3")
        warm_folder = str(Path(tmp) / "warm")
        warm = child_env(MEMO_SOLVER_COMPILE_CACHE=warm_folder)
        run_child([command, "compile"], warm)
        precompute_cli(command, store, "yahtzee", warm)
        advise = [command, "--store", store, "advise", "--rules", "yahtzee", STATE]
        for round_ in range(args.rounds):
            cold = child_env(MEMO_SOLVER_COMPILE_CACHE=str(Path(tmp) / f"cold-{round_}"))
            runs["compile_cold"].append(run_child([command, "compile", "--json"], cold))
            runs["compile_warm"].append(run_child([command, "compile", "--json"], warm))
            cold = child_env(MEMO_SOLVER_COMPILE_CACHE=str(Path(tmp) / f"advise-{round_}"))
            runs["advise_cold"].append(run_child(advise, cold))
            runs["advise_warm"].append(run_child(advise, warm))
    reported = json.loads(runs["compile_cold"][0].stdout)
    result = {
        "cpu": cpu_model(),
        "numba_cpu": reported["cpu"],
        "functions": reported["functions"],
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        **{name: medians(found) for name, found in runs.items()},
        "compile_cold_reported_s": [json.loads(r.stdout)["seconds"] for r in runs["compile_cold"]],
        "compile_warm_reported_s": [json.loads(r.stdout)["seconds"] for r in runs["compile_warm"]],
    }
    if args.json:
        return verdict([], result)
    print(f"host: {result['cpu']} (numba: {result['numba_cpu']}), {args.rounds} rounds")
    print(f"load average before {result['load_average_before']}, after "
          f"{result['load_average_after']}")  # fmt: skip
    print(f"{'':<38} {'median CPU s':>12} {'median wall s':>14} {'max CPU s':>10}")
    labels = {
        "compile_cold": f"compile, empty cache ({result['functions']} functions)",
        "compile_warm": "compile, filled cache",
        "advise_cold": "advise on a solved store, empty cache",
        "advise_warm": "advise on a solved store, filled cache",
    }
    for name, label in labels.items():
        row = result[name]
        assert isinstance(row, dict)
        print(
            f"{label:<38} {row['median_cpu_s']:>12.3f} {row['median_wall_s']:>14.3f} "
            f"{row['max_cpu_s']:>10.3f}"
        )
    return verdict([])


if __name__ == "__main__":
    raise SystemExit(main())
