"""The HTTP API's batch and cold figures, end to end over loopback.

Batch: precompute ``yahtzee`` into a temporary SQLite store (or reuse ``--store``), start one
server, ``memo-solver --store <store> serve`` (one uvicorn process), load every block into
its process memo (untimed batches covering all 8,191 filled masks, as in a server that has
been up a while), then time ``--runs`` requests ``POST /v1/advice/batch`` of ``--batch``
(1,000) random warm states each (the states of ``load_api.py``, a new seed per run): from
writing the request to reading the whole response, with the server's CPU for each. Every
result must be an advice. Target: <= 0.5 s.

Cold: for each of ``--cold`` samples, a fresh server on a fresh, empty SQLite file; once it
is ready, one untimed ``POST /v1/advice`` for a late state of another rule set
(``yahtzee-upper``: it warms the code path and leaves the ``yahtzee`` memo empty), then the
timed ``POST /v1/advice`` of a random late ``yahtzee`` state with three open boxes, which the
server solves (8 blocks) and answers. Target: <= 0.2 s. The same state as the very first
request of a fresh server (no warm-up request at all) is reported for information.

Run::

    .venv/bin/python scripts/bench/bench_api.py               # --runs 5 --cold 10; --json
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _bench import (
    Target,
    add_targets,
    child_env,
    cpu_seconds,
    memo_solver_command,
    precompute_cli,
    verdict,
)
from load_api import free_port, random_body, wait_ready
from support.random_states import late_state

BATCH_TARGET_S = 0.5
COLD_TARGET_S = 0.2
MAX_BATCH = 1000


@contextmanager
def server(command: str, store: Path) -> Iterator[tuple[int, int]]:
    """A running ``memo-solver serve`` on ``store``: (port, pid)."""
    port = free_port()
    argv = [command, "--store", str(store), "serve", "--host", "127.0.0.1", "--port", str(port)]
    with open(store.with_suffix(".log"), "w+b") as log:
        process = subprocess.Popen(argv, env=child_env(), stdout=log, stderr=log)
        try:
            wait_ready(port, process, 60.0)
            yield port, process.pid
        except BaseException:
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace")[-3000:])
            raise
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(30)


def post(
    connection: http.client.HTTPConnection, path: str, body: bytes
) -> tuple[int, bytes, float]:
    """Status, body and seconds from sending the request to having read the whole answer."""
    started = time.perf_counter()
    connection.request("POST", path, body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    payload = response.read()
    return response.status, payload, time.perf_counter() - started


def late_body(rules_name: str, rng: random.Random, open_boxes: int) -> bytes:
    """A random valid state of ``rules_name`` with ``open_boxes`` boxes open, rolled."""
    from memo_solver.games.yahtzee.rules.catalog import get_rule_set
    from memo_solver.games.yahtzee.rules.state import state_to_json

    rules = get_rule_set(rules_name)
    state = state_to_json(late_state(rules, rng, open_boxes), rules)
    return json.dumps({"rules": rules_name, "state": state}).encode()


def batch_body(bodies: list[bytes]) -> bytes:
    states = [json.loads(b)["state"] for b in bodies]
    return json.dumps({"rules": "yahtzee", "states": states}, separators=(",", ":")).encode()


def bench_batch(command: str, store: Path, runs: int, size: int, seed: int) -> dict[str, Any]:
    from memo_solver.games.yahtzee.rules.catalog import get_rule_set

    masks = list(range(get_rule_set("yahtzee").all_filled))
    rng = random.Random(seed)
    rng.shuffle(masks)
    warm = [random_body(rng, m) for m in masks]
    rows: list[dict[str, Any]] = []
    with server(command, store) as (port, pid):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i in range(0, len(warm), MAX_BATCH):  # every block into the process memo
            status, _, _ = post(connection, "/v1/advice/batch", batch_body(warm[i : i + MAX_BATCH]))
            assert status == 200, status
        for run in range(runs):
            run_rng = random.Random(seed + 1 + run)
            body = batch_body([random_body(run_rng) for _ in range(size)])
            cpu = cpu_seconds(pid)
            status, payload, seconds = post(connection, "/v1/advice/batch", body)
            cpu = cpu_seconds(pid) - cpu
            results = json.loads(payload)["results"] if status == 200 else []
            answered = sum("advice" in r for r in results)
            rows.append(
                {"status": status, "answered": answered, "seconds": seconds, "server_cpu_s": cpu}
            )
        connection.close()
    times = [r["seconds"] for r in rows]
    return {
        "size": size,
        "runs": rows,
        "median_s": statistics.median(times),
        "max_s": max(times),
        "median_server_cpu_s": statistics.median(r["server_cpu_s"] for r in rows),
        "all_answered": all(r["status"] == 200 and r["answered"] == size for r in rows),
    }


def bench_cold(command: str, tmp: Path, samples: int, seed: int, warm_path: bool) -> dict[str, Any]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(samples):
        body = late_body("yahtzee", rng, 3)
        other = late_body("yahtzee-upper", rng, 3)
        with server(command, tmp / f"cold-{warm_path}-{i}.sqlite3") as (port, pid):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            if warm_path:
                status, _, _ = post(connection, "/v1/advice", other)
                assert status == 200, status
            cpu = cpu_seconds(pid)
            status, payload, seconds = post(connection, "/v1/advice", body)
            cpu = cpu_seconds(pid) - cpu
            connection.close()
        ok = status == 200 and json.loads(payload).get("actions") is not None
        rows.append({"ok": ok, "seconds": seconds, "server_cpu_s": cpu})
    times = [r["seconds"] for r in rows]
    return {
        "samples": rows,
        "median_s": statistics.median(times),
        "max_s": max(times),
        "median_server_cpu_s": statistics.median(r["server_cpu_s"] for r in rows),
        "all_ok": all(r["ok"] for r in rows),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", type=Path, help="reuse this SQLite store for the batch")
    parser.add_argument("--runs", type=int, default=5, help="timed batches (default 5)")
    parser.add_argument("--batch", type=int, default=MAX_BATCH, help="states per batch (1000)")
    parser.add_argument("--cold", type=int, default=10, help="cold samples (default 10)")
    parser.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    parser.add_argument("--memo-solver", help="our console script (default: beside python)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(parser, batch_s=BATCH_TARGET_S, cold_s=COLD_TARGET_S)
    args = parser.parse_args()
    if min(args.runs, args.batch, args.cold) <= 0 or args.batch > MAX_BATCH:
        parser.error("--runs, --batch and --cold must be positive, --batch at most 1000")
    command = memo_solver_command(args.memo_solver)
    with tempfile.TemporaryDirectory(prefix="bench-api-") as name:
        tmp = Path(name)
        store = args.store or tmp / "warm.sqlite3"
        precompute_cli(command, store, "yahtzee")
        batch = bench_batch(command, store, args.runs, args.batch, args.seed)
        cold = bench_cold(command, tmp, args.cold, args.seed, warm_path=True)
        first = bench_cold(command, tmp, args.cold, args.seed, warm_path=False)
    targets = [
        Target.holds("every batched state answered", batch["all_answered"]),
        Target("batch median s", batch["median_s"], args.target_batch_s),
        Target.holds("every cold request answered", cold["all_ok"]),
        Target("cold median s", cold["median_s"], args.target_cold_s),
    ]
    result = {
        "batch": batch,
        "cold": cold,
        "cold_first_request": first,
        "load_average": os.getloadavg(),
    }
    if args.json:
        return verdict(targets, result)
    print(
        f"batch of {args.batch} warm states, {args.runs} runs: median "
        f"{batch['median_s']:.3f} s, max {batch['max_s']:.3f} s, server CPU median "
        f"{batch['median_server_cpu_s']:.3f} s; all answered: {batch['all_answered']}"
    )
    for name, row in (("cold, 3 open", cold), ("cold, 3 open, first request", first)):
        print(
            f"{name}, {args.cold} fresh servers: median {row['median_s'] * 1e3:.1f} ms, max "
            f"{row['max_s'] * 1e3:.1f} ms, server CPU median "
            f"{row['median_server_cpu_s'] * 1e3:.1f} ms; all 200: {row['all_ok']}"
        )
    print(f"load average {os.getloadavg()[0]:.2f}")
    return verdict(targets)


if __name__ == "__main__":
    raise SystemExit(main())
