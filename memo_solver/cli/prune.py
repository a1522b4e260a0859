"""The operator's ``prune``: delete what the store holds for games nobody can name any more.

A namespace is known when a built-in game or a stored definition names it, whatever value
type it holds: a built-in's namespace, one that holds its game's definition (stored beside
its blocks for every rule set that reaches the store, so a worker can rebuild the game from
the fingerprint alone), or a value table (a need table) that its family reads as one of a
built-in game or of a game whose definition the store keeps; the families read their
fingerprints (:func:`memo_solver.games.registry.value_table`), never this module. One of
another format version is unknown whatever it holds: its blocks are unreadable. The rest
are blocks of rules no one can ask for: ``prune --dry-run`` lists them, ``prune`` deletes
them, with the strays of any namespace, known or not: keys that no layout record covers, so
no reader finds them (Redis: written into a namespace after it was deleted, see
:meth:`~memo_solver.core.store.Store.strays`). Finding them walks everything the store
holds (Redis: SCAN), so it is a command of its own, never part of ``status``.

``prune --unused-for DAYS`` removes instead the registrations nobody asked about for that
long (:func:`prune_unused`): anyone may register a rule set, so the operator clears the
ones left behind.
"""

from __future__ import annotations

import time
from contextlib import suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from memo_solver.cli.common import PROG, Output, UsageError
from memo_solver.core.engine import fingerprint_in, namespace, namespace_of, of_this_format
from memo_solver.core.store import Coverage, Store
from memo_solver.games.registry import built_in_prints, registry, value_table

if TYPE_CHECKING:
    from memo_solver.jobs.queue import JobQueue


async def is_known(store: Store, name: str) -> bool:
    """Whether a built-in or a stored definition names the namespace (see above)."""
    if name in {namespace(entry.game) for entry in registry().values()}:
        return True
    if not of_this_format(name):
        return False
    if await store.definition(name) is not None:
        return True
    owned = value_table(fingerprint_in(name))
    if owned is None:
        return False
    _, table = owned
    game = table.game
    return game in built_in_prints() or await store.definition(namespace_of(game)) is not None


async def unknown_namespaces(store: Store) -> tuple[dict[str, Coverage], int]:
    """What to prune, by namespace: an unknown one's all (its strays counted in), a known
    one's strays alone; and how many known namespaces there are."""
    strays = await store.strays()
    unknown: dict[str, Coverage] = {}
    known = 0
    for name in await store.namespaces():
        if await is_known(store, name):
            known += 1
            if name in strays:
                unknown[name] = strays[name]
        else:
            unknown[name] = _sum(await store.coverage(name), strays.get(name))
    return unknown, known


def _sum(covered: Coverage, strays: Coverage | None) -> Coverage:
    if strays is None:
        return covered
    return Coverage(
        covered.blocks + strays.blocks, covered.claims + strays.claims, covered.bytes + strays.bytes
    )


async def _delete(store: Store, name: str) -> int:
    """Delete what :func:`unknown_namespaces` found of the namespace (known again since:
    its strays alone); the blocks deleted."""
    strays = await store.delete_strays(name)
    if await is_known(store, name):
        return strays
    return strays + await store.delete_namespace(name)


async def prune(dry_run: bool, store: Store, out: Output) -> int:
    """List the unknown namespaces (``dry_run``), or delete them and say what went."""
    unknown, known = await unknown_namespaces(store)
    counted = {
        name: covered.blocks if dry_run else await _delete(store, name)
        for name, covered in unknown.items()
    }
    blocks = sum(counted.values())
    payload = {
        "store": store.description,
        "dry_run": dry_run,
        "namespaces": [
            {"namespace": name, "blocks": counted[name], "claims": c.claims, "bytes": c.bytes}
            for name, c in unknown.items()
        ],
        "blocks": blocks,
        "known": known,
    }
    where = f"{store.description}: {known} known namespaces kept"
    if not unknown:
        text = f"{where}; nothing to prune"
    elif dry_run:
        text = (
            f"{where}; {len(unknown)} unknown, {blocks} blocks (nothing deleted: "
            f"'{PROG} prune' deletes them):"
        )
    else:
        text = f"{where}; {len(unknown)} unknown deleted, {blocks} blocks:"
    lines = [text] + [
        f"  {name}  {counted[name]} blocks, {c.claims} claims held" for name, c in unknown.items()
    ]
    out.emit(payload, "\n".join(lines))
    return 0


DAY_S: Final = 86_400.0


async def prune_unused(
    days: float, dry_run: bool, store: Store, queue: JobQueue | None, out: Output
) -> int:
    """List the registrations nobody asked about for ``days`` (``dry_run``), or delete them
    with their blocks where no built-in or other registration shares them. A registration
    from before the service kept when each was asked about counts as asked about now."""
    if not days > 0:
        raise UsageError(f"--unused-for must be a positive number of days, got {days}")
    # Here, not at the top: the rule book is the service's, which loads FastAPI.
    from memo_solver.service.errors import ApiError
    from memo_solver.service.rulebook import RuleBook

    now = time.time()
    stale = [(name, used) for name, used in await store.last_used(now) if now - used > days * DAY_S]
    deleted: dict[str, bool] = {}
    if not dry_run:
        rulebook = RuleBook(store)
        for name, _ in stale:
            with suppress(ApiError):  # unregistered since it was listed: nothing to do
                deleted[name] = (await rulebook.unregister(name, queue))[1]
    gone = [(name, used) for name, used in stale if dry_run or name in deleted]
    payload = {
        "store": store.description,
        "dry_run": dry_run,
        "unused_for_days": days,
        "registrations": [
            {"name": name, "last_used": used, "blocks_deleted": deleted.get(name, False)}
            for name, used in gone
        ],
    }
    where = f"{store.description}: {len(gone)} registrations unused for {days:g} days"
    if dry_run and gone:
        where += f" (nothing deleted: '{PROG} prune --unused-for {days:g}' deletes them)"
    elif gone:
        where += " deleted"
    lines = [where + (":" if gone else "")] + [
        f"  {name}  last asked about {_day(used)}"
        + (", its blocks deleted" if deleted.get(name) else "")
        for name, used in gone
    ]
    out.emit(payload, "\n".join(lines))
    return 0


def _day(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M UTC")
