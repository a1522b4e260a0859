"""A whole need table through two workers on Redis (issue #19's table figure).

A fresh ``redis-server`` (AOF, as in docker-compose.yml), two ``python -m worker``
processes, and ``memo-solver --redis URL precompute --rules R --need --need-cap C --wait``
queueing the job and following it. Reported: the wall time of the job; the CPU (user +
sys) the workers and redis-server spent between the job's queueing and its end (from
``/proc/<pid>/stat``; the workers' start-up not counted); each worker's peak resident
memory (``VmHWM``); what Redis holds (``used_memory``) and its AOF on disk once rewritten;
the blocks each worker computed (from ``status``: their sum must be the table's block count,
none computed twice: the one target); and the start's chance of the cap, for the record.

Run (``yahtzee`` at the default cap: a few CPU minutes and about 2 GB in Redis)::

    .venv/bin/python scripts/bench/bench_need_workers.py
    .venv/bin/python scripts/bench/bench_need_workers.py --rules yahtzee-lower --cap 100 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import tempfile
import time
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

from _bench import (
    Target,
    add_targets,
    child_env,
    cpu_seconds,
    memo_solver_command,
    peak_rss_mb,
    verdict,
)
from bench_workers import start_worker
from support.redis_server import RedisServer, ensure_redis_server
from support.worker_support import wait_for

from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.solve.need_table import table_bytes
from memo_solver.stores import redis_keys

WORKERS = ("need-1", "need-2")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rules", default="yahtzee")
    parser.add_argument("--cap", type=int, default=400)
    parser.add_argument("--json", action="store_true")
    add_targets(parser, computed_twice=0)
    args = parser.parse_args()
    cli = memo_solver_command(None)
    rules = get_rule_set(args.rules)
    report: dict[str, Any] = {
        "host": platform.processor() or platform.machine(),
        "rules": args.rules,
        "cap": args.cap,
        "table_mb_estimate": table_bytes(rules, args.cap) / 2**20,
        "load_before": os.getloadavg(),
    }
    binary = ensure_redis_server()
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        server = stack.enter_context(RedisServer(Path(folder), binary=binary))
        pids = {name: start_worker(stack, server.url, name, Path(folder), 2.0) for name in WORKERS}
        client = stack.enter_context(server.client())
        for name in WORKERS:
            wait_for(f"{name}'s heartbeat", partial(client.exists, redis_keys.worker(name)), 60)
        assert server.pid is not None
        owners = [*pids.values(), server.pid]
        before = {pid: cpu_seconds(pid) for pid in owners}
        started = time.perf_counter()
        argv = [cli, "--redis", server.url, "precompute", "--rules", args.rules, "--need"]
        argv += ["--need-cap", str(args.cap), "--wait", "--json"]
        done = subprocess.run(argv, env=child_env(), capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"precompute --need failed: {done.stderr}")
        after = {pid: cpu_seconds(pid) for pid in owners}
        finished_at = time.time()

        def computed() -> dict[str, int] | None:
            status = subprocess.run(
                [cli, "--redis", server.url, "status", "--json"],
                env=child_env(),
                capture_output=True,
                text=True,
                check=True,
            )
            rows = {w["id"]: w for w in json.loads(status.stdout)["workers"]}
            if all(n in rows and float(rows[n]["beat_at"]) > finished_at for n in WORKERS):
                return {n: int(rows[n]["blocks_computed"]) for n in WORKERS}
            return None

        counts = wait_for("a heartbeat after the job", computed, 60, every=0.5)
        client.bgrewriteaof()
        server.wait_written()
        aof = sum(f.stat().st_size for f in Path(folder).rglob("*.aof"))
        report |= {
            "job": json.loads(done.stdout),
            "wall_s": wall,
            "workers_cpu_s": sum(after[p] - before[p] for p in pids.values()),
            "redis_cpu_s": after[server.pid] - before[server.pid],
            "workers_peak_rss_mb": {n: peak_rss_mb(p) for n, p in pids.items()},
            "redis_used_memory_mb": int(client.info("memory")["used_memory"]) / 2**20,
            "aof_mb": aof / 2**20,
            "blocks_computed": counts,
            "blocks_in_table": rules.block_count,
            "computed_twice": sum(counts.values()) - rules.block_count,
        }
    report["load_after"] = os.getloadavg()
    twice = report["computed_twice"]
    targets = [Target("blocks computed twice", twice, args.target_computed_twice)]
    if args.json:
        return verdict(targets, report)
    print(json.dumps(report, indent=2))
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
