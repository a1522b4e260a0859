"""A rule set's start value by a plain bottom-up pass: the second computation of a new value.

A value nobody has published (Maxi Yatzy with saved rolls) is pinned only when two
computations agree. The first is ``memo-solver precompute``: the engine, its claims and
memo, a store. This is the second, sharing none of that: it walks the layers of filled
boxes from the full scorecard down, solving each layer from the one after it with the
compiled kernel (which the brute forces check on small games) in chunks across threads, and
keeps two layers in memory and nothing on disk. It prints the start value to 10 decimals,
the reachable turn starts it solved, its CPU and peak memory.

    python scripts/tools/bottom_up.py --rules yatzy-saved-example.json   # a rule file
    python scripts/tools/bottom_up.py --rules maxi-yatzy-saved --threads 2 --json
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np

from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.rules.rule_file import read_rule_file
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.turn import solve_blocks

CHUNK = 256
"""Blocks a kernel call solves: small enough to spread a narrow layer over the threads."""


def rule_set(name: str) -> RuleSet:
    return read_rule_file(name) if name.endswith(".json") else get_rule_set(name)


def start_value(rules: RuleSet, threads: int, *, quiet: bool) -> tuple[float, int]:
    """The empty scorecard's value (bank 0), and how many reachable turn starts were solved."""
    after: dict[int, np.ndarray] = {}
    solved = 0
    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        for layer in rules.layers(0):
            chunks = [layer[i : i + CHUNK] for i in range(0, len(layer), CHUNK)]
            blocks = pool.map(partial(solve_blocks, rules, successors=after), chunks)
            here = {
                mask: block
                for masks, chunk in zip(chunks, blocks, strict=True)
                for mask, block in zip(masks, chunk, strict=True)
            }
            solved += sum(int(np.count_nonzero(~np.isnan(block))) for block in here.values())
            after = here
            if not quiet:
                took = time.monotonic() - started
                filled = layer[0].bit_count()
                print(f"layer {filled:2d}: {len(layer):7d} blocks, {took:7.0f} s", file=sys.stderr)
    root = after[0]
    return float(root[(0,) * root.ndim]), solved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", required=True, help="a built-in's name or a rule file (.json)")
    parser.add_argument("--threads", type=int, default=2, help="kernel threads (default 2)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    rules = rule_set(args.rules)
    cpu = time.process_time()
    value, turn_starts = start_value(rules, args.threads, quiet=args.json)
    figures = {
        "rules": rules.name,
        "fingerprint": rules.fingerprint,
        "start_value": round(value, 10),
        "turn_starts": turn_starts,
        "cpu_s": round(time.process_time() - cpu, 1),
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print("\n".join(f"{key}: {value}" for key, value in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
