"""The exact distribution and a cold simulation, ours against an older commit, side by side.

Issue #17 point 6: the whole ``yahtzee`` distribution (its forward pass) and a cold
``simulate --games 2000`` (building the block policies on the way) must each take at most a
third of the CPU time of the pre-kernel commit. ``--base`` names a worktree of that commit
with its own venv (``git worktree add /work/wt-base 7438a9f``, then ``python3 -m venv .venv
&& .venv/bin/pip install -e .`` there); this checkout's CLI is "ours".

Per side, each command a child process of its own (CPU = user + sys from ``os.wait4``, the
child's alone, so a noisy shared machine blurs wall time more than CPU):

- setup: ``precompute --rules R`` into a store of the side's own (untimed), then one untimed
  run of each command below (it loads or compiles the side's code);
- ``stats``: ``stats --rules R --json`` from the empty scorecard on that store: the
  forward pass over every block (its values read from the store);
- ``simulate``: ``simulate --rules R --games N --json`` on that store: a fresh process, so
  every block policy a game needs is built on the way (the policy cache is cold);
- ``simulate-empty`` (with ``--empty-store``): the same into an empty store, so the solve
  is paid too.

The sides alternate for ``--rounds`` rounds (the order flips every round, so drift hits
both); the script prints the medians, the speed-up base/ours, and the checks: speed-up at
least 3 for ``stats`` and ``simulate``, each side's distribution mean equal to its start
value to 1e-9, and both sides' games the same (the same seed, the same strategy: equal means).

Run (about 4 minutes with 3 rounds on a 2-core host)::

    .venv/bin/python scripts/bench/bench_forward.py --base /work/wt-base
    .venv/bin/python scripts/bench/bench_forward.py --base /work/wt-base --empty-store --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _bench import (
    ROOT,
    ChildRun,
    Target,
    add_targets,
    child_env,
    precompute_cli,
    run_child,
    verdict,
)

SPEEDUP_TARGET = 3.0
TOLERANCE = 1e-9
SIDES = ("ours", "base")


@dataclass
class Side:
    """One checkout: its CLI, its store, and what its runs cost and answered."""

    name: str
    command: str
    store: Path
    start_value: float = 0.0
    runs: dict[str, list[ChildRun]] = field(default_factory=dict)
    answers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def cli(root: Path) -> str:
    command = root / ".venv" / "bin" / "memo-solver"
    if not command.exists():
        raise SystemExit(f"{command} not found: make the worktree's venv first")
    return str(command)


def argv(side: Side, step: str, args: argparse.Namespace, scratch: Path) -> list[str]:
    rules = ["--rules", args.rules]
    if step == "stats":
        return [side.command, "--store", str(side.store), "stats", *rules, "--json"]
    store = side.store if step == "simulate" else scratch / f"{side.name}-empty.sqlite3"
    games = ["--games", str(args.games), "--seed", str(args.seed)]
    return [side.command, "--store", str(store), "simulate", *rules, *games, "--json"]


def run(side: Side, step: str, args: argparse.Namespace, scratch: Path) -> ChildRun:
    for leftover in scratch.glob(f"{side.name}-empty.sqlite3*"):
        leftover.unlink()  # an empty store every time
    return run_child(argv(side, step, args, scratch), child_env())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, required=True, help="worktree of the base commit")
    parser.add_argument("--ours", type=Path, default=ROOT, help="this checkout (default)")
    parser.add_argument("--rules", default="yahtzee", help="rule set (default: yahtzee)")
    parser.add_argument("--games", type=int, default=2000, help="games simulated (2000)")
    parser.add_argument("--seed", type=int, default=1, help="simulation seed (1)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (3)")
    parser.add_argument("--empty-store", action="store_true", help="also simulate-empty")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(parser, speedup=SPEEDUP_TARGET)
    args = parser.parse_args()

    steps = ["stats", "simulate"] + (["simulate-empty"] if args.empty_store else [])
    with tempfile.TemporaryDirectory(prefix="bench-forward-") as tmp:
        scratch = Path(tmp)
        sides = {
            name: Side(name, cli(root), scratch / f"{name}.sqlite3")
            for name, root in (("ours", args.ours), ("base", args.base))
        }
        for side in sides.values():
            solved = precompute_cli(side.command, side.store, args.rules)
            side.start_value = float(solved["value"])
            for step in steps:
                run(side, step, args, scratch)  # warm: compile caches, the OS's file cache
        for round_no in range(args.rounds):
            order = SIDES if round_no % 2 == 0 else SIDES[::-1]
            for step in steps:
                for name in order:
                    side = sides[name]
                    child = run(side, step, args, scratch)
                    side.runs.setdefault(step, []).append(child)
                    side.answers.setdefault(step, []).append(json.loads(child.stdout))
                    if not args.json:
                        print(
                            f"  round {round_no + 1} {step:<15} {name:<5} cpu {child.cpu_s:6.2f}"
                            f" s  wall {child.wall_s:6.2f} s  rss {child.max_rss_mb:6.0f} MB",
                            flush=True,
                        )

    medians = {
        step: {name: statistics.median(r.cpu_s for r in sides[name].runs[step]) for name in SIDES}
        for step in steps
    }
    speedup = {step: medians[step]["base"] / medians[step]["ours"] for step in steps}
    targets = [
        Target(f"{step} speed-up base/ours", speedup[step], args.target_speedup, at_least=True)
        for step in ("stats", "simulate")
    ]
    targets += [
        Target.holds(
            f"{name}: the distribution's mean is the start value to 1e-9",
            all(
                abs(answer["mean"] - sides[name].start_value) <= TOLERANCE
                for answer in sides[name].answers["stats"]
            ),
        )
        for name in SIDES
    ]
    targets.append(
        Target.holds(
            "both sides play the same games",
            all(
                sides["ours"].answers[step][0]["mean"] == sides["base"].answers[step][0]["mean"]
                for step in steps
                if step != "stats"
            ),
        )
    )
    result = {
        "rules": args.rules,
        "games": args.games,
        "rounds": args.rounds,
        "median_cpu_s": medians,
        "speedup_base_over_ours": speedup,
        "distribution_mean": {name: sides[name].answers["stats"][0]["mean"] for name in SIDES},
        "start_value": {name: sides[name].start_value for name in SIDES},
        "runs": {
            name: {step: [r.cpu_s for r in sides[name].runs[step]] for step in steps}
            for name in SIDES
        },
    }
    if args.json:
        return verdict(targets, result)
    print(f"{args.rules}: median CPU s of {args.rounds} alternating rounds")
    print(f"{'':<16} {'ours':>8} {'base':>8} {'base/ours':>10}")
    for step in steps:
        print(
            f"{step:<16} {medians[step]['ours']:>8.2f} {medians[step]['base']:>8.2f} "
            f"{speedup[step]:>10.2f}"
        )
    for name in SIDES:
        print(
            f"{name}: distribution mean {result['distribution_mean'][name]:.12f}, "
            f"start value {sides[name].start_value:.12f}"
        )
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
