"""Cold full precompute of ``yahtzee``: our CLI against the ``yatzy-solver`` wheel, side by side.

What it measures, per child process (CPU = user + sys from ``os.wait4``, so each figure is
that one child's own, on a noisy shared machine):

- ours: ``memo-solver --store <fresh temp file> precompute --rules yahtzee --json``, a cold
  solve of all 8,192 blocks into an empty SQLite store; also the store's size on disk;
- theirs: the ``yatzy-solver`` wheel from PyPI (Rust, float64) building the same table in
  memory from scratch, ``RAYON_NUM_THREADS=1``.

The two alternate, ``--rounds`` times (the order flips every round so drift hits both), and
the script prints medians, the ratio ours/theirs, both start values, and the targets:
ours <= theirs in CPU, peak RSS <= 300 MB, store <= 10 MB.

The wheel is not a dependency of the project: the script makes a scratch venv (default
``/tmp/memo-solver-bench/venv``, reused when present) and ``pip install``s it there.

Run (about 1 minute with 3 rounds)::

    .venv/bin/python scripts/bench/bench_precompute.py            # words
    .venv/bin/python scripts/bench/bench_precompute.py --json     # one JSON object
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from _bench import (
    ChildRun,
    Target,
    add_targets,
    child_env,
    memo_solver_command,
    run_child,
    verdict,
)

DEFAULT_VENV = Path("/tmp/memo-solver-bench/venv")
PINNED_START = 254.5877287345
TOLERANCE = 1e-9
CPU_RATIO_TARGET = 1.0
RSS_TARGET_MB = 300.0
STORE_TARGET_MB = 10.0
THEIR_CODE = (
    "import yatzy_solver as ys; "
    "s = ys.Solver.build(ys.Variant('american+forced-joker')); "
    "print('%.12f' % s.state_value('upper 0 | filled -'))"
)


def ensure_wheel(venv: Path) -> Path:
    """The scratch venv's python with ``yatzy-solver`` installed (made once, then reused)."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    probe = subprocess.run([str(python), "-c", "import yatzy_solver"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "yatzy-solver"],
            check=True,
            stdout=sys.stderr,
        )
    return python


def store_bytes(path: Path) -> int:
    """The store file with its WAL and shared-memory files, if any are left."""
    files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
    return sum(f.stat().st_size for f in files if f.exists())


def run_ours(command: str, workdir: Path, round_no: int) -> tuple[ChildRun, float, int]:
    store = workdir / f"round{round_no}.sqlite3"
    run = run_child(
        [command, "--store", str(store), "precompute", "--rules", "yahtzee", "--json"],
        child_env(),
    )
    payload = json.loads(run.stdout)
    if payload["blocks_computed"] != payload["blocks_total"]:
        raise SystemExit(f"not a cold solve: {payload}")
    size = store_bytes(store)
    for leftover in workdir.glob(store.name + "*"):
        leftover.unlink()
    return run, float(payload["value"]), size


def run_theirs(python: Path) -> tuple[ChildRun, float]:
    run = run_child([str(python), "-c", THEIR_CODE], child_env(RAYON_NUM_THREADS="1"))
    return run, float(run.stdout.strip())


def summarize(runs: list[ChildRun]) -> dict[str, float]:
    return {
        "cpu_s": statistics.median(r.cpu_s for r in runs),
        "user_s": statistics.median(r.user_s for r in runs),
        "sys_s": statistics.median(r.sys_s for r in runs),
        "wall_s": statistics.median(r.wall_s for r in runs),
        "max_rss_mb": max(r.max_rss_mb for r in runs),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument(
        "--venv", type=Path, default=DEFAULT_VENV, help=f"scratch venv (default {DEFAULT_VENV})"
    )
    parser.add_argument("--memo-solver", help="our console script (default: beside python)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(parser, cpu_ratio=CPU_RATIO_TARGET, rss_mb=RSS_TARGET_MB, store_mb=STORE_TARGET_MB)
    args = parser.parse_args()

    python = ensure_wheel(args.venv)
    command = memo_solver_command(args.memo_solver)
    ours: list[ChildRun] = []
    theirs: list[ChildRun] = []
    our_values: list[float] = []
    their_values: list[float] = []
    sizes: list[int] = []
    with tempfile.TemporaryDirectory(prefix="bench-precompute-") as tmp:
        for round_no in range(args.rounds):
            steps = ("theirs", "ours") if round_no % 2 == 0 else ("ours", "theirs")
            for step in steps:
                if step == "ours":
                    run, value, size = run_ours(command, Path(tmp), round_no)
                    ours.append(run)
                    our_values.append(value)
                    sizes.append(size)
                else:
                    run, value = run_theirs(python)
                    theirs.append(run)
                    their_values.append(value)
                if not args.json:
                    print(
                        f"  round {round_no + 1} {step:<6} cpu {run.cpu_s:6.2f} s  "
                        f"wall {run.wall_s:6.2f} s  rss {run.max_rss_mb:6.1f} MB",
                        flush=True,
                    )

    our_sum, their_sum = summarize(ours), summarize(theirs)
    ratio = our_sum["cpu_s"] / their_sum["cpu_s"]
    store_mb = max(sizes) / 1e6
    pinned = [abs(v - PINNED_START) <= TOLERANCE for v in our_values + their_values]
    targets = [
        Target("CPU ours/theirs", ratio, args.target_cpu_ratio),
        Target("our peak RSS MB", our_sum["max_rss_mb"], args.target_rss_mb),
        Target("store MB", store_mb, args.target_store_mb),
        Target.holds("start values match the pin to 1e-9", all(pinned)),
    ]
    result = {
        "rounds": args.rounds,
        "ours": our_sum | {"start_value": our_values[0], "store_mb": store_mb},
        "theirs": their_sum | {"start_value": their_values[0]},
        "cpu_ratio_ours_over_theirs": ratio,
        "runs": {"ours": [asdict(r) for r in ours], "theirs": [asdict(r) for r in theirs]},
    }
    if args.json:
        return verdict(targets, result)
    print(f"cold precompute of yahtzee, {args.rounds} alternating rounds, medians")
    print(f"{'':<26} {'CPU s':>7} {'user':>7} {'sys':>6} {'wall s':>7} {'peak RSS MB':>12}")
    for name, row in (("ours (memo-solver)", our_sum), ("theirs (yatzy-solver)", their_sum)):
        print(
            f"{name:<26} {row['cpu_s']:>7.2f} {row['user_s']:>7.2f} {row['sys_s']:>6.2f} "
            f"{row['wall_s']:>7.2f} {row['max_rss_mb']:>12.1f}"
        )
    print(f"CPU ratio ours/theirs: {ratio:.3f}")
    print(f"start value ours:   {our_values[0]:.12f}")
    print(f"start value theirs: {their_values[0]:.12f}")
    print(f"store on disk: {store_mb:.2f} MB ({max(sizes)} bytes)")
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
