"""Operator commands: precompute (here, or as a background job), status, export, import.

They only parse, call and format: the solving lives in the engine, the queue in
:mod:`memo_solver.jobs.queue`, the copying in :mod:`memo_solver.stores.transfer`.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from memo_solver.cli.main import emit
from memo_solver.cli.progress import block_bar
from memo_solver.core.engine import namespace, open_engine
from memo_solver.core.store import Store
from memo_solver.games.dice_of_doom.game import doom_name
from memo_solver.games.registry import GameEntry, get_game, registry
from memo_solver.jobs import queue as jobs
from memo_solver.stores.redis import RedisStore
from memo_solver.stores.sqlite import SQLiteStore
from memo_solver.stores.transfer import count_damaged, export_blocks, import_blocks, is_dump_file

_POLL_S = 0.25


def game_of(args: argparse.Namespace) -> GameEntry:
    """``--rules R``, or ``--game dice-of-doom --size N``: one name in the registry."""
    if getattr(args, "game", "yahtzee") == "dice-of-doom":
        return get_game(doom_name(args.size))
    return get_game(args.rules)


async def precompute_here(args: argparse.Namespace, store: Store) -> int:
    """Solve the whole game in this process, cooperating with anyone else on the store."""
    entry = game_of(args)
    game = entry.game
    async with open_engine(game, store) as engine:
        total = game.block_count
        before = (await store.coverage(engine.namespace)).blocks
        started = time.monotonic()
        with block_bar(entry.name, total, before) as bar:

            async def follow() -> None:
                while True:
                    await anyio.sleep(0.2)
                    bar.update(before + engine.counters.computed - bar.n)

            async with anyio.create_task_group() as tg:
                tg.start_soon(follow)
                root = await engine.block(game.root())
                tg.cancel_scope.cancel()
            bar.update(total - bar.n)
    summary, figures = entry.summarize_root(root)
    payload = {
        "rules": entry.name,
        **figures,
        "blocks_total": total,
        "blocks_computed": engine.counters.computed,
        "blocks_already_stored": before,
        "seconds": round(time.monotonic() - started, 3),
        "store": store.description,
    }
    emit(
        args,
        payload,
        f"{entry.name}: solved, {summary}; computed "
        f"{payload['blocks_computed']} of {total} blocks in {payload['seconds']} s "
        f"({before} were already stored) into {store.description}",
    )
    return 0


EXIT_NO_WORKER = 69
"""``precompute --wait`` on Redis with no live worker (EX_UNAVAILABLE): start a worker, or
solve with ``--here``; ``--wait-for-workers`` waits for one instead."""


async def precompute_job(args: argparse.Namespace, store: RedisStore) -> int:
    """Queue the background job for the workers; with --wait, follow it to the end."""
    entry = game_of(args)
    await store.ping()
    job_id, queued = await jobs.enqueue_precompute(store, entry)
    record = await jobs.job_record(store.redis, job_id) or {}
    workers = await jobs.live_worker_count(store.redis)
    if not workers:
        if not args.wait:
            then = "; the job waits in the queue meanwhile"
        elif args.wait_for_workers:
            then = "; waiting for one"
        else:
            then = "; the job stays queued (--wait-for-workers waits for a worker)"
        print(
            f"memo-solver: no worker is alive on {store.description}: start one with "
            f"'memo-solver worker --redis {store.description}', or solve in this process "
            f"with --here{then}",
            file=sys.stderr,
        )
    if not args.wait:
        emit(
            args,
            {"job": job_id, "queued": queued, "status": record.get("status")},
            f"job {job_id}: {'queued' if queued else 'already ' + record.get('status', '?')}"
            f" (precompute {entry.name}); follow it with "
            f"'memo-solver --redis {store.description} status'",
        )
        return 0
    if not workers and not args.wait_for_workers:
        return EXIT_NO_WORKER
    game = entry.game
    ns = namespace(game)
    started = time.monotonic()
    with block_bar(entry.name, game.block_count, (await store.coverage(ns)).blocks) as bar:
        while True:
            record = await jobs.job_record(store.redis, job_id) or {}
            done = (await store.coverage(ns)).blocks
            bar.update(done - bar.n)
            if record.get("status") in ("done", "failed"):
                break
            await anyio.sleep(_POLL_S)
    if record.get("status") == "failed":
        print(f"memo-solver: job {job_id} failed: {record.get('error')}", file=sys.stderr)
        return 1
    if done < game.block_count:
        print(
            f"memo-solver: job {job_id} is done but the store holds {done} of "
            f"{game.block_count} blocks of {entry.name} (deleted meanwhile?); "
            "run the precompute again",
            file=sys.stderr,
        )
        return 1
    async with open_engine(game, store) as engine:  # the job stored the root: one fetch
        summary, figures = entry.summarize_root(await engine.block(game.root()))
    payload = {
        "job": job_id,
        "status": "done",
        "rules": entry.name,
        **figures,
        "blocks_total": game.block_count,
        "seconds": round(time.monotonic() - started, 3),
    }
    emit(args, payload, f"job {job_id} done: {entry.name} solved, {summary}")
    return 0


async def status(args: argparse.Namespace, store: Store) -> int:
    """What the store holds per game: O(1) per game (Redis: a few commands whatever it
    holds); ``--verify`` also decodes every stored block, O(blocks), and counts the
    damaged ones (which the engine recomputes when it meets them)."""
    rule_sets: dict[str, dict[str, int]] = {}
    for name, entry in registry().items():
        game = entry.game
        coverage = await store.coverage(namespace(game))
        rule_sets[name] = {
            "blocks_total": game.block_count,
            "blocks_done": coverage.blocks,
            "claims_held": coverage.claims,
            "bytes": coverage.bytes,
        }
        if args.verify:
            rule_sets[name]["blocks_damaged"] = await count_damaged(store, game)
    workers: list[jobs.Record] = []
    queue: list[jobs.Record] = []
    jobs_kept = 0
    if isinstance(store, RedisStore):
        workers = await jobs.live_workers(store.redis)
        jobs_kept, queue = await jobs.recent_jobs(store.redis)
        size = sum(row["bytes"] for row in rule_sets.values())
        size_basis = "redis-memory-usage"
        size_words = "Redis memory of its block hashes, sampled by MEMORY USAGE"
    else:
        path = Path(store.description)
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
        size_basis = "files"
        size_words = "on disk"
    payload = {
        "store": store.description,
        "size_bytes": size,
        "size_basis": size_basis,
        "rule_sets": rule_sets,
        "workers": workers,
        "jobs": queue,
    }
    lines = [f"store: {store.description} ({size / 1e6:.1f} MB {size_words})"]
    for name, row in rule_sets.items():
        share = row["blocks_done"] / row["blocks_total"]
        lines.append(
            f"  {name:<26} {row['blocks_done']:>6} of {row['blocks_total']:>6} blocks "
            f"({share:6.1%}), {row['claims_held']} claims held"
            + (f", {row['blocks_damaged']} damaged" if args.verify else "")
        )
    if isinstance(store, RedisStore):
        lines.append(f"workers: {len(workers)} alive")
        lines += [
            f"  {w.get('id')}: {w.get('blocks_computed')} blocks computed, "
            f"{w.get('blocks_waited')} waited for, {w.get('jobs_done')} jobs done"
            + (f", running {w['running']}" if w.get("running") else "")
            for w in workers
        ]
        shown = f" (the latest {len(queue)} shown)" if len(queue) < jobs_kept else ""
        lines.append(f"jobs: {jobs_kept}{shown}")
        lines += [
            f"  {j.get('id')}: {j.get('kind')} {j.get('rules')} {j.get('state', '')} "
            f"-> {j.get('status')}"
            + (f" ({j['blocks_done']}/{j['blocks_total']} blocks)" if j.get("blocks_total") else "")
            + (f" error: {j['error']}" if j.get("error") else "")
            for j in queue
        ]
    emit(args, payload, "\n".join(lines))
    return 0


def open_spec(spec: str) -> Store | Path:
    """A copy's other end: a Redis URL, a ``.msgpack`` dump file, or an SQLite file."""
    if spec.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(spec)
    if is_dump_file(spec):
        return Path(spec)
    return SQLiteStore(Path(spec))


async def transfer(args: argparse.Namespace, store: Store) -> int:
    entry = game_of(args)
    game = entry.game
    spec = args.to if args.command == "export" else args.source
    other = open_spec(spec)
    async with AsyncExitStack() as stack:
        if not isinstance(other, Path):
            await stack.enter_async_context(other)
        if args.command == "export":
            copied = await export_blocks(store, game, other)
            direction = f"from {store.description} to {spec}"
        else:
            copied = await import_blocks(other, game, store)
            direction = f"from {spec} into {store.description}"
    payload = {
        "rules": entry.name,
        "blocks": copied.blocks,
        "skipped_bad": copied.skipped,
        "blocks_total": game.block_count,
    }
    emit(
        args,
        payload,
        f"{args.command}: {copied.blocks} verified blocks of {entry.name} copied {direction}"
        + (f"; {copied.skipped} damaged blocks skipped" if copied.skipped else ""),
    )
    return 0


async def precompute(args: argparse.Namespace, store: Store) -> int:
    if isinstance(store, RedisStore) and not args.here:
        return await precompute_job(args, store)
    return await precompute_here(args, store)
