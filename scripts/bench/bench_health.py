"""What health, coverage, ``status`` and ``worker --check`` cost on a Redis that holds
200,000 keys of someone else's: none of them may walk the keyspace.

A fresh ``redis-server`` (tests/support/redis_server.py: loopback, a free port, AOF as in
docker-compose.yml) is filled with ``--foreign`` keys (200,000 plain strings, written
through a pipeline), ``yahtzee-lower`` is solved into it (``precompute --here``), one
worker is started (``python -m worker --id bench-w1``) and ``memo-solver serve`` is
started as a child, the real CLI. Then, one after the other:

- ``GET /readyz``, ``GET /healthz``, ``GET /v1/rules/yahtzee/coverage`` and ``GET
  /v1/rules/yahtzee-lower/coverage``, ``--samples`` times each (after one request each
  not counted, which opens the connections): median and max latency, seen by a client on
  the same host (target: under 50 ms each, whatever else Redis holds);
- ``memo-solver --redis URL status`` and ``python -m worker --redis URL --check --id
  bench-w1``, ``--cli-samples`` times each: median wall time of the whole process,
  interpreter start-up and imports included (the part that grows with the keyspace is
  what changed).

``--source DIR`` runs the children from another checkout of the project (its folder goes
first on PYTHONPATH, with this interpreter and its packages): how main measured before.

Run (about a minute; needs redis-server, see tests/support/redis_server.py)::

    .venv/bin/python scripts/bench/bench_health.py
    .venv/bin/python scripts/bench/bench_health.py --json
    .venv/bin/python scripts/bench/bench_health.py --cluster    # on a 3-master Redis Cluster
    git worktree add /tmp/main-wt main
    .venv/bin/python scripts/bench/bench_health.py --source /tmp/main-wt --samples 3 --cli-samples 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import redis
from _bench import ROOT, Target, add_targets, verdict
from support.redis_cluster import RedisCluster
from support.redis_server import RedisServer, ensure_redis_server, free_port

TARGET_MS = 50.0
ROUTES = (
    "/readyz",
    "/healthz",
    "/v1/rules/yahtzee/coverage",
    "/v1/rules/yahtzee-lower/coverage",
)
WORKER_ID = "bench-w1"
PIPELINE_BATCH = 10_000
CHILD_CWD = "/"
"""Where the children run: ``python -m`` looks in its working folder first, which must
not be a checkout other than the one measured."""


def child_env(source: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_SOLVER_")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    return env


def fill(connect: Callable[[], Any], count: int) -> None:
    """``count`` keys that are not the project's, in pipelined batches (on a cluster,
    spread over every master by their slots)."""
    with connect() as client:
        for start in range(0, count, PIPELINE_BATCH):
            with client.pipeline(transaction=False) as pipe:
                for number in range(start, min(count, start + PIPELINE_BATCH)):
                    pipe.set(f"foreign:{number}", b"someone else's value")
                pipe.execute()
        if keys_in(client) < count:
            raise SystemExit(f"only {keys_in(client)} keys after filling {count}")


def keys_in(client: Any) -> int:
    """Every key the database holds: on a cluster, each master's DBSIZE summed (the cluster
    client asks one node)."""
    if isinstance(client, redis.RedisCluster):
        sizes = client.dbsize(target_nodes=redis.RedisCluster.PRIMARIES)
        return sum(sizes.values()) if isinstance(sizes, dict) else int(sizes)
    return int(client.dbsize())


def run(argv: list[str], env: dict[str, str], timeout_s: float = 900) -> tuple[int, float, str]:
    """Exit status, wall seconds and output of one child run to its end."""
    started = time.perf_counter()
    done = subprocess.run(
        argv, env=env, cwd=CHILD_CWD, capture_output=True, text=True, timeout=timeout_s,
        check=False,
    )  # fmt: skip
    return done.returncode, time.perf_counter() - started, done.stdout + done.stderr


def start(stack: ExitStack, argv: list[str], env: dict[str, str], log: Path) -> None:
    sink = stack.enter_context(log.open("wb"))
    process = subprocess.Popen(
        argv, env=env, cwd=CHILD_CWD, stdin=subprocess.DEVNULL, stdout=sink,
        stderr=subprocess.STDOUT,
    )  # fmt: skip

    def stop() -> None:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        process.wait()

    stack.callback(stop)


def wait_until(what: str, ready: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit(f"no {what} within {timeout_s:g} s")
        time.sleep(0.2)


def latencies_ms(client: httpx.Client, path: str, samples: int) -> list[float]:
    client.get(path)  # opens the connection (and the server's to Redis): not counted
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"GET {path}: {response.status_code} {response.text}")
    return times


def measure(args: argparse.Namespace) -> dict[str, Any]:
    source: Path | None = args.source
    env = child_env(source)
    python = [sys.executable, "-m"]
    with tempfile.TemporaryDirectory(prefix="bench-health-") as tmp, ExitStack() as stack:
        folder = Path(tmp)
        connect: Callable[[], Any]
        if args.cluster:
            cluster = RedisCluster(folder / "cluster", binary=ensure_redis_server())
            stack.enter_context(cluster)
            url, connect = cluster.url, cluster.client
        else:
            server = stack.enter_context(
                RedisServer(folder / "redis", binary=ensure_redis_server())
            )
            url, connect = server.url, server.client
        started = time.perf_counter()
        fill(connect, args.foreign)
        filled_s = time.perf_counter() - started
        code, _, out = run([*python, "memo_solver", "--redis", url, "precompute", "--rules",
                            "yahtzee-lower", "--here"], env)  # fmt: skip
        if code:
            raise SystemExit(f"precompute failed:\n{out}")
        check = [*python, "worker", "--redis", url, "--check", "--id", WORKER_ID]
        start(stack, [*python, "worker", "--redis", url, "--id", WORKER_ID], env,
              folder / "worker.log")  # fmt: skip
        wait_until("live worker", lambda: run(check, env)[0] == 0, 600)
        port = free_port()
        start(stack, [*python, "memo_solver", "--redis", url, "serve", "--port", str(port)],
              env, folder / "serve.log")  # fmt: skip
        client = stack.enter_context(httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600))

        def up() -> bool:
            try:
                return client.get("/healthz").status_code == 200
            except httpx.TransportError:
                return False

        wait_until("serve", up, 120)
        http = {path: latencies_ms(client, path, args.samples) for path in ROUTES}
        cli: dict[str, list[float]] = {"status": [], "worker --check": []}
        status = [*python, "memo_solver", "--redis", url, "status"]
        for _ in range(args.cli_samples):
            for name, argv in (("status", status), ("worker --check", check)):
                code, wall_s, out = run(argv, env)
                if code:
                    raise SystemExit(f"{name} exited {code}:\n{out}")
                cli[name].append(wall_s * 1000)
        with connect() as r:
            keys = keys_in(r)
    return {
        "source": str(source or ROOT),
        "redis": "3-master cluster" if args.cluster else "standalone",
        "keys_in_redis": keys,
        "fill_s": round(filled_s, 1),
        "samples": args.samples,
        "http_ms": {p: summary(times) for p, times in http.items()},
        "cli_ms": {name: summary(times) for name, times in cli.items()},
    }


def summary(times: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(times), 2), "max": round(max(times), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--foreign", type=int, default=200_000, help="keys not ours (200,000)")
    parser.add_argument("--samples", type=int, default=20, help="requests per route (20)")
    parser.add_argument("--cli-samples", type=int, default=3, help="runs per command (3)")
    parser.add_argument("--source", type=Path, help="run the children from this checkout")
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="on a 3-master Redis Cluster (tests/support/redis_cluster.py)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(parser, http_ms=TARGET_MS)
    args = parser.parse_args()
    if min(args.samples, args.cli_samples) < 1 or args.foreign < 0:
        parser.error("--samples and --cli-samples must be at least 1, --foreign at least 0")
    result = measure(args)
    slowest = max(row["max"] for row in result["http_ms"].values())
    targets = [Target("slowest HTTP request ms", slowest, args.target_http_ms)]
    if args.json:
        return verdict(targets, result)
    print(f"{result['source']}: {result['keys_in_redis']:,} keys in Redis ({result['redis']})")
    for path, row in result["http_ms"].items():
        print(f"  GET {path:<34} median {row['median']:9.2f} ms, max {row['max']:9.2f} ms")
    for name, row in result["cli_ms"].items():
        print(f"  {name:<38} median {row['median']:9.2f} ms, max {row['max']:9.2f} ms (process)")
    return verdict(targets)


if __name__ == "__main__":
    sys.exit(main())
