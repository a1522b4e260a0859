"""Dice of Doom on the shared engine: the two performance targets of the Dice of Doom issue.

(a) The large 3 x 3 board ``a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3``, a to move: its
value and DAG statistics, cold (a fresh solver each round), in process. Target: <= 3 s.
The figures are checked against the published ones (1,468,919,491 nodes, depth 40,
201,861 distinct positions) on every round; CPU time (user + sys) of the round is reported,
median of ``--rounds``.

(b) The full 3 x 3 precompute (all 20,155,392 turn starts, 19,495 blocks) through
``--workers`` ``python -m worker`` processes on a fresh ``redis-server`` (AOF, fsync every
second, as in docker-compose.yml): queued with ``memo-solver --redis URL precompute --game
dice-of-doom --size 3``, followed through the job's record. Reported: wall time, the CPU of
the workers and of redis-server from ``/proc/<pid>/stat``, each worker's peak resident
memory (``VmHWM``) and redis-server's, the memo's size (Redis ``used_memory`` and the bytes
of the blocks hash), the blocks stored, and each worker's share. Targets: <= 10 minutes and
<= 4 GiB (workers and Redis together).

Run (a few minutes; needs redis-server, see tests/support/redis_server.py)::

    .venv/bin/python scripts/bench/bench_dice_of_doom.py              # words
    .venv/bin/python scripts/bench/bench_dice_of_doom.py --json       # one JSON object
    .venv/bin/python scripts/bench/bench_dice_of_doom.py --skip-precompute
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

from _bench import ROOT, Target, add_targets, cpu_seconds, peak_rss_mb, verdict
from support.redis_server import RedisServer, ensure_redis_server
from support.worker_support import layout_of, stored_blocks, wait_for

from memo_solver.core.engine import namespace
from memo_solver.core.runtime import pin_blas_threads
from memo_solver.games.dice_of_doom.game import DiceOfDoomGame
from memo_solver.games.dice_of_doom.sizes import SIZES
from memo_solver.games.dice_of_doom.tree import DoomSolver, make_position
from memo_solver.jobs.queue import Job
from memo_solver.stores import redis_keys

BOARD = "a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3"
PUBLISHED = {"tree_size": 1_468_919_491, "depth": 40, "positions": 201_861}
CLI = [sys.executable, "-m", "memo_solver"]
COLD_TARGET_S, PRECOMPUTE_TARGET_S, MEMORY_TARGET_GIB = 3.0, 600.0, 4.0


def env() -> dict[str, str]:
    return {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def cold_large_board(rounds: int) -> dict[str, Any]:
    cpu = []
    for _ in range(rounds):
        start = time.process_time()
        analysis = DoomSolver(3).analyse(make_position(BOARD, "a"))
        cpu.append(time.process_time() - start)
        stats = analysis.stats
        assert stats is not None, "a solved analysis has its tree figures"
        found = {"tree_size": stats.tree_size, "depth": stats.depth, "positions": stats.positions}
        if found != PUBLISHED:
            raise SystemExit(f"the large board gives {found}, not the published {PUBLISHED}")
    return {
        "cpu_s_median": round(statistics.median(cpu), 3),
        "cpu_s": [round(c, 3) for c in cpu],
        "value": str(analysis.value),
        **found,
    }


def precompute(workers: int, size: int, workdir: Path) -> dict[str, Any]:
    game = DiceOfDoomGame(size)
    binary = ensure_redis_server()
    with RedisServer(workdir / "redis", binary=binary) as server, ExitStack() as stack:
        client = stack.enter_context(server.client())
        pids = {}
        for n in range(1, workers + 1):
            name = f"doom-{n}"
            log = stack.enter_context((workdir / f"{name}.log").open("wb"))
            process = subprocess.Popen(
                [sys.executable, "-m", "worker", "--redis", server.url, "--id", name],
                env=env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            stack.callback(process.wait)
            stack.callback(process.kill)
            pids[name] = process.pid
        for name in pids:
            wait_for(
                f"{name}'s heartbeat", partial(client.exists, redis_keys.worker(name)), 60, 0.05
            )
        redis_pid = server.pid
        assert redis_pid is not None
        before = {pid: cpu_seconds(pid) for pid in [*pids.values(), redis_pid]}
        started = time.perf_counter()
        subprocess.run(
            [
                *CLI,
                "--redis",
                server.url,
                "precompute",
                "--game",
                "dice-of-doom",
                "--size",
                str(size),
            ],
            env=env(),
            check=True,
            capture_output=True,
        )

        def finished() -> dict[bytes, bytes] | None:
            record = client.hgetall(redis_keys.job(Job.precompute(game.name).id))
            if record.get(b"status") == b"failed":
                raise SystemExit(f"the job failed: {record}")
            return record if record.get(b"status") == b"done" else None

        record = wait_for("the precompute job", finished, 1800, 0.2)
        wall = time.perf_counter() - started
        cpu = {pid: cpu_seconds(pid) - before[pid] for pid in before}
        rss = {name: round(peak_rss_mb(pid) * 1e6) for name, pid in pids.items()}
        rss["redis-server"] = round(peak_rss_mb(redis_pid) * 1e6)
        ns = namespace(game)
        layout = layout_of(client, ns)
        stored = stored_blocks(client, ns)
        hash_bytes = sum(
            int(client.memory_usage(group, samples=0) or 0) for group in layout.block_groups()
        )
        used = int(client.info("memory")["used_memory"])
        time.sleep(2.5)  # one more heartbeat, so the counters are final
        shares = {
            name: int(client.hget(redis_keys.worker(name), "blocks_computed") or 0) for name in pids
        }
    if stored != game.block_count:
        raise SystemExit(f"{stored} blocks stored, not {game.block_count}")
    return {
        "workers": workers,
        "size": size,
        "wall_s": round(wall, 1),
        "workers_cpu_s": round(sum(cpu[pid] for pid in pids.values()), 1),
        "redis_cpu_s": round(cpu[redis_pid], 1),
        "peak_rss_bytes": rss,
        "peak_rss_total_bytes": sum(rss.values()),
        "memo_used_memory_bytes": used,
        "memo_blocks_hash_bytes": hash_bytes,
        "blocks_stored": stored,
        "turn_starts": game.turn_starts(),
        "blocks_computed_by_worker": shares,
        "root_value": float(record[b"value"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="cold rounds of the large board")
    parser.add_argument("--workers", type=int, default=2, help="workers for the precompute")
    parser.add_argument(
        "--size", type=int, choices=SIZES, default=3, help="the precomputed board's (default 3)"
    )
    parser.add_argument("--skip-precompute", action="store_true", help="only the large board")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(
        parser,
        cold_s=COLD_TARGET_S,
        precompute_s=PRECOMPUTE_TARGET_S,
        memory_gib=MEMORY_TARGET_GIB,
    )
    args = parser.parse_args()
    pin_blas_threads()
    report: dict[str, Any] = {"large_board": cold_large_board(args.rounds)}
    board = report["large_board"]
    targets = [Target("large board cold CPU s", board["cpu_s_median"], args.target_cold_s)]
    if not args.skip_precompute:
        with tempfile.TemporaryDirectory(prefix="bench-doom-") as tmp:
            run = report["precompute"] = precompute(args.workers, args.size, Path(tmp))
        targets += [
            Target(
                f"{args.size}x{args.size} precompute wall s",
                run["wall_s"],
                args.target_precompute_s,
            ),
            Target(
                "peak memory GiB, workers and Redis",
                run["peak_rss_total_bytes"] / 2**30,
                args.target_memory_gib,
            ),
        ]
    if args.json:
        return verdict(targets, report)
    print(
        f"large 3x3 board, cold: {board['cpu_s_median']} s CPU (median of {args.rounds}); "
        f"value {board['value']}, {board['tree_size']:,} nodes, "
        f"depth {board['depth']}, {board['positions']:,} positions"
    )
    if "precompute" in report:
        run = report["precompute"]
        print(
            f"full {args.size}x{args.size} precompute, {run['workers']} workers: {run['wall_s']} s "
            f"wall, workers {run['workers_cpu_s']} s CPU, redis "
            f"{run['redis_cpu_s']} s CPU; peak memory {run['peak_rss_total_bytes'] / 2**30:.2f}"
            f" GiB in all {run['peak_rss_bytes']}; memo: "
            f"{run['blocks_stored']:,} blocks, {run['turn_starts']:,} turn starts, "
            f"{run['memo_blocks_hash_bytes'] / 1e6:.1f} MB in the hash, Redis used_memory "
            f"{run['memo_used_memory_bytes'] / 1e6:.1f} MB; blocks computed by worker "
            f"{run['blocks_computed_by_worker']}; root value {run['root_value']:.6f}"
        )
    return verdict(targets)


if __name__ == "__main__":
    sys.exit(main())
