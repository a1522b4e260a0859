"""What sharing the memo through Redis costs, and how two workers split a precompute.

(a) CPU of a cold, full ``yahtzee`` precompute (8,192 blocks), two ways, side by side:

- embedded: ``memo-solver --store <fresh temp file> precompute --rules yahtzee --json``,
  one process; its CPU (user + sys) from ``os.wait4``, start-up included;
- Redis: ONE ``python -m worker`` process on a fresh ``redis-server`` (AOF, fsync every
  second, as in docker-compose.yml); the job is queued with ``memo-solver --redis URL
  precompute --rules yahtzee`` and this script polls the job's record until it is done.
  The CPU counted is the worker's plus redis-server's, read from ``/proc/<pid>/stat``
  (utime + stime, in clock ticks of ``os.sysconf('SC_CLK_TCK')``) just before the job is
  queued and just after it is done: the worker's own start-up is not counted (a worker is
  started once and serves many jobs); the queueing CLI is not counted either.

The two alternate for ``--rounds`` rounds (the order flips every round, so drift on a
shared machine hits both) and the script reports medians and the ratio Redis / embedded;
target: <= 1.15. It also reports the ratio with the embedded start-up taken out (the CPU
of an embedded precompute of ``yahtzee-lower``, 128 one-value blocks: start-up and next to
no solving), the fairer figure for the cost of the shared store itself.

(b) TWO workers on a fresh Redis serve the same cold precompute; each worker's
``blocks_computed`` is read from ``memo-solver --redis URL status --json`` once both have
sent a heartbeat after the job was done. Their sum must be 8,192 (no block computed
twice); the split of the work is reported (target: the larger share <= 60 %).

Every run checks the start value against the pin (254.5877287345, to 1e-9).

Run (about two minutes with 3 rounds; needs redis-server, see tests/support/redis_server.py)::

    .venv/bin/python scripts/bench/bench_workers.py            # words
    .venv/bin/python scripts/bench/bench_workers.py --json     # one JSON object
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
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import redis
from _bench import Target, add_targets, bare_env, cpu_seconds, verdict
from support.redis_server import RedisServer, ensure_redis_server
from support.worker_support import layout_of, stored_blocks, wait_for

from memo_solver.jobs.queue import Job
from memo_solver.stores import redis_keys

RULES = "yahtzee"
BLOCKS = 8192
PINNED_START = 254.5877287345
TOLERANCE = 1e-9
CPU_RATIO_TARGET = 1.15
SPLIT_TARGET = 0.60
STARTUP_RULES = "yahtzee-lower"
"""128 blocks of one value each: its precompute is all start-up and almost no solving."""
JOB_ID = Job.precompute(RULES).id


def use_rules(name: str) -> None:
    """Measure another built-in (``--rules maxi-yatzy``: the workload the shared memo is
    for): its block count, pinned value and job id replace yahtzee's."""
    from memo_solver.games.yahtzee.rules.catalog import get_rule_set

    global RULES, BLOCKS, PINNED_START, JOB_ID
    rules = get_rule_set(name)
    RULES, BLOCKS, JOB_ID = rules.name, rules.block_count, Job.precompute(rules.name).id
    PINNED_START = rules.start_value if rules.start_value is not None else PINNED_START


@dataclass(frozen=True)
class EmbeddedRun:
    cpu_s: float
    wall_s: float
    value: float


@dataclass(frozen=True)
class RedisRun:
    worker_cpu_s: float
    redis_cpu_s: float
    wall_s: float
    value: float

    @property
    def cpu_s(self) -> float:
        return self.worker_cpu_s + self.redis_cpu_s


@dataclass(frozen=True)
class PoolRun:
    """A cold precompute served by a pool of workers on a fresh Redis."""

    computed: dict[str, int]
    """Blocks each worker computed (its ``status --json`` row, after a beat past the job)."""
    worker_cpu_s: dict[str, float]
    """Each worker's CPU from just before the job was queued to just after it was done."""
    redis_cpu_s: float
    wall_s: float
    """Queued to done as this script saw it, the queueing CLI's start-up included."""
    job_s: float
    """The job's own record: ``queued_at`` to ``finished_at``."""
    value: float
    redis_used_memory_mb: float
    redis_blocks_hash_mb: float

    @property
    def total(self) -> int:
        return sum(self.computed.values())

    @property
    def larger_share(self) -> float:
        return max(self.computed.values()) / max(1, self.total)

    @property
    def cpu_s(self) -> float:
        return sum(self.worker_cpu_s.values()) + self.redis_cpu_s


def check_value(value: float, what: str) -> float:
    if abs(value - PINNED_START) > TOLERANCE:
        raise SystemExit(f"{what}: start value {value!r}, pinned {PINNED_START}")
    return value


def cli(*args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "memo_solver", *args, "--json"],
        capture_output=True,
        text=True,
        env=bare_env(),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"memo-solver {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return json.loads(done.stdout)


def run_embedded(workdir: Path, round_no: int, rules: str | None = None) -> EmbeddedRun:
    rules = rules or RULES  # the measured one, as ``use_rules`` set it
    store = workdir / f"embedded-{round_no}.sqlite3"
    argv = [sys.executable, "-m", "memo_solver", "--store", str(store)]
    argv += ["precompute", "--rules", rules, "--json"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(argv, env=bare_env(), stdout=out, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        errors.seek(0)
        if process.returncode != 0:
            message = errors.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"embedded precompute exited {process.returncode}:\n{message}")
        payload = json.loads(out.read())
    for leftover in workdir.glob(store.name + "*"):
        leftover.unlink()
    if payload["blocks_computed"] != payload["blocks_total"]:
        raise SystemExit(f"not a cold solve: {payload}")
    value = float(payload["value"])
    if rules == RULES:
        check_value(value, "embedded")
    return EmbeddedRun(cpu_s=usage.ru_utime + usage.ru_stime, wall_s=wall, value=value)


def start_worker(stack: ExitStack, url: str, name: str, logs: Path, heartbeat_s: float) -> int:
    log = (logs / f"{name}.log").open("wb")
    stack.callback(log.close)
    argv = [sys.executable, "-m", "worker", "--redis", url, "--id", name]
    process = subprocess.Popen(
        [*argv, "--heartbeat", str(heartbeat_s)],
        env=bare_env(),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def stop() -> None:
        if process.poll() is None:
            process.kill()
        process.wait()

    stack.callback(stop)
    return process.pid


def run_job(
    client: redis.Redis, url: str, rules: str | None = None
) -> tuple[float, dict[bytes, bytes]]:
    """Queue the precompute of ``rules`` (default: the measured one), poll its record until
    done: (wall seconds, the record)."""
    rules = rules or RULES
    job_id = Job.precompute(rules).id
    started = time.perf_counter()
    cli("--redis", url, "precompute", "--rules", rules)

    def finished() -> dict[bytes, bytes] | None:
        record: dict[bytes, bytes] = client.hgetall(redis_keys.job(job_id))  # type: ignore[assignment]
        if record.get(b"status") == b"failed":
            raise SystemExit(f"the job failed: {record}")
        return record if record.get(b"status") == b"done" else None

    record = wait_for("the precompute job", finished, 7200, every=0.05)
    return time.perf_counter() - started, record


def run_redis(binary: str, workdir: Path, round_no: int) -> RedisRun:
    folder = workdir / f"redis-{round_no}"
    with RedisServer(folder, binary=binary) as server, ExitStack() as stack:  # workers go first
        url = server.url
        worker_pid = start_worker(stack, url, "bench-1", folder, heartbeat_s=2.0)
        client = stack.enter_context(server.client())
        wait_for("the worker's heartbeat", lambda: client.exists(redis_keys.worker("bench-1")), 60)
        redis_pid = server.pid
        assert redis_pid is not None
        time.sleep(0.5)  # let the worker's start-up settle
        worker_before, redis_before = cpu_seconds(worker_pid), cpu_seconds(redis_pid)
        wall, record = run_job(client, url)
        worker_after, redis_after = cpu_seconds(worker_pid), cpu_seconds(redis_pid)
        ns = _namespace()
        blocks = stored_blocks(client, ns)
        if blocks != BLOCKS:
            raise SystemExit(f"{blocks} blocks stored after the job, not {BLOCKS}")
    return RedisRun(
        worker_cpu_s=worker_after - worker_before,
        redis_cpu_s=redis_after - redis_before,
        wall_s=wall,
        value=check_value(float(record[b"value"]), "redis"),
    )


def run_pool(
    binary: str,
    folder: Path,
    names: list[str],
    heartbeat_s: float = 0.5,
    warm_up: str | None = None,
) -> PoolRun:
    """A cold precompute by the workers ``names`` on a fresh redis-server (AOF as in
    docker-compose.yml), queued once every worker has beaten (and, with ``warm_up``, once
    the precompute of that rule set and every job it fanned out are done, untimed: a
    worker's first job loads the compiled kernel); the value checked against the pin. The
    CPU counted runs from just before the job is queued to just after it is done, so the
    workers' start-up is left out."""
    with RedisServer(folder, binary=binary) as server, ExitStack() as stack:  # workers go first
        url = server.url
        pids = {name: start_worker(stack, url, name, folder, heartbeat_s) for name in names}
        client = stack.enter_context(server.client())
        for name in names:
            wait_for(f"{name}'s heartbeat", partial(client.exists, redis_keys.worker(name)), 120)
        computed_before = dict.fromkeys(names, 0)
        if warm_up is not None:
            run_job(client, url, warm_up)
            wait_for("the warm-up's jobs", partial(_all_jobs_done, client), 60)
            computed_before = _counters_after_a_beat(url, names, heartbeat_s)
        assert server.pid is not None
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        redis_before = cpu_seconds(server.pid)
        wall, record = run_job(client, url)
        cpu = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
        redis_cpu = cpu_seconds(server.pid) - redis_before
        computed = _counters_after_a_beat(url, names, heartbeat_s)
        used = int(client.info("memory")["used_memory"])
        blocks_bytes = sum(
            int(client.memory_usage(group, samples=0) or 0)
            for group in layout_of(client, _namespace()).block_groups()
        )
    return PoolRun(
        computed={name: computed[name] - computed_before[name] for name in names},
        worker_cpu_s=cpu,
        redis_cpu_s=redis_cpu,
        wall_s=wall,
        job_s=float(record[b"finished_at"]) - float(record[b"queued_at"]),
        value=check_value(float(record[b"value"]), f"{len(names)} workers"),
        redis_used_memory_mb=used / 1e6,
        redis_blocks_hash_mb=blocks_bytes / 1e6,
    )


def _all_jobs_done(client: redis.Redis) -> bool:
    """Every job on the stream read and acknowledged (a precompute's fanned-out block jobs
    may outlast it)."""
    (group,) = client.xinfo_groups(redis_keys.JOB_STREAM)
    return bool(group["lag"] == 0 and group["pending"] == 0)


def _counters_after_a_beat(url: str, names: list[str], heartbeat_s: float) -> dict[str, int]:
    """Each worker's ``blocks_computed``, once it has sent a heartbeat after this call."""
    since = time.time()

    def counters() -> dict[str, int] | None:
        rows = {w["id"]: w for w in cli("--redis", url, "status")["workers"]}
        if all(n in rows and float(rows[n]["beat_at"]) > since for n in names):
            return {n: int(rows[n]["blocks_computed"]) for n in names}
        return None

    return wait_for("a heartbeat after the job", counters, 30, every=heartbeat_s)


def _namespace() -> str:
    from memo_solver.core.engine import namespace
    from memo_solver.games.yahtzee.rules.catalog import get_rule_set
    from memo_solver.games.yahtzee.solve.game import YahtzeeGame

    return namespace(YahtzeeGame(get_rule_set(RULES)))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each (default 3)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--rules", default=RULES, help="the built-in to precompute (default: yahtzee)"
    )
    add_targets(parser, cpu_ratio=CPU_RATIO_TARGET, split=SPLIT_TARGET)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    use_rules(args.rules)
    binary = ensure_redis_server()

    def say(text: str) -> None:
        if not args.json:
            print(text, flush=True)

    embedded: list[EmbeddedRun] = []
    shared: list[RedisRun] = []
    splits: list[PoolRun] = []
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        workdir = Path(tmp)
        say(f"(a) cold {RULES} precompute, CPU: embedded vs one worker + redis-server")
        for round_no in range(args.rounds):
            steps = ("embedded", "redis") if round_no % 2 == 0 else ("redis", "embedded")
            for step in steps:
                if step == "embedded":
                    run = run_embedded(workdir, round_no)
                    embedded.append(run)
                    say(
                        f"  round {round_no + 1} embedded  cpu {run.cpu_s:6.2f} s  "
                        f"wall {run.wall_s:6.2f} s"
                    )
                else:
                    shared_run = run_redis(binary, workdir, round_no)
                    shared.append(shared_run)
                    say(
                        f"  round {round_no + 1} redis     cpu {shared_run.cpu_s:6.2f} s "
                        f"(worker {shared_run.worker_cpu_s:.2f} + redis-server "
                        f"{shared_run.redis_cpu_s:.2f})  wall {shared_run.wall_s:6.2f} s"
                    )
        say(f"(b) cold {RULES} precompute, two workers")
        for round_no in range(args.rounds):
            split = run_pool(binary, workdir / f"split-{round_no}", ["split-1", "split-2"])
            splits.append(split)
            shares = ", ".join(f"{n} {c}" for n, c in split.computed.items())
            say(
                f"  round {round_no + 1} {shares} (sum {split.total}, larger share "
                f"{split.larger_share:.1%})  wall {split.wall_s:6.2f} s"
            )

        # What the embedded figure spends on start-up (interpreter, imports, store), which
        # the worker's figure leaves out: the CPU of a cold precompute of 128 tiny blocks.
        startup = statistics.median(
            run_embedded(workdir, 100 + i, STARTUP_RULES).cpu_s for i in range(args.rounds)
        )

    embedded_cpu = statistics.median(r.cpu_s for r in embedded)
    redis_cpu = statistics.median(r.cpu_s for r in shared)
    ratio = redis_cpu / embedded_cpu
    ratio_solving = redis_cpu / (embedded_cpu - startup)
    larger = max(s.larger_share for s in splits)
    exact = all(s.total == BLOCKS for s in splits)
    summary = {
        "rules": RULES,
        "rounds": args.rounds,
        "embedded": {
            "cpu_s": embedded_cpu,
            "wall_s": statistics.median(r.wall_s for r in embedded),
        },
        "redis_one_worker": {
            "cpu_s": redis_cpu,
            "worker_cpu_s": statistics.median(r.worker_cpu_s for r in shared),
            "redis_server_cpu_s": statistics.median(r.redis_cpu_s for r in shared),
            "wall_s": statistics.median(r.wall_s for r in shared),
        },
        "embedded_startup_cpu_s": startup,
        "cpu_ratio": ratio,
        "cpu_ratio_without_startup": ratio_solving,
        "two_workers": {
            "splits": [s.computed for s in splits],
            "sums": [s.total for s in splits],
            "wall_s": statistics.median(s.wall_s for s in splits),
            "larger_share_max": larger,
            "no_duplicates": exact,
        },
        "runs": {
            "embedded": [asdict(r) for r in embedded],
            "redis_one_worker": [{**asdict(r), "cpu_s": r.cpu_s} for r in shared],
        },
    }
    targets = [
        Target("CPU one worker + redis-server / embedded", ratio, args.target_cpu_ratio),
        Target.holds("two workers: no block computed twice", exact),
        Target("two workers: larger share", larger, args.target_split),
    ]
    if args.json:
        return verdict(targets, summary)
    say(
        f"medians: embedded {embedded_cpu:.2f} CPU s; one worker + redis-server "
        f"{redis_cpu:.2f} CPU s (worker {summary['redis_one_worker']['worker_cpu_s']:.2f} "
        f"+ redis {summary['redis_one_worker']['redis_server_cpu_s']:.2f}); ratio "
        f"{ratio:.3f}"
    )
    say(
        f"  (the embedded figure includes {startup:.2f} CPU s of start-up, which the "
        f"worker's leaves out; without it the ratio is {ratio_solving:.3f})"
    )
    say(
        f"two workers: sums {[s.total for s in splits]} "
        f"({'no block computed twice' if exact else 'DUPLICATES'}); larger share at most "
        f"{larger:.1%}"
    )
    return verdict(targets)


if __name__ == "__main__":
    sys.exit(main())
