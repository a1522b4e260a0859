"""A precompute through two workers on a 3-master Redis Cluster, beside one standalone Redis.

For each kind of Redis, fresh every round (tests/support/redis_cluster.py and
tests/support/redis_server.py: loopback, free ports, AOF every second as in docker-compose.yml), two
``python -m worker`` processes are started (on a cluster, each through another master's URL) and,
once both beat, ``memo-solver --redis URL precompute --rules R --wait`` is run through a third way
in (the seed list on a cluster). Reported per run:

- wall time of the precompute (the CLI process, from queueing to the pinned start value);
- CPU (user + sys, /proc) of the two workers and every redis-server over the same span;
- the share of Redis commands each master served (``INFO commandstats`` after ``CONFIG
  RESETSTAT``, the INFO, CONFIG, CLUSTER, PING and HELLO the bench and clients send left
  out): target on the cluster, no master above 45 %;
- the largest key (``MEMORY USAGE`` of every block group) and the Redis memory in all;
- blocks computed twice: the workers' ``blocks_computed`` (from their heartbeats, read
  after one more beat) minus the rule set's blocks (target: 0 without faults).

The two kinds alternate for ``--rounds`` rounds (the order flips each round); the medians,
and the cluster's wall and CPU over the standalone's (target: within 10 %).

Run (about two minutes for yatzy, one round; needs redis-server)::

    .venv/bin/python scripts/bench/bench_cluster.py                       # yatzy
    .venv/bin/python scripts/bench/bench_cluster.py --rules maxi-yatzy    # about 0.6 GB in Redis
    .venv/bin/python scripts/bench/bench_cluster.py --rounds 3 --json
"""

from __future__ import annotations

import argparse
import json
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

from _bench import Target, add_targets, bare_env, cpu_seconds, verdict
from support.redis_cluster import RedisCluster
from support.redis_server import RedisServer, ensure_redis_server
from support.worker_support import layout_of, wait_for

from memo_solver.core.engine import namespace
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores import redis_keys

NOT_BLOCK_COMMANDS = {"info", "config", "cluster", "ping", "hello", "client", "command"}
"""What the bench, health checks and client handshakes send: not the workload's."""
SHARE_TARGET = 0.45
SLOWDOWN_TARGET = 1.10
TOLERANCE = 1e-9


def one_run(kind: str, rules: str, folder: Path) -> dict[str, Any]:
    game = YahtzeeGame(get_rule_set(rules))
    ns = namespace(game)
    with ExitStack() as stack:
        binary = ensure_redis_server()
        servers: list[RedisServer]
        if kind == "cluster":
            cluster = stack.enter_context(RedisCluster(folder / "cluster", binary=binary))
            servers = cluster.masters
            urls = [servers[0].url, servers[1].url, cluster.seeds]
            connect: Any = cluster.client
        else:
            server = stack.enter_context(RedisServer(folder / "redis", binary=binary))
            servers = [server]
            urls = [server.url] * 3
            connect = server.client
        workers = []
        for name, url in (("w1", urls[0]), ("w2", urls[1])):
            log = stack.enter_context((folder / f"{name}.log").open("wb"))
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "worker",
                    "--redis",
                    url,
                    "--id",
                    name,
                    "--heartbeat",
                    "0.5",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=bare_env(),
            )
            stack.callback(process.wait, 30)
            stack.callback(process.terminate)
            workers.append(process)
        with connect() as r:
            for name in ("w1", "w2"):
                key = redis_keys.worker(name)
                wait_for(f"{name}'s heartbeat", partial(r.exists, key), 60)
        for server in servers:
            with server.client() as node:
                node.config_resetstat()
        pids = [p.pid for p in workers] + [s.pid for s in servers if s.pid is not None]
        before = {pid: cpu_seconds(pid) for pid in pids}
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "memo_solver", "--redis", urls[2], "precompute", "--rules",
             rules, "--wait", "--json"],
            capture_output=True, text=True, env=bare_env(), check=False, timeout=3600,
        )  # fmt: skip
        wall = time.perf_counter() - started
        spent = {pid: cpu_seconds(pid) - before[pid] for pid in pids}
        cpu = sum(spent.values())
        worker_cpu = sum(spent[p.pid] for p in workers)
        if done.returncode != 0:
            raise SystemExit(f"precompute on {kind} exited {done.returncode}:\n{done.stderr}")
        value = float(json.loads(done.stdout)["value"])
        if game.rules.start_value is not None and abs(value - game.rules.start_value) > TOLERANCE:
            raise SystemExit(f"{kind}: start value {value!r}, pinned {game.rules.start_value}")
        calls = []
        for server in servers:
            with server.client() as node:
                stats = node.info("commandstats")
            calls.append(
                sum(
                    int(row["calls"])
                    for name, row in stats.items()
                    if name.removeprefix("cmdstat_").split("|")[0] not in NOT_BLOCK_COMMANDS
                )
            )
        with connect() as r:
            layout = layout_of(r, ns)
            groups = layout.groups
            largest = max(int(r.memory_usage(g, samples=0) or 0) for g in layout.block_groups())
            memory = 0
            for server in servers:
                with server.client() as node:
                    memory += int(node.info("memory")["used_memory"])

            def counters() -> int | None:
                rows = [r.hgetall(redis_keys.worker(n)) for n in ("w1", "w2")]
                total = sum(int(row.get(b"blocks_computed", 0)) for row in rows)
                return total if total >= game.block_count else None

            computed = wait_for("the workers' last counters", counters, 30)
    return {
        "kind": kind,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "worker_cpu_s": round(worker_cpu, 2),
        "redis_cpu_s": round(cpu - worker_cpu, 2),
        "command_share": [round(c / max(1, sum(calls)), 3) for c in calls],
        "largest_key_bytes": largest,
        "used_memory_bytes": memory,
        "groups": groups,
        "computed_twice": computed - game.block_count,
        "value": value,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rules", default="yatzy", help="the rule set to precompute (yatzy)")
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds (1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(parser, slowdown=SLOWDOWN_TARGET, share=SHARE_TARGET)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    runs: dict[str, list[dict[str, Any]]] = {"standalone": [], "cluster": []}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        for index in range(args.rounds):
            order = ["standalone", "cluster"] if index % 2 == 0 else ["cluster", "standalone"]
            for kind in order:
                folder = Path(tmp) / f"{kind}-{index}"
                folder.mkdir()
                runs[kind].append(one_run(kind, args.rules, folder))
    median = {
        kind: {
            "wall_s": statistics.median(r["wall_s"] for r in rows),
            "cpu_s": statistics.median(r["cpu_s"] for r in rows),
        }
        for kind, rows in runs.items()
    }
    worst_share = max(max(r["command_share"]) for r in runs["cluster"])
    result = {
        "rules": args.rules,
        "rounds": args.rounds,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "runs": runs,
        "median": median,
        "cluster_over_standalone": {
            key: round(median["cluster"][key] / median["standalone"][key], 3)
            for key in ("wall_s", "cpu_s")
        },
        "largest_master_share": worst_share,
    }
    ratio = result["cluster_over_standalone"]
    twice = sum(r["computed_twice"] for rows in runs.values() for r in rows)
    targets = [
        Target("wall cluster/standalone", ratio["wall_s"], args.target_slowdown),
        Target("CPU cluster/standalone", ratio["cpu_s"], args.target_slowdown),
        Target("largest master share", worst_share, args.target_share),
        Target.holds("no block computed twice", twice == 0),
    ]
    if args.json:
        return verdict(targets, result)
    print(f"{args.rules}: two workers, {args.rounds} round(s), load {load_before[0]:.2f}")
    for kind, rows in runs.items():
        for row in rows:
            shares = ", ".join(f"{s:.0%}" for s in row["command_share"])
            print(
                f"  {kind:<10} wall {row['wall_s']:7.2f} s, CPU {row['cpu_s']:7.2f} s (workers "
                f"{row['worker_cpu_s']:.2f}, Redis {row['redis_cpu_s']:.2f}), commands "
                f"per master {shares}, largest key {row['largest_key_bytes'] / 1e6:.2f} MB "
                f"({row['groups']} groups), Redis {row['used_memory_bytes'] / 1e6:.0f} MB, "
                f"computed twice {row['computed_twice']}"
            )
    print(
        f"  cluster / standalone: wall {ratio['wall_s']:.2f}, CPU {ratio['cpu_s']:.2f}; "
        f"largest master share {worst_share:.0%}"
    )
    return verdict(targets)


if __name__ == "__main__":
    sys.exit(main())
