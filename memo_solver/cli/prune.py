"""The operator's ``prune``: delete what the store holds for games nobody can name any more.

A namespace is known when a built-in game or a stored definition names it, whatever value
type it holds: a built-in's namespace, one that holds its game's definition (stored beside
its blocks for every rule set that reaches the store, so a worker can rebuild the game from
the fingerprint alone), or a value table (a need table) that its family reads as one of a
built-in game or of a game whose definition the store keeps; the families read their
fingerprints (:func:`memo_solver.games.registry.value_table`), never this module. One of
another format version is unknown whatever it holds: its blocks are unreadable. The rest
are blocks of rules no one can ask for: ``prune --dry-run`` lists them, ``prune`` deletes
them. Finding them walks everything the store holds (Redis: SCAN), so it is a command of
its own, never part of ``status``.
"""

from __future__ import annotations

from memo_solver.cli.common import PROG, Output
from memo_solver.core.engine import fingerprint_in, namespace, namespace_of, of_this_format
from memo_solver.core.store import Coverage, Store
from memo_solver.games.registry import built_in_prints, registry, value_table


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
    """The unknown namespaces with what each holds, and how many known ones there are."""
    unknown: dict[str, Coverage] = {}
    known = 0
    for name in await store.namespaces():
        if await is_known(store, name):
            known += 1
        else:
            unknown[name] = await store.coverage(name)
    return unknown, known


async def prune(dry_run: bool, store: Store, out: Output) -> int:
    """List the unknown namespaces (``dry_run``), or delete them and say what went."""
    unknown, known = await unknown_namespaces(store)
    counted = {
        name: covered.blocks if dry_run else await store.delete_namespace(name)
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
