"""Warm ``POST /v1/advice`` under ``wrk``: this tree against a base tree, 1 and 2 processes.

What it does:

1. Finds ``wrk`` (Debian's package; installed with ``apt-get install -y wrk`` when missing
   and run as root, else it says how) and precomputes ``yahtzee`` into a temporary SQLite
   store (or uses ``--store``), so every answer is warm in the store.
2. Writes the request bodies before any timing: ``--bodies`` random valid states (seeded,
   as ``scripts/bench/load_api.py`` makes them), and one per filled mask for the warm-up, and a
   ``wrk`` Lua script that sends them in turn.
3. For each run, each process count (``--workers``, default 1 and 2) and each tree (this
   one, then ``--base``: a worktree of the commit to compare with, with its own ``.venv``),
   starts ``<tree>/.venv/bin/memo-solver --store S serve --workers N`` on a free port,
   waits for ``/readyz``, warms every process's block cache (``--warmup`` seconds of
   every-mask requests over 64 connections, so each process gets some), then runs
   ``wrk -t1 -c<connections> -d<duration> --latency``, and reads the server's CPU time
   (user + system of the serve process and every process under it, from ``/proc``) before
   and after. A tree whose ``serve`` has no ``--workers`` runs 1 process only.
4. Prints per tree and process count the medians over the runs of requests/s, p50 and
   p99 (wrk's), and server CPU per request (ms), with the ratio of this tree's CPU per
   request to the base's (``--json``: one JSON object). The trees alternate within each
   run, so drift in what the neighbours take falls on both alike.

On 2 shared cores with ``wrk`` beside the server, 2 processes cannot show scaling (the
load generator and the neighbours take the other core): read their CPU per request, not
their requests/s.

Target (with ``--base``): this tree's server CPU per request at most 0.6 of the base's.

Run::

    .venv/bin/python scripts/bench/bench_serve.py --base /work/wt-serve-base
    .venv/bin/python scripts/bench/bench_serve.py --base ../base --runs 3 --duration 10 --json
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from _bench import ROOT, Target, add_targets, child_env, precompute_cli, verdict
from load_api import every_mask_bodies, free_port, make_bodies

LUA = """
local bodies = {}
for line in io.lines(os.getenv("BODIES")) do bodies[#bodies + 1] = line end
local i = 0
function request()
  i = i % #bodies + 1
  return wrk.format("POST", "/v1/advice", {["Content-Type"] = "application/json"}, bodies[i])
end
"""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def find_wrk() -> str:
    found = shutil.which("wrk")
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True)
        found = shutil.which("wrk")
    if found is None:
        raise SystemExit("wrk not found: install it ('sudo apt-get install wrk' on Debian)")
    return found


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and every process under it, so far."""
    total = 0.0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        todo += [int(child) for child in children]
    return total


def wait_ready(url: str, process: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"serve exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"serve was not ready after {timeout_s:.0f} s")


def wrk(
    command: str, url: str, bodies: Path, script: Path, connections: int, seconds: float
) -> dict[str, float]:
    """One wrk run: requests, requests/s, p50 and p99 in ms."""
    out = subprocess.run(
        [
            command,
            "-t1",
            f"-c{connections}",
            f"-d{round(seconds)}s",
            "--latency",
            "-s",
            str(script),
            url,
        ],
        env={**os.environ, "BODIES": str(bodies)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}

    def latency(percent: str) -> float:
        value, unit = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\b", out, re.M).groups()  # type: ignore[union-attr]
        return float(value) * scale[unit]

    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    if "Non-2xx" in out or "Socket errors" in out:
        raise SystemExit(f"wrk saw errors:\n{out}")
    return {
        "requests": requests,
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "p50_ms": latency("50"),
        "p99_ms": latency("99"),
    }


def has_workers(tree: Path) -> bool:
    helped = subprocess.run(
        [str(tree / ".venv/bin/memo-solver"), "serve", "--help"], capture_output=True, text=True
    )
    return "--workers" in helped.stdout


def one_run(
    tree: Path, workers: int, store: Path, files: dict[str, Path], args: argparse.Namespace
) -> dict[str, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(tree / ".venv/bin/memo-solver"), "--store", str(store), "serve"]
    argv += ["--port", str(port)] + (["--workers", str(workers)] if workers > 1 else [])
    process = subprocess.Popen(
        argv, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_ready(url, process)
        wrk(args.wrk, url, files["warm"], files["lua"], 64, args.warmup)
        before = tree_cpu_s(process.pid)
        figures = wrk(args.wrk, url, files["bodies"], files["lua"], args.connections, args.duration)
        cpu = tree_cpu_s(process.pid) - before
    finally:
        process.terminate()
        process.wait(timeout=60)
    return {**figures, "cpu_ms_per_request": 1e3 * cpu / figures["requests"]}


CPU_RATIO_TARGET = 0.6
"""Server CPU per request, this tree's over the base's (issue #18, against ``1e45a7b``)."""


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", type=Path, help="a worktree of the commit to compare with")
    parser.add_argument("--store", type=Path, help="an SQLite store with yahtzee precomputed")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per wrk run")
    parser.add_argument("--warmup", type=float, default=8.0, help="seconds of warm-up")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--bodies", type=int, default=4000, help="distinct request bodies")
    parser.add_argument("--json", action="store_true")
    add_targets(parser, cpu_ratio=CPU_RATIO_TARGET)
    args = parser.parse_args()
    args.wrk = find_wrk()
    trees = {"this": ROOT} | ({"base": args.base.resolve()} if args.base else {})
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder:
        work = Path(folder)
        store = args.store or work / "yahtzee.sqlite3"
        if args.store is None:
            precompute_cli(str(ROOT / ".venv/bin/memo-solver"), store, "yahtzee")
        files = {"bodies": work / "bodies.txt", "warm": work / "warm.txt", "lua": work / "a.lua"}
        files["bodies"].write_bytes(b"\n".join(make_bodies(1, args.bodies)) + b"\n")
        files["warm"].write_bytes(b"\n".join(every_mask_bodies(2)) + b"\n")
        files["lua"].write_text(LUA)
        multi = {name: has_workers(tree) for name, tree in trees.items()}
        results: dict[str, dict[int, list[dict[str, float]]]] = {name: {} for name in trees}
        for run in range(args.runs):
            for workers in args.workers:
                for name, tree in trees.items():
                    if workers > 1 and not multi[name]:
                        continue
                    figures = one_run(tree, workers, store, files, args)
                    results[name].setdefault(workers, []).append(figures)
                    print(f"run {run + 1}: {name} x{workers}: {figures}", file=sys.stderr)
    report = summarize(results, trees, args)
    targets = [
        Target(
            f"CPU/request this/base, x{row['workers']}", row["cpu_vs_base"], args.target_cpu_ratio
        )
        for row in report["rows"]
        if "cpu_vs_base" in row
    ]
    if args.json:
        return verdict(targets, report)
    print(
        f"warm POST /v1/advice, wrk -t1 -c{args.connections}, {args.duration:.0f} s, "
        f"medians of {args.runs} runs; load average {report['load_average']}"
    )
    print(f"{'tree':<6} {'procs':>5} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'CPU ms/req':>10}")
    for row in report["rows"]:
        ratio = f"  ({row['cpu_vs_base']:.2f} of base)" if "cpu_vs_base" in row else ""
        print(
            f"{row['tree']:<6} {row['workers']:>5} {row['rps']:>8.0f} {row['p50_ms']:>7.2f} "
            f"{row['p99_ms']:>7.2f} {row['cpu_ms_per_request']:>10.3f}{ratio}"
        )
    return verdict(targets)


def summarize(
    results: dict[str, dict[int, list[dict[str, float]]]],
    trees: dict[str, Path],
    args: argparse.Namespace,
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for name in trees:
        for workers, runs in sorted(results[name].items()):
            row: dict[str, Any] = {"tree": name, "path": str(trees[name]), "workers": workers}
            for figure in ("rps", "p50_ms", "p99_ms", "cpu_ms_per_request"):
                row[figure] = statistics.median(r[figure] for r in runs)
            row["runs"] = runs
            rows.append(row)
    base = {r["workers"]: r["cpu_ms_per_request"] for r in rows if r["tree"] == "base"}
    for row in rows:
        if row["tree"] == "this" and row["workers"] in base:
            row["cpu_vs_base"] = row["cpu_ms_per_request"] / base[row["workers"]]
    return {
        "load_average": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
        "connections": args.connections,
        "duration_s": args.duration,
        "runs": args.runs,
        "rows": rows,
    }


if __name__ == "__main__":
    raise SystemExit(main())
