"""Operator commands: precompute (here, or as a background job), status, export, import.

They take typed values (a game of the registry, options, the open store and its job
queue) and only call and format: the solving lives in the engine, the queue in
:mod:`memo_solver.jobs.queue`, the copying in :mod:`memo_solver.stores.transfer`.
"""

from __future__ import annotations

import sys
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio

from memo_solver.cli.common import EXIT_UNAVAILABLE, Output, UsageError
from memo_solver.cli.progress import block_bar
from memo_solver.core.engine import (
    fingerprint_in,
    namespace,
    namespace_of,
    of_this_format,
    open_engine,
)
from memo_solver.core.store import Store
from memo_solver.games.entry import GameEntry
from memo_solver.games.registry import UnknownGameError, get_game, registry, value_table
from memo_solver.games.yahtzee import NeedGame, need_entry_of, table_bytes
from memo_solver.jobs.queue import JobQueue, Record
from memo_solver.jobs.storage import Location
from memo_solver.stores.redis import RedisStore
from memo_solver.stores.sqlite import SQLiteStore
from memo_solver.stores.transfer import count_damaged, export_blocks, import_blocks, is_dump_file

_POLL_S = 0.25


@dataclass(frozen=True)
class PrecomputeOptions:
    wait: bool = False
    """With a job queue: follow the job until it is done."""
    wait_for_workers: bool = False
    """With ``wait``: keep waiting while no worker is alive."""
    here: bool = False
    """Solve in this process even with a job queue."""
    threads: int = 1
    """Threads a batch of blocks is split over, solving here."""
    cache_bytes: int | None = None
    """The memo's bound, solving here (None: the process's)."""


async def precompute(
    entry: GameEntry, options: PrecomputeOptions, store: Store, queue: JobQueue | None, out: Output
) -> int:
    """A job for the workers where the store has a queue (unless ``here``), else solved here."""
    if queue is not None and not options.here:
        return await precompute_job(entry, options, queue, out)
    return await precompute_here(entry, store, out, options)


def need_table(entry: GameEntry, cap: int, max_table_mb: int | None) -> GameEntry:
    """The need table of ``entry``'s rule set up to ``cap``, to precompute, export or
    import like any game; with ``max_table_mb`` (a precompute), unless the whole table is
    larger than that many MiB: refused before it fills a disk (the figure in the error)."""
    need = need_entry_of(entry, cap)
    if max_table_mb is None:
        return need
    game = need.game
    assert isinstance(game, NeedGame)
    size_mb = table_bytes(game.rules, cap) / (1 << 20)
    if size_mb > max_table_mb:
        raise UsageError(
            f"the need table of {entry.name} up to {cap} points is {size_mb:,.0f} MiB, past "
            f"--max-table-mb {max_table_mb:,}: lower --need-cap, or raise --max-table-mb "
            "where the store has room"
        )
    return need


async def precompute_here(
    entry: GameEntry, store: Store, out: Output, options: PrecomputeOptions
) -> int:
    """Solve the whole game in this process, cooperating with anyone else on the store."""
    game = entry.game
    async with open_engine(
        game,
        store,
        definition=entry.definition,
        threads=options.threads,
        cache_bytes=options.cache_bytes,
    ) as engine:
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
                root = await engine.solve_layers(game.root())
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
    out.emit(
        payload,
        f"{entry.name}: solved, {summary}; computed "
        f"{payload['blocks_computed']} of {total} blocks in {payload['seconds']} s "
        f"({before} were already stored) into {store.description}",
    )
    return 0


async def precompute_job(
    entry: GameEntry, options: PrecomputeOptions, queue: JobQueue, out: Output
) -> int:
    """Queue the background job for the workers; with ``wait``, follow it to the end."""
    store = queue.store
    await store.ping()
    job_id, queued = await queue.enqueue_precompute(entry)
    record = await queue.record(job_id) or {}
    workers = await queue.live_worker_count()
    if not workers:
        if not options.wait:
            then = "; the job waits in the queue meanwhile"
        elif options.wait_for_workers:
            then = "; waiting for one"
        else:
            then = "; the job stays queued (--wait-for-workers waits for a worker)"
        print(
            f"memo-solver: no worker is alive on {store.description}: start one with "
            f"'memo-solver worker --redis {store.description}', or solve in this process "
            f"with --here{then}",
            file=sys.stderr,
        )
    if not options.wait:
        out.emit(
            {"job": job_id, "queued": queued, "status": record.get("status")},
            f"job {job_id}: {'queued' if queued else 'already ' + record.get('status', '?')}"
            f" (precompute {entry.name}); follow it with "
            f"'memo-solver --redis {store.description} status'",
        )
        return 0
    if not workers and not options.wait_for_workers:
        return EXIT_UNAVAILABLE  # start a worker, or solve --here
    game = entry.game
    ns = namespace(game)
    started = time.monotonic()
    with block_bar(entry.name, game.block_count, (await store.coverage(ns)).blocks) as bar:
        while True:
            record = await queue.record(job_id) or {}
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
    out.emit(payload, f"job {job_id} done: {entry.name} solved, {summary}")
    return 0


async def status(
    verify: bool,
    store: Store,
    queue: JobQueue | None,
    location: Location,
    out: Output,
    also: GameEntry | None = None,
) -> int:
    """What the store holds per game: O(1) per game (Redis: a few commands whatever it
    holds), and the workers and jobs of its queue; ``verify`` also decodes every stored
    block, O(blocks), and counts the damaged ones (which the engine recomputes when it
    meets them). ``location`` is the store's: an SQLite file's size is on disk. ``also``:
    a game outside the registry (``--rules-file``) listed after the registry's."""
    rule_sets: dict[str, dict[str, int]] = {}
    games = list(registry().items())
    if also is not None:
        games.append((also.name, also))
    for name, entry in games:
        game = entry.game
        coverage = await store.coverage(namespace(game))
        rule_sets[name] = {
            "blocks_total": game.block_count,
            "blocks_done": coverage.blocks,
            "claims_held": coverage.claims,
            "bytes": coverage.bytes,
        }
        if verify:
            rule_sets[name]["blocks_damaged"] = await count_damaged(store, game)
    names = {namespace(entry.game): name for name, entry in games}
    tables = await value_tables(store, games)
    nodes = await store.nodes(list(names)) if isinstance(store, RedisStore) else []
    workers: list[Record] = []
    jobs: list[Record] = []
    jobs_kept = 0
    if queue is not None:
        workers = await queue.live_workers()
        jobs_kept, jobs = await queue.recent_jobs()
        for job in jobs:
            if job.get("blocks_total") and job.get("status") in ("queued", "running"):
                stored = await _blocks_stored(store, str(job.get("rules", "")))
                if stored is not None:
                    job["blocks_stored"] = stored
    if isinstance(location, Path):
        files = location.parent.glob(location.name + "*")
        size = sum(p.stat().st_size for p in files if p.is_file())
        size_basis = "files"
        size_words = "on disk"
    else:
        size = sum(row["bytes"] for row in [*rule_sets.values(), *tables.values()])
        size_basis = "redis-memory-usage"
        size_words = "Redis memory of its block hashes, sampled by MEMORY USAGE"
    payload = {
        "store": store.description,
        "size_bytes": size,
        "size_basis": size_basis,
        "rule_sets": rule_sets,
        "tables": tables,
        "nodes": [
            {
                "address": node.address,
                "used_memory": node.used_memory,
                "blocks": {names[ns]: count for ns, count in node.blocks.items() if count},
            }
            for node in nodes
        ],
        "workers": workers,
        "jobs": jobs,
    }
    lines = [f"store: {store.description} ({size / 1e6:.1f} MB {size_words})"]
    for name, row in rule_sets.items():
        share = row["blocks_done"] / row["blocks_total"]
        lines.append(
            f"  {name:<26} {row['blocks_done']:>6} of {row['blocks_total']:>6} blocks "
            f"({share:6.1%}), {row['claims_held']} claims held"
            + (f", {row['blocks_damaged']} damaged" if verify else "")
        )
    if tables:
        lines.append(f"other value tables: {len(tables)}")
        lines += [
            f"  {row['rules']:<26} {row['value_type']}: {row['blocks_done']} blocks, "
            f"{row['bytes'] / 1e6:.1f} MB, {row['claims_held']} claims held"
            for row in tables.values()
        ]
    if nodes:
        stored = sum(row["blocks_done"] for row in rule_sets.values())
        used = sum(node.used_memory for node in nodes)
        lines.append(f"nodes: {len(nodes)}, Redis used_memory {used / 1e6:.1f} MB in all")
        for node in nodes:
            held = sum(node.blocks.values())
            part = f" ({held / stored:.0%} of those stored)" if stored else ""
            lines.append(f"  {node.address}: {node.used_memory / 1e6:.1f} MB, {held} blocks{part}")
    if queue is not None:
        lines.append(f"workers: {len(workers)} alive")
        lines += [
            f"  {w.get('id')}: {w.get('blocks_computed')} blocks computed, "
            f"{w.get('blocks_waited')} waited for, {w.get('jobs_done')} jobs done"
            + (f", running {w['running']}" if w.get("running") else "")
            for w in workers
        ]
        shown = f" (the latest {len(jobs)} shown)" if len(jobs) < jobs_kept else ""
        lines.append(f"jobs: {jobs_kept}{shown}")
        lines += [
            f"  {j.get('id')}: {j.get('kind')} {j.get('rules')} {j.get('state', '')} "
            f"-> {j.get('status')}"
            + (f" ({j['blocks_done']}/{j['blocks_total']} blocks)" if j.get("blocks_total") else "")
            + (f", {j['blocks_stored']} in the store" if "blocks_stored" in j else "")
            + (f" error: {j['error']}" if j.get("error") else "")
            for j in jobs
        ]
    out.emit(payload, "\n".join(lines))
    return 0


async def _blocks_stored(store: Store, rules: str) -> int | None:
    """The store's coverage of the game a job's ``rules`` names (a registry name, or a
    fingerprint its family owns; None for neither): beside a live job's own count, which
    stops where its worker was killed, while the other workers' blocks keep landing."""
    if value_table(rules) is not None:
        name = namespace_of(rules)
    else:
        try:
            name = namespace(get_game(rules).game)
        except UnknownGameError:
            return None
    return (await store.coverage(name)).blocks


async def value_tables(
    store: Store, games: list[tuple[str, GameEntry]]
) -> dict[str, dict[str, Any]]:
    """By namespace, every other one the store lists as written (:meth:`Store.written`)
    and holds blocks in: a need table by its rule set and cap, a rule-set file's values,
    as their families read them (a fingerprint no family reads: "unknown", for prune)."""
    listed = {namespace(entry.game) for _, entry in games}
    names = {entry.game.fingerprint: name for name, entry in games}
    tables: dict[str, dict[str, Any]] = {}
    for ns in await store.written():
        covered = await store.coverage(ns)
        if ns in listed or not of_this_format(ns) or not covered.blocks:
            continue
        owned = value_table(fingerprint_in(ns))
        game, label = (owned[1].game, owned[1].label) if owned else (fingerprint_in(ns), "unknown")
        tables[ns] = {
            "rules": names.get(game, game),
            "value_type": label,
            "blocks_done": covered.blocks,
            "claims_held": covered.claims,
            "bytes": covered.bytes,
        }
    return tables


def open_spec(spec: str, flag: str) -> Store | Path:
    """A copy's other end, as ``flag`` (``--to``, ``--from``) names it: a Redis URL, a
    ``.msgpack`` dump file, or an SQLite file, which an import needs to exist (opening one
    would make an empty store, and the import would copy nothing without a word)."""
    if spec.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(spec)
    path = Path(spec)
    if flag == "--from" and not path.exists():
        raise UsageError(f"--from {spec}: no such file")
    if is_dump_file(spec):
        return path
    return SQLiteStore(path, flag=flag)


async def transfer(
    command: Literal["export", "import"], entry: GameEntry, spec: str, store: Store, out: Output
) -> int:
    """A game's verified blocks from the store to ``spec`` (export), or from it (import)."""
    game = entry.game
    other = open_spec(spec, "--to" if command == "export" else "--from")
    async with AsyncExitStack() as stack:
        if not isinstance(other, Path):
            await stack.enter_async_context(other)
        target = other if command == "export" else store
        if entry.definition is not None and not isinstance(target, Path):
            await target.put_definition(namespace(game), entry.definition)
        if command == "export":
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
    out.emit(
        payload,
        f"{command}: {copied.blocks} verified blocks of {entry.name} copied {direction}"
        + (f"; {copied.skipped} damaged blocks skipped" if copied.skipped else ""),
    )
    return 0
