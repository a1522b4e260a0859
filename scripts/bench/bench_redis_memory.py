"""What a whole table costs in memory on one Redis with workers beside it (#31): redis-server's
resident set, the fork of each AOF rewrite, and every worker's peak, through a whole solve.

Issue #31 bounds the whole `maxi-yatzy-saved` table on one Redis with two workers: redis-server's
RSS (not only ``used_memory``: an AOF rewrite forks, and the fork's pages are the parent's until
either writes) plus every worker's peak RSS under 20 GiB. This script starts a fresh
``redis-server`` (AOF, fsync every second, as docker-compose.yml), ``--workers`` ``python -m
worker`` processes, queues ``memo-solver --redis URL precompute --rules R`` and polls every
``--poll`` seconds until the job and every job it fanned out are done:

- redis-server's RSS and, while a rewrite runs, its child's (both from ``/proc``), their sum
  (an upper bound: the pages they share count twice) and their proportional share (PSS, from
  ``smaps_rollup``: what they hold of the machine between them);
- ``used_memory`` (what Redis counts of its data);
- each worker's RSS, and at the end its peak (``VmHWM``).

Besides the rewrites Redis starts itself (``auto-aof-rewrite-percentage``, 100 % growth), it
asks for one (``BGREWRITEAOF``) when the stored blocks first reach each of ``--rewrite-at``'s
fractions, so that a rewrite forks while the table is large and workers still write. The figure
bounded is the peak of redis-server with its fork (RSS, summed) plus the sum of the workers'
peaks: each measured at its own worst moment, so the bound holds whatever their timing.

Run::

    .venv/bin/python scripts/bench/bench_redis_memory.py   # maxi-yatzy-saved: ~1 h
    .venv/bin/python scripts/bench/bench_redis_memory.py --rules yatzy --json
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _bench import ROOT, Target, add_targets, peak_rss_mb, verdict
from bench_lean import BATCH, Slice, children_env, processes, start_pool, stored_count
from support.redis_server import RedisServer, ensure_redis_server

from memo_solver.jobs.queue import Job
from memo_solver.stores import redis_keys

GIB = 2**30
TARGET_GIB = 20.0


def status_kib(pid: int, field: str) -> int:
    """A ``/proc/<pid>/status`` field in KiB (0 once the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def pss_kib(pid: int) -> int:
    """The proportional set size of a process in KiB: its private pages, and its share of
    those it shares (a fork's pages split between parent and child)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def children(pid: int) -> list[int]:
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        return []
    return [int(child) for child in found]


@dataclass
class Peaks:
    """The worst moment of each figure over a run, in bytes, and what was happening."""

    redis_rss: int = 0
    redis_with_fork_rss: int = 0
    redis_with_fork_pss: int = 0
    used_memory: int = 0
    workers_rss_now: int = 0
    rewrites_seen: int = 0
    rewrites_asked: int = 0

    def sample(self, redis_pid: int, info: dict[str, Any], workers: list[int]) -> None:
        forks = children(redis_pid)
        rss = status_kib(redis_pid, "VmRSS") * 1024
        self.redis_rss = max(self.redis_rss, rss)
        fork_rss = sum(status_kib(child, "VmRSS") for child in forks) * 1024
        self.redis_with_fork_rss = max(self.redis_with_fork_rss, rss + fork_rss)
        pss = sum(pss_kib(pid) for pid in [redis_pid, *forks]) * 1024
        self.redis_with_fork_pss = max(self.redis_with_fork_pss, pss)
        self.used_memory = max(self.used_memory, int(info["used_memory"]))
        now = sum(status_kib(pid, "VmRSS") for pid in workers) * 1024
        self.workers_rss_now = max(self.workers_rss_now, now)


def run(
    rules: str, workers: int, poll_s: float, rewrite_at: list[float], say: Any
) -> dict[str, Any]:
    part = Slice(rules, 0)
    names = [f"memory-{i + 1}" for i in range(workers)]
    job_id = Job.precompute(part.rules.name).id
    peaks = Peaks()
    with tempfile.TemporaryDirectory(prefix="bench-redis-memory-") as tmp:
        folder = Path(tmp)
        binary = ensure_redis_server()
        with (
            RedisServer(folder / "redis", binary=binary) as server,
            processes() as started,
            ExitStack() as stack,
        ):
            client = server.client()
            assert server.pid is not None
            pids = list(
                start_pool(client, server.url, ROOT, folder, names, stack, started).values()
            )
            began = time.perf_counter()
            subprocess.run(
                [
                    *(sys.executable, "-m", "memo_solver", "--redis", server.url),
                    *("precompute", "--rules", part.rules.name),
                ],
                env=children_env(ROOT),
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
            pending = sorted(rewrite_at)
            rewriting = False
            last_say = began
            while True:
                info = client.info()
                peaks.sample(server.pid, info, pids)
                if info["aof_rewrite_in_progress"] and not rewriting:
                    peaks.rewrites_seen += 1
                rewriting = bool(info["aof_rewrite_in_progress"])
                stored = stored_count(client, part.namespace)
                if pending and stored >= pending[0] * part.blocks and not rewriting:
                    pending.pop(0)
                    client.bgrewriteaof()
                    peaks.rewrites_asked += 1
                record = client.hgetall(redis_keys.job(job_id))
                if record.get(b"status") == b"failed":
                    raise SystemExit(f"the job failed: {record}")
                if record.get(b"status") == b"done" and not rewriting:
                    (group,) = client.xinfo_groups(redis_keys.JOB_STREAM)
                    if group["lag"] == 0 and group["pending"] == 0:
                        break
                if time.perf_counter() - last_say > 60:
                    last_say = time.perf_counter()
                    say(
                        f"  {last_say - began:6.0f} s: {stored:,} of {part.blocks:,} blocks; "
                        f"redis-server {peaks.redis_rss / GIB:.2f} GiB (with a fork "
                        f"{peaks.redis_with_fork_rss / GIB:.2f}), workers now "
                        f"{peaks.workers_rss_now / GIB:.2f} GiB; rewrites {peaks.rewrites_seen}"
                    )
                time.sleep(poll_s)
            wall = time.perf_counter() - began
            worker_peaks = [status_kib(pid, "VmHWM") * 1024 for pid in pids]
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
            aof_bytes = sum(p.stat().st_size for p in (folder / "redis").rglob("appendonly*.*"))
            value = record.get(b"value")
            info = client.info()
        computed = sum(
            sum(int(c) for _, c, _ in BATCH.findall((folder / f"{name}.log").read_bytes()))
            for name in names
        )
    total = peaks.redis_with_fork_rss + sum(worker_peaks)
    return {
        "rules": part.rules.name,
        "blocks": part.blocks,
        "workers": workers,
        "wall_s": wall,
        "value": float(value) if value is not None else None,
        "computed": computed,
        "peaks_bytes": asdict(peaks) | {"workers": worker_peaks},
        "aof_bytes": aof_bytes,
        "used_memory_end": int(info["used_memory"]),
        "total_gib": total / GIB,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rules", default="maxi-yatzy-saved", help="the built-in (maxi-yatzy-saved)"
    )
    parser.add_argument("--workers", type=int, default=2, help="workers (2)")
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between samples (0.5)")
    parser.add_argument(
        "--rewrite-at",
        default="0.5,0.9",
        help="fractions of the blocks stored at which to ask for an AOF rewrite (0.5,0.9)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(parser, gib=TARGET_GIB)
    args = parser.parse_args()
    fractions = [float(f) for f in args.rewrite_at.split(",") if f]

    def say(text: str) -> None:
        if not args.json:
            print(text, flush=True)

    say(
        f"{args.rules} through {args.workers} workers on one redis-server; host "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load "
        f"{os.getloadavg()[0]:.1f}"
    )
    result = run(args.rules, args.workers, args.poll, fractions, say)
    result["host"] = {"peak_rss_mb": peak_rss_mb(), "load_end": os.getloadavg()[0]}
    peaks = result["peaks_bytes"]
    say(
        f"whole solve in {result['wall_s']:.0f} s: {result['computed']:,} blocks computed of "
        f"{result['blocks']:,}, start value {result['value']}\n"
        f"redis-server: peak RSS {peaks['redis_rss'] / GIB:.2f} GiB, with a rewrite's fork "
        f"{peaks['redis_with_fork_rss'] / GIB:.2f} GiB (PSS "
        f"{peaks['redis_with_fork_pss'] / GIB:.2f} GiB), used_memory peak "
        f"{peaks['used_memory'] / GIB:.2f} GiB; rewrites "
        f"{peaks['rewrites_seen']} ({peaks['rewrites_asked']} asked); AOF on disk "
        f"{result['aof_bytes'] / GIB:.2f} GiB\n"
        f"workers' peaks: "
        + ", ".join(f"{w / GIB:.2f} GiB" for w in peaks["workers"])
        + f"; redis-server with its fork + the workers' peaks: {result['total_gib']:.2f} GiB"
    )
    targets = [
        Target(
            "redis-server with its fork + workers' peaks, GiB", result["total_gib"], args.target_gib
        ),
        Target.holds("no block computed twice", result["computed"] == result["blocks"]),
    ]
    if args.json:
        return verdict(targets, result)
    return verdict(targets)


if __name__ == "__main__":
    sys.exit(main())
