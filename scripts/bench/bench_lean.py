"""Lean workers (#31): what a whole solve through workers on one Redis costs beside one
process solving it against the same kind of Redis, layer by layer, with a model that says
where the difference goes.

Each run starts a fresh ``redis-server`` (AOF, fsync every second, as docker-compose.yml):

- ``here``: ONE process, ``memo-solver --redis URL precompute --rules R --here --json``;
- ``workers``: ``--workers`` (2) ``python -m worker -v`` processes, started and beating before
  the job is queued (``memo-solver --redis URL precompute --rules R``, not counted).

CPU is user + sys from ``/proc/<pid>/stat`` of every process and of redis-server, reported
apart. The one process is counted from the moment its solve first writes to Redis (the
layout record: its interpreter and imports are start-up, which a worker pays once for many
jobs); the workers from just before the job is queued. This script polls the stored block
count (HLEN of every group, pipelined) every ``--poll`` seconds and reads every CPU counter
at each poll, so each layer's figures are the counters where the count first reached the
layer's end (a layer that ends within one poll shares the row of the next).

A run ends when the job and every job it fanned out are done (``--down-to 0``, the whole
game; the workers' CPU is also read when the precompute job alone is done), or, for a slice
(``--down-to F``: the layers of 20 filled boxes down to F on a 20-box sheet), once every block
of the slice is stored: then every process is stopped (SIGSTOP) and the count read again.
Each worker's blocks come from its debug log (``batch of N: C computed``, written after the
commit): their sum against the stored count says whether a block was computed twice, their
split whether both were busy.

``--before DIR`` runs a second checkout (a worktree of the commit to compare with) side by
side: each of its processes is started with ``PYTHONPATH=DIR`` and ``cwd=DIR``; the trees
alternate within a round and the order flips every round. Run ``memo-solver compile`` in it
first (``PYTHONPATH=DIR .venv/bin/python -m memo_solver compile``), or its first process
compiles the kernel on the clock.

The model (:func:`model`, from unit costs this script measures in process just before each
run of this tree, each the median of three, so that both see about the same load; not from
the runs): s_f, the kernel's solve of one block of a layer of f boxes filled (a sample of
the layer's blocks on made-up successors); e, the rest of a block solved by the engine (its
encoding, claim and commit, the memo, the calls off the event loop: a walk of a cone by
:meth:`Engine.solve_layers` on a scratch redis-server, less its kernel calls timed in it);
on a scratch redis-server, c', a claim of a key found stored; d, a read and decode; l, a
lookup of a key not stored with its successors listed (client CPU; Redis's own beside
each). With them it plays the precompute out block by block as the engine runs it: one
worker walks the whole game a layer at a time, the others take the pieces it queues (the
blocks of one box filled), each walked by its cone's layers or, where half of it is stored,
by the blocks missing from it, found first; every chunk claims what its worker's memo
lacks, solving what is not stored (s_f + e), reading what is (c' + d); the workers step in
the order of the CPU each has spent. One process is n x (s_f + e) a layer. Its totals for
k = 1 and k = ``--workers`` are set beside the measured runs (per run, and the medians);
k = ``--project`` is its projection. The worker logs' claims and reads are printed beside
its counts.

One script of about 830 lines, on purpose: the two kinds of run, the polling that cuts them
into layers, the model's in-process measurements and its play, and the report all read one
record of the layers measured (:class:`Slice`) and of a run (:class:`Run`); split, each part
would import the others' records and the model would sit apart from the figures it is set
beside.

Run::

    .venv/bin/python scripts/bench/bench_lean.py --rules maxi-yatzy --before ../wt-lean-base
    .venv/bin/python scripts/bench/bench_lean.py --rules maxi-yatzy-saved --down-to 15 --json
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

import anyio
import numpy as np
import redis
from _bench import ROOT, Target, add_targets, bare_env, cpu_seconds, verdict
from support.redis_server import RedisServer, ensure_redis_server
from support.worker_support import layout_of, wait_for

from memo_solver.core.codec import decode_game_block, encode_game_block
from memo_solver.core.engine import LAYER_CHUNK, namespace, open_engine
from memo_solver.core.game import Game
from memo_solver.games.yahtzee.rules.catalog import get_rule_set
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, filled_of
from memo_solver.jobs.queue import Job
from memo_solver.stores import redis_keys
from memo_solver.stores.redis import RedisStore

CPU_RATIO_TARGET = 1.15
MODEL_TARGET = 0.15
BATCH = re.compile(rb"batch of (\d+): (\d+) computed, (\d+) found stored")
"""A worker's debug line per chunk or batch claimed: keys claimed, computed, read stored."""


@dataclass
class Sample:
    """One poll: seconds since the start, blocks stored, CPU of each process and Redis."""

    t: float
    stored: int
    cpu: dict[str, float]
    redis: float


@dataclass
class Run:
    tree: str
    mode: str
    cpu: dict[str, float]
    """Each process's CPU over the run (the solve's, as the module says)."""
    redis_cpu: float
    wall_s: float
    stored: int
    computed: dict[str, int] = field(default_factory=dict)
    claimed: dict[str, int] = field(default_factory=dict)
    """Keys each worker's claims asked for (its debug log; none kept for the one process)."""
    found: dict[str, int] = field(default_factory=dict)
    """Blocks each worker's claims found stored and read (its debug log)."""
    layers: list[dict[str, float]] = field(default_factory=list)
    at_job_done: dict[str, float] = field(default_factory=dict)
    value: float | None = None
    predicted: float | None = None
    """The model's CPU for the run (this tree's runs only), from costs measured before it."""

    @property
    def total(self) -> float:
        return sum(self.cpu.values())


class Slice:
    """The rule set, its layers (filled count, block count, keys) and the slice measured."""

    def __init__(self, rules_name: str, down_to: int) -> None:
        self.rules = get_rule_set(rules_name)
        self.game = YahtzeeGame(self.rules)
        self.namespace = namespace(self.game)
        self.layers = [list(layer) for layer in self.game.layers(self.game.root())]
        self.filled = [filled_of(layer[0]).bit_count() for layer in self.layers]
        self.down_to = down_to
        self.measured = [i for i, f in enumerate(self.filled) if f >= down_to]
        self.blocks = sum(len(self.layers[i]) for i in self.measured)
        self.whole = down_to <= min(self.filled)
        ends, total = [], 0
        for i in self.measured:
            total += len(self.layers[i])
            ends.append(total)
        self.ends = ends
        """Blocks stored once each measured layer is done (layers solve from the end of the
        game, one at a time, so the stored count crosses them in order)."""


def children_env(tree: Path) -> dict[str, str]:
    """The tree first on the path, before what the caller's path holds (a machine without the
    project installed carries its dependencies on ``PYTHONPATH``)."""
    env = bare_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    return env


def exited(pid: int) -> bool:
    """Whether the child has exited (a zombie: its CPU still readable, not yet waited for)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] == "Z"


def stored_count(client: redis.Redis, ns: str) -> int:
    if not client.exists(redis_keys.layout(ns)):
        return 0
    with client.pipeline(transaction=False) as pipe:
        for group in layout_of(client, ns).block_groups():
            pipe.hlen(group)
        return sum(int(n) for n in pipe.execute())


def per_layer(samples: Sequence[Sample], part: Slice) -> list[dict[str, float]]:
    """Each measured layer's CPU (every process, Redis) and wall: the counters at the first
    poll that found the layer done, less those at the layer before's."""
    rows, previous = [], samples[0]
    for i, end in zip(part.measured, part.ends, strict=True):
        reached = next((s for s in samples if s.stored >= end), samples[-1])
        rows.append(
            {
                "filled": part.filled[i],
                "blocks": len(part.layers[i]),
                "cpu_s": sum(reached.cpu.values()) - sum(previous.cpu.values()),
                "redis_s": reached.redis - previous.redis,
                "wall_s": reached.t - previous.t,
            }
        )
        previous = reached
    return rows


def follow(
    client: redis.Redis,
    part: Slice,
    pids: dict[str, int],
    redis_pid: int,
    done: Callable[[], bool],
    poll_s: float,
) -> list[Sample]:
    """Poll until ``done`` says so or the slice is stored; a sample at each poll."""
    started = time.perf_counter()
    samples: list[Sample] = []
    while True:
        stored = stored_count(client, part.namespace)
        cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
        samples.append(Sample(time.perf_counter() - started, stored, cpu, cpu_seconds(redis_pid)))
        if done() or (not part.whole and stored >= part.blocks):
            return samples
        time.sleep(poll_s)


@contextmanager
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
            process.wait()


def run_here(binary: str, tree: Path, part: Slice, folder: Path, poll_s: float) -> Run:
    with RedisServer(folder, binary=binary) as server, processes() as started:
        client = server.client()
        assert server.pid is not None
        argv = [sys.executable, "-m", "memo_solver", "--redis", server.url, "precompute"]
        out = (folder / "here.out").open("wb")
        process = subprocess.Popen(
            [*argv, "--rules", part.rules.name, "--here", "--json"],
            env=children_env(tree),
            cwd=tree,
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
        started.append(process)
        # The solve's start: its first write (the layout record, before the first claim).
        wait_for("the solve's start", lambda: client.exists(redis_keys.layout(part.namespace)), 600)
        begin = {"here": cpu_seconds(process.pid)}
        redis_begin = cpu_seconds(server.pid)
        samples = follow(
            client, part, {"here": process.pid}, server.pid, partial(exited, process.pid), poll_s
        )
        if not part.whole:
            os.kill(process.pid, signal.SIGSTOP)
        end = cpu_seconds(process.pid)  # an exited child's too, until it is waited for
        if part.whole and process.wait() != 0:
            raise SystemExit(f"precompute --here exited {process.returncode}")
        stored = stored_count(client, part.namespace)
        redis_end = cpu_seconds(server.pid)
        out.close()
        value = json.loads((folder / "here.out").read_text())["value"] if part.whole else None
    samples.insert(0, Sample(0.0, 0, begin, redis_begin))
    return Run(
        tree=str(tree),
        mode="here",
        cpu={"here": end - begin["here"]},
        redis_cpu=redis_end - redis_begin,
        wall_s=samples[-1].t,
        stored=stored,
        computed={"here": stored},
        layers=per_layer(samples, part),
        value=float(value) if value is not None else None,
    )


def start_pool(
    client: redis.Redis,
    url: str,
    tree: Path,
    folder: Path,
    names: Sequence[str],
    stack: ExitStack,
    started: list[subprocess.Popen[bytes]],
) -> dict[str, int]:
    """``python -m worker -v`` per name, logging to ``folder/<name>.log``, each waited for until
    it beats: their pids by name. A worker that exits first fails the run with its log."""
    pids = {}
    for name in names:
        log = stack.enter_context((folder / f"{name}.log").open("wb"))
        argv = [sys.executable, "-m", "worker", "--redis", url, "--id", name, "-v"]
        process = subprocess.Popen(
            argv, env=children_env(tree), cwd=tree, stdout=log, stderr=subprocess.STDOUT
        )
        started.append(process)
        pids[name] = process.pid
    for name, process in zip(names, started[-len(names) :], strict=True):

        def beating(name: str = name, process: subprocess.Popen[bytes] = process) -> bool:
            if process.poll() is not None:
                log = (folder / f"{name}.log").read_text(errors="replace")[-2000:]
                raise SystemExit(f"worker {name} exited ({process.returncode}): {log}")
            return bool(client.exists(redis_keys.worker(name)))

        wait_for(f"{name}'s heartbeat", beating, 300)
    return pids


def run_workers(
    binary: str, tree: Path, part: Slice, folder: Path, workers: int, poll_s: float
) -> Run:
    names = [f"lean-{i + 1}" for i in range(workers)]
    job_id = Job.precompute(part.rules.name).id
    with RedisServer(folder, binary=binary) as server, processes() as started, ExitStack() as stack:
        client = server.client()
        assert server.pid is not None
        pids = start_pool(client, server.url, tree, folder, names, stack, started)
        begin = {name: cpu_seconds(pid) for name, pid in pids.items()}
        redis_begin = cpu_seconds(server.pid)
        queued = subprocess.run(
            [
                sys.executable,
                *("-m", "memo_solver", "--redis", server.url, "precompute"),
                "--rules",
                part.rules.name,
            ],
            env=children_env(tree),
            cwd=tree,
            capture_output=True,
            check=False,
        )
        if queued.returncode != 0:
            raise SystemExit(f"queueing failed: {queued.stderr.decode()[-2000:]}")
        at_job_done: dict[str, float] = {}

        def job_done() -> bool:
            record = client.hgetall(redis_keys.job(job_id))
            if record.get(b"status") == b"failed":
                raise SystemExit(f"the job failed: {record}")
            if record.get(b"status") != b"done":
                return False
            if not at_job_done:
                at_job_done.update({n: cpu_seconds(p) - begin[n] for n, p in pids.items()})
            (group,) = client.xinfo_groups(redis_keys.JOB_STREAM)
            return bool(group["lag"] == 0 and group["pending"] == 0)

        samples = follow(client, part, pids, server.pid, job_done, poll_s)
        for pid in pids.values():
            os.kill(pid, signal.SIGSTOP)
        end = {name: cpu_seconds(pid) for name, pid in pids.items()}
        redis_end = cpu_seconds(server.pid)
        stored = stored_count(client, part.namespace)
        record = client.hgetall(redis_keys.job(job_id))
    batches = {name: BATCH.findall((folder / f"{name}.log").read_bytes()) for name in names}
    computed = {name: sum(int(c) for _, c, _ in found) for name, found in batches.items()}
    samples.insert(0, Sample(0.0, 0, begin, redis_begin))
    return Run(
        tree=str(tree),
        mode=f"{workers} workers",
        cpu={name: end[name] - begin[name] for name in names},
        redis_cpu=redis_end - redis_begin,
        wall_s=samples[-1].t,
        stored=stored,
        computed=computed,
        claimed={name: sum(int(n) for n, _, _ in found) for name, found in batches.items()},
        found={name: sum(int(f) for _, _, f in found) for name, found in batches.items()},
        layers=per_layer(samples, part),
        at_job_done=at_job_done,
        value=float(record[b"value"]) if part.whole and b"value" in record else None,
    )


# The model's unit costs, measured in this process.


def solve_costs(part: Slice) -> dict[int, float]:
    """CPU per block of each measured layer: the kernel's solve, on made-up successors, in a
    call of one chunk of the layer as a whole solve cuts it (a call's set-up is a small
    chunk's large share); the rest of a block's cost in a solve is ``e``
    (:func:`engine_costs`)."""
    rng = np.random.default_rng(31)
    costs: dict[int, float] = {}
    for i in part.measured:
        layer = part.layers[i]
        chunk = max(1, round(LAYER_CHUNK / part.game.block_cost(layer[0])))
        keys = [layer[j] for j in rng.choice(len(layer), min(chunk, len(layer)), replace=False)]
        successors = {
            s: rng.random(part.game.block_shape(s)) * 100
            for key in keys
            for s in part.game.successors(key)
        }
        part.game.solve_many(keys[:1], successors)  # loaded and warmed, untimed
        started = time.process_time()
        part.game.solve_many(keys, successors)
        costs[part.filled[i]] = (time.process_time() - started) / len(keys)
    return costs


def store_costs(binary: str, part: Slice, folder: Path) -> dict[str, float]:
    """Per block, client CPU and Redis CPU: a layer's arrange, claims and commit in chunks
    of :data:`LAYER_CHUNK` (``c``, ``c_r``), then its fetch and decode (``d``, ``d_r``),
    its claims again, all found stored (``c2``, ``c2_r``), on the widest measured layer (at
    most 20,000 blocks) with blocks of its real size; and a lookup of as many keys of the
    layer solved after it (a box fewer filled), none stored, with their successors listed
    (``l``, ``l_r``), as a walk finding the missing part of a cone makes them."""
    widest = max(part.measured, key=lambda i: len(part.layers[i]))
    keys = part.layers[widest][:20_000]
    absent = part.layers[widest + 1][:20_000] if widest + 1 < len(part.layers) else keys[:0]
    rng = np.random.default_rng(7)
    game = part.game
    # Made-up values as the game keeps them (one value for the hopeless levels of a
    # saved-rolls block), so that each decodes as a real block does.
    data = {
        key: encode_game_block(
            game,
            key,
            game.unpack(key, np.asarray(game.pack(key, rng.random(game.block_shape(key))), float)),
        )
        for key in keys
    }
    with RedisServer(folder, binary=binary) as server:
        assert server.pid is not None
        redis_pid = server.pid

        async def measure() -> dict[str, float]:
            async with RedisStore(server.url) as store:
                store.expect(part.namespace, part.game.values_below(part.game.root()) * 8)
                before, redis_before = time.process_time(), cpu_seconds(redis_pid)
                order = await store.arrange(part.namespace, keys, None)
                for start in range(0, len(order), LAYER_CHUNK):
                    chunk = order[start : start + LAYER_CHUNK]
                    await store.try_claim(part.namespace, chunk, "bench", 10.0)
                    await store.commit(part.namespace, {k: data[k] for k in chunk}, "bench")
                middle, redis_middle = time.process_time(), cpu_seconds(redis_pid)
                for start in range(0, len(order), LAYER_CHUNK):
                    chunk = order[start : start + LAYER_CHUNK]
                    for key, raw in (await store.get_many(part.namespace, chunk)).items():
                        decode_game_block(part.game, key, raw)
                after, redis_after = time.process_time(), cpu_seconds(redis_pid)
                for start in range(0, len(order), LAYER_CHUNK):
                    await store.try_claim(
                        part.namespace, order[start : start + LAYER_CHUNK], "b", 1
                    )
                again, redis_again = time.process_time(), cpu_seconds(redis_pid)
                for start in range(0, len(absent), LAYER_CHUNK):
                    chunk = absent[start : start + LAYER_CHUNK]
                    await store.get_many(part.namespace, chunk)
                    [game.successors(key) for key in chunk]
                looked, redis_looked = time.process_time(), cpu_seconds(redis_pid)
            n, m = len(keys), max(1, len(absent))
            return {
                "c": (middle - before) / n,
                "c_r": (redis_middle - redis_before) / n,
                "d": (after - middle) / n,
                "d_r": (redis_after - redis_middle) / n,
                "c2": (again - after) / n,
                "c2_r": (redis_again - redis_after) / n,
                "l": (looked - again) / m,
                "l_r": (redis_looked - redis_again) / m,
            }

        return anyio.run(measure)


ENGINE_SAMPLE_S = 2.0
"""About how much CPU the engine's own walk of a cone may take to measure ``e``."""


class Timed:
    """A game whose batch solver counts the CPU its calls take (each in its own thread)."""

    def __init__(self, game: YahtzeeGame) -> None:
        self.game = game
        self.kernel_s = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.game, name)

    def solve_many(self, keys: Sequence[str], successors: Any) -> Sequence[Any]:
        started = time.thread_time()
        try:
            return self.game.solve_many(keys, successors)
        finally:
            self.kernel_s += time.thread_time() - started


def engine_costs(
    binary: str, part: Slice, solve: dict[int, float], folder: Path
) -> dict[str, float]:
    """Per block solved, the engine's own CPU beside the kernel (``e``, Redis ``e_r``): the
    encoding, the memo, the calls off the event loop, the claims and commits, the chunks'
    bookkeeping, which a whole solve pays on top of the kernel (one ``maxi-yatzy`` process
    was 16 to 19 % above the kernel's and the store's costs). Measured in one walk of
    :meth:`Engine.solve_layers` on a scratch redis-server, less its kernel calls timed in
    it, after a walk of the game's last two blocks (what an engine pays once: its store's
    layout, its threads): the smallest cone, from the end of the game, that ``s_f`` says
    costs :data:`ENGINE_SAMPLE_S` of kernel."""
    game = part.game
    per_cost = statistics.median(
        solve[part.filled[i]] / game.block_cost(part.layers[i][0]) for i in part.measured
    )
    for layer in part.layers[1:]:
        key = layer[0]
        cone = game.layers(key)
        if per_cost * sum(len(keys) * game.block_cost(keys[0]) for keys in cone) >= ENGINE_SAMPLE_S:
            break
    timed = Timed(game)
    with RedisServer(folder, binary=binary) as server:
        redis_pid = server.pid
        assert redis_pid is not None

        async def walk() -> dict[str, float]:
            async with (
                RedisStore(server.url) as store,
                open_engine(cast(Game, timed), store) as engine,
            ):
                await engine.solve_layers(part.layers[1][0])
                cpu, kernel = time.process_time(), timed.kernel_s
                blocks, redis_s = engine.counters.computed, cpu_seconds(redis_pid)
                await engine.solve_layers(key)
                n = engine.counters.computed - blocks
                own = time.process_time() - cpu - (timed.kernel_s - kernel)
                return {"e": own / n, "e_r": (cpu_seconds(redis_pid) - redis_s) / n}

        return anyio.run(walk)


UNIT_ROUNDS = 3
"""Times the unit costs are measured before a run, each the median: a chunk's solve is a
tenth of a second, which a neighbour's burst on the shared host moves by a fifth."""


def unit_costs(binary: str, part: Slice, folder: Path) -> tuple[dict[int, float], dict[str, float]]:
    """The model's unit costs, each the median of :data:`UNIT_ROUNDS` measurements."""
    solves, stores = [], []
    for number in range(UNIT_ROUNDS):
        solve = solve_costs(part)
        store = store_costs(binary, part, folder / f"scratch-{number}")
        solves.append(solve)
        stores.append(store | engine_costs(binary, part, solve, folder / f"e-{number}"))
    return (
        {f: statistics.median(solve[f] for solve in solves) for f in solves[0]},
        {name: statistics.median(store[name] for store in stores) for name in stores[0]},
    )


COSTS = ("solve_s", "engine_s", "stored_claims_s", "reads_s", "lookups_s")
"""The model's terms of client CPU, each a count times a unit cost (see :func:`model`)."""


class Player:
    """One worker of the model: its clock (CPU seconds spent), what its memo holds, and
    what it has done, in counts and in CPU by layer (filled count)."""

    def __init__(self, size: int) -> None:
        self.clock = 0.0
        self.memo = bytearray(size)
        self.counts = {"computed": 0, "claimed": 0, "reads": 0, "lookups": 0}
        self.layers: dict[int, dict[str, float]] = {}

    def spend(self, filled: int, costs: dict[str, float]) -> None:
        row = self.layers.setdefault(filled, dict.fromkeys((*COSTS, "redis_s"), 0.0))
        for name, value in costs.items():
            row[name] += value
        self.clock += sum(costs[name] for name in COSTS if name in costs)


def model(part: Slice, solve: dict[int, float], store: dict[str, float], k: int) -> dict[str, Any]:
    """The precompute through ``k`` workers played out block by block, as the engine and the
    ``block`` jobs run it, each step charged at the unit costs measured in process:

    - worker 1 takes the precompute: every layer of the game from its end, shuffled, in
      chunks as :meth:`Engine.solve_layers` cuts them; the others take the pieces it queues
      (the blocks of one box filled), one at a time, in the queue's order;
    - a piece is solved as :meth:`Engine.block` solves it: a walk of its cone's layers, or,
      where half its cone is stored (and the store holds half as many blocks as the cone),
      a walk of the blocks missing from it, found first (a lookup ``l`` each, and a read of
      each stored successor of theirs that the memo lacks);
    - a chunk claims the keys its worker's memo lacks: each key not stored is solved and
      committed (``s_f + c``), each stored one costs its claim and its read (``c' + d``);
    - the workers take their steps in the order of their clocks (the CPU each has spent),
      a step's claims seeing what every step before it stored.

    A slice (``--down-to``) ends once its blocks are stored. The memo is taken to hold all
    it is given (the default bound holds about 600,000 ``maxi-yatzy`` blocks)."""
    masks = [[filled_of(key) for key in part.layers[i]] for i in part.measured]
    filled = [part.filled[i] for i in part.measured]
    most = [
        max(1, round(LAYER_CHUNK / part.game.block_cost(part.layers[i][0]))) for i in part.measured
    ]
    size = 1 + max(max(layer) for layer in masks)
    done = bytearray(size)
    stored = 0
    rng = np.random.default_rng(k)
    pieces = [filled_of(key) for key in part.game.successors(part.game.root())]

    def walk(player: Player, layers: list[list[int]]) -> Iterator[None]:
        nonlocal stored
        for j, layer in enumerate(layers):
            if not layer:
                continue
            order = [layer[x] for x in rng.permutation(len(layer))]
            count = -(-len(order) // most[j])
            step = -(-len(order) // count)
            for start in range(0, len(order), step):
                todo = [m for m in order[start : start + step] if not player.memo[m]]
                fresh = [m for m in todo if not done[m]]
                for m in todo:
                    player.memo[m] = 1
                for m in fresh:
                    done[m] = 1
                stored += len(fresh)
                again = len(todo) - len(fresh)
                player.counts["computed"] += len(fresh)
                player.counts["claimed"] += len(todo)
                player.counts["reads"] += again
                player.spend(
                    filled[j],
                    {
                        "solve_s": len(fresh) * solve[filled[j]],
                        "engine_s": len(fresh) * store["e"],
                        "stored_claims_s": again * store["c2"],
                        "reads_s": again * store["d"],
                        "redis_s": len(fresh) * store["e_r"]
                        + again * (store["c2_r"] + store["d_r"]),
                    },
                )
                yield

    def helper(player: Player) -> Iterator[None]:
        while pieces:
            piece = pieces.pop(0)
            if done[piece]:
                continue
            cone = [[m for m in layer if m & piece == piece] for layer in masks]
            blocks = sum(len(layer) for layer in cone)
            missing = [[m for m in layer if not done[m]] for layer in cone]
            lacking = sum(len(layer) for layer in missing)
            if 2 * stored < blocks or 2 * (blocks - lacking) < blocks:
                yield from walk(player, cone)
                continue
            read = 0
            for layer in missing:
                for m in layer:
                    for box in range(size.bit_length() - 1):
                        above = m | 1 << box
                        if above != m and above < size and done[above] and not player.memo[above]:
                            player.memo[above] = 1
                            read += 1
            player.counts["lookups"] += lacking
            player.counts["reads"] += read
            first = next(f for f, layer in zip(filled, missing, strict=True) if layer)
            player.spend(
                first,
                {
                    "lookups_s": lacking * store["l"],
                    "reads_s": read * store["d"],
                    "redis_s": lacking * store["l_r"] + read * store["d_r"],
                },
            )
            yield
            yield from walk(player, missing)

    players = [Player(size) for _ in range(k)]
    steps = [walk(players[0], masks), *(helper(player) for player in players[1:])]
    queue = [(0.0, i) for i in range(k)]
    while queue and stored < part.blocks:
        _, i = heapq.heappop(queue)
        if next(steps[i], False) is None:  # a step taken (False: the player is done)
            heapq.heappush(queue, (players[i].clock, i))
    rows = []
    for f in filled:
        row: dict[str, float] = {"filled": f, "blocks": len(masks[filled.index(f)])}
        for name in (*COSTS, "redis_s"):
            row[name] = sum(p.layers.get(f, {}).get(name, 0.0) for p in players)
        rows.append(row)
    totals = {name: sum(row[name] for row in rows) for name in (*COSTS, "redis_s")}
    totals["processes_s"] = sum(totals[name] for name in COSTS)
    counts = {name: [p.counts[name] for p in players] for name in players[0].counts}
    return {"workers": k, "layers": rows, "totals": totals, "counts": counts}


def units_line(solve: dict[int, float], store: dict[str, float]) -> str:
    return (
        "solve per block "
        + ", ".join(f"{f}: {s * 1e3:.3f} ms" for f, s in sorted(solve.items()))
        + f"; arrange, claim and commit {store['c'] * 1e6:.1f} us a block (Redis "
        f"{store['c_r'] * 1e6:.1f}); read and decode {store['d'] * 1e6:.1f} us (Redis "
        f"{store['d_r'] * 1e6:.1f}); a stored key claimed {store['c2'] * 1e6:.1f} us (Redis "
        f"{store['c2_r'] * 1e6:.1f}); a missing key looked up {store['l'] * 1e6:.1f} us "
        f"(Redis {store['l_r'] * 1e6:.1f}); the engine's own {store['e'] * 1e6:.1f} us a block "
        f"solved (Redis {store['e_r'] * 1e6:.1f})"
    )


def model_line(found: dict[str, Any], run: Run | None) -> str:
    totals, counts = found["totals"], found["counts"]
    off = ""
    if run is not None:
        miss = (totals["processes_s"] - run.total) / run.total
        off = f" against {run.total:.1f} measured ({miss:+.1%})"
    return (
        f"model, {found['workers']} worker(s): kernel {totals['solve_s']:.1f} s + the rest of "
        f"the blocks solved {totals['engine_s']:.1f} s + stored keys claimed "
        f"{sum(counts['claimed']) - sum(counts['computed']):,} ({totals['stored_claims_s']:.1f} "
        f"s) + reads {sum(counts['reads']):,} ({totals['reads_s']:.1f} s) + lookups "
        f"{sum(counts['lookups']):,} ({totals['lookups_s']:.1f} s) = "
        f"{totals['processes_s']:.1f} s{off}; Redis {totals['redis_s']:.1f} s; blocks "
        f"{counts['computed']}, claimed {counts['claimed']}"
    )


def describe(run: Run) -> str:
    shares = ", ".join(
        f"{name} {cpu:.1f} s ({run.computed.get(name, 0):,} blocks)"
        for name, cpu in run.cpu.items()
    )
    claims = (
        f"; claimed {sum(run.claimed.values()):,}, read {sum(run.found.values()):,}"
        if run.claimed
        else ""
    )
    return (
        f"{Path(run.tree).name:>14} {run.mode:<10} CPU {run.total:7.1f} s [{shares}] + "
        f"redis-server {run.redis_cpu:.1f} s; wall {run.wall_s:.1f} s; stored {run.stored:,}"
        + claims
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rules", default="maxi-yatzy", help="the built-in (maxi-yatzy)")
    parser.add_argument("--down-to", type=int, default=0, help="the slice's last layer (0)")
    parser.add_argument("--workers", type=int, default=2, help="workers of a run (2)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds (1)")
    parser.add_argument("--before", type=Path, help="a second checkout, run side by side")
    parser.add_argument("--poll", type=float, default=0.25, help="seconds between polls")
    parser.add_argument("--project", type=int, default=16, help="workers to project (16)")
    parser.add_argument(
        "--modes",
        default="here,workers",
        help="runs of a round: here, workers or both (here,workers); a machine with many "
        "cores runs the one-process runs of two slices at once, then each pool alone",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_targets(parser, cpu_ratio=CPU_RATIO_TARGET, model=MODEL_TARGET)
    args = parser.parse_args()
    modes = [mode for mode in args.modes.split(",") if mode]
    if not modes or set(modes) - {"here", "workers"}:
        parser.error(f"--modes takes here, workers or both, not {args.modes!r}")
    part = Slice(args.rules, args.down_to)
    binary = ensure_redis_server()
    trees = [ROOT] + ([args.before.resolve()] if args.before else [])

    def say(text: str) -> None:
        if not args.json:
            print(text, flush=True)

    say(
        f"{part.rules.name}: layers of {max(part.filled)} down to {part.down_to} filled, "
        f"{part.blocks:,} blocks; host {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    runs: list[Run] = []
    models: list[dict[str, Any]] = []
    """The model of each run of this tree, played with the unit costs measured just before
    it: the host's load moves every CPU figure (a shared core runs slower per cycle), so
    costs measured minutes apart from a run say another host."""
    with tempfile.TemporaryDirectory(prefix="bench-lean-") as tmp:
        workdir = Path(tmp)
        steps = [(tree, mode) for tree in trees for mode in modes]
        for round_no in range(args.rounds):
            order = steps if round_no % 2 == 0 else steps[::-1]
            for number, (tree, mode) in enumerate(order):
                folder = workdir / f"r{round_no}-{number}"
                folder.mkdir()
                if tree == ROOT:
                    solve, store = unit_costs(binary, part, folder)
                    say(f"  round {round_no + 1}: unit costs {units_line(solve, store)}")
                if mode == "here":
                    run = run_here(binary, tree, part, folder, args.poll)
                else:
                    run = run_workers(binary, tree, part, folder, args.workers, args.poll)
                runs.append(run)
                say(f"  round {round_no + 1}: {describe(run)} (load {os.getloadavg()[0]:.1f})")
                if tree == ROOT:
                    k = 1 if mode == "here" else args.workers
                    models.append(model(part, solve, store, k) | {"units": [solve, store]})
                    run.predicted = models[-1]["totals"]["processes_s"]
                    say(f"    {model_line(models[-1], run)}")
    summary: dict[str, Any] = {"rules": part.rules.name, "down_to": part.down_to}
    summary["blocks"] = part.blocks
    summary["models"] = models
    if args.project > args.workers:
        summary["projected"] = model(part, solve, store, args.project)
        say(f"  projected: {model_line(summary['projected'], None)}")
    summary["runs"] = [asdict(run) | {"total_cpu_s": run.total} for run in runs]
    targets = []
    medians: dict[tuple[str, str], float] = {}
    for tree in trees:
        for mode in modes:
            cpus = [
                r.total
                for r in runs
                if r.tree == str(tree) and (r.mode == "here") == (mode == "here")
            ]
            medians[str(tree), mode] = statistics.median(cpus)
    for tree in trees:
        mine = [r for r in runs if r.tree == str(tree)]
        name = Path(tree).name
        here, pool = medians.get((str(tree), "here")), medians.get((str(tree), "workers"))
        summary[name] = {"here_cpu_s": here, "workers_cpu_s": pool}
        if here is not None and pool is not None:
            summary[name]["ratio"] = pool / here
            say(
                f"{name}: {args.workers} workers / one process = {pool:.1f} / {here:.1f} = "
                f"{pool / here:.3f}"
            )
        if tree != ROOT:
            continue
        if here is not None and pool is not None:
            targets.append(
                Target("workers' CPU / one process's", pool / here, args.target_cpu_ratio)
            )
        for k in (1, args.workers):
            alike = [r for r in mine if (r.mode == "here") == (k == 1)]
            if not alike:
                continue
            measured = statistics.median(r.total for r in alike)
            predicted = statistics.median(r.predicted or 0.0 for r in alike)
            miss = abs(predicted - measured) / measured
            say(
                f"  model, {k} worker(s): {predicted:.1f} s predicted, {measured:.1f} "
                f"measured ({miss:.1%} off; medians of the runs)"
            )
            targets.append(Target(f"model off, {k} worker(s)", miss, args.target_model))
        if pool is not None:
            exact = all(sum(r.computed.values()) == r.stored for r in mine if r.mode != "here")
            targets.append(Target.holds("no block computed twice", exact))
            busy = all(min(r.computed.values()) > 0 for r in mine if r.mode != "here")
            targets.append(Target.holds("every worker computed blocks", busy))
    if not args.json:
        say("per layer (filled: blocks; measured CPU of processes / Redis, one process | workers)")
        played = iter(models)
        for tree in trees:
            for run in (r for r in runs if r.tree == str(tree)):
                say(
                    f"  {Path(tree).name} {run.mode}: "
                    + "; ".join(
                        f"{row['filled']}: {row['cpu_s']:.1f}/{row['redis_s']:.1f}"
                        for row in run.layers
                    )
                )
                if tree == ROOT:
                    say(
                        "    its model: "
                        + "; ".join(
                            f"{row['filled']}: {sum(row[name] for name in COSTS):.1f}/"
                            f"{row['redis_s']:.1f}"
                            for row in next(played)["layers"]
                        )
                    )
    if args.json:
        return verdict(targets, summary)
    return verdict(targets)


if __name__ == "__main__":
    sys.exit(main())
