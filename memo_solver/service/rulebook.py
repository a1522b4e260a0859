"""Every rule set a request may name: a built-in, a registered name, a fingerprint, or a
definition sent inline; and the registrations themselves.

Registrations and definitions live in the shared store, so every API process and worker
sees the same ones: a registration maps a name to its file (labels and aliases included),
and every rule set that reaches the store has its definition kept beside its blocks
(:meth:`~memo_solver.core.store.Store.put_definition`), so that a worker asked to solve a
fingerprint needs nothing else. Parsed rule sets are kept in a small LRU so a busy name is
not parsed on every request.

The store counts registrations against a quota, in the same atomic step as each
registration, and keeps when each name was last asked about, for ``prune --unused-for``: a
name asked about is noted here, in memory, and the service writes the notes in the
background (:meth:`RuleBook.write_used`), each name at most once an hour per process, so the
warm path never waits on a write.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import Final

from memo_solver.core.engine import fingerprint_in, namespace, namespace_of, of_this_format
from memo_solver.core.errors import UserError
from memo_solver.core.store import RegistrationQuotaError, Store, StoreUnavailableError
from memo_solver.games.entry import GameEntry
from memo_solver.games.registry import value_table
from memo_solver.games.yahtzee import (
    RULE_SETS,
    RuleSet,
    definition_of,
    entry_for,
    is_rule_set_name,
    parse_rule_text,
    rule_text,
)
from memo_solver.jobs.queue import JobQueue
from memo_solver.jobs.settings import DEFAULT_JOB_TTL_S
from memo_solver.service.errors import ApiError

log = logging.getLogger(__name__)

PARSED_KEPT: Final = 256
"""Parsed rule sets kept by the text that defined them (each a few hundred KiB at most)."""
USED_EVERY_S: Final = 3600.0
"""How stale a name's last-asked stamp may get in the store: ``prune --unused-for`` counts
days, so an hour is exact enough, and a busy name costs a write an hour, not one a request."""
_BUILT_IN_PRINTS: Final = {r.fingerprint: r for r in RULE_SETS.values()}


def _is_rule_set_print(name: str) -> bool:
    """Whether ``name`` is a game's own fingerprint (its mean values), as its family reads
    it: the rulebook spells no family's format."""
    owned = value_table(name)
    return owned is not None and owned[1].game == name


def is_built_in(rules: RuleSet) -> bool:
    return rules.fingerprint in _BUILT_IN_PRINTS


class RuleBook:
    """Rule sets by name, fingerprint or inline definition, on one store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._parsed: OrderedDict[str, RuleSet] = OrderedDict()
        self._written: dict[str, float] = {}
        """Name -> when this process last wrote its stamp."""
        self._asked: set[str] = set()
        """Names asked about whose stamp is due: :meth:`write_used` writes them."""

    def _parse(self, text: str | bytes) -> RuleSet:
        key = text.decode() if isinstance(text, bytes) else text
        rules = self._parsed.get(key)
        if rules is None:
            rules = self._parsed[key] = parse_rule_text(text)
            while len(self._parsed) > PARSED_KEPT:
                self._parsed.popitem(last=False)
        self._parsed.move_to_end(key)
        return rules

    async def resolve(self, value: str | dict[str, object]) -> RuleSet:
        """The rule set a request's ``rules`` names (422 naming ``rules`` when none)."""
        if isinstance(value, dict):
            # Its definition reaches the store with its engine, or with a job for it.
            return self._parse(rule_text(value))
        name = value.strip().lower()
        built_in = RULE_SETS.get(name)
        if built_in is not None:
            return built_in
        if is_rule_set_name(name):  # what is no name never reaches the store
            registered = await self._store.registration(name)
            if registered is not None:
                if time.time() - self._written.get(name, 0.0) >= USED_EVERY_S:
                    self._asked.add(name)
                return self._parse(registered)
        if _is_rule_set_print(name):
            if name in _BUILT_IN_PRINTS:
                return _BUILT_IN_PRINTS[name]
            stored = await self._store.definition(namespace_of(name))
            if stored is not None:
                return self._parse(stored)
        raise UserError(
            f"unknown rule set {value!r}: not built in ({', '.join(RULE_SETS)}), not "
            "registered (GET /v1/rules), and no fingerprint the store knows; send the rule "
            "set inline or register it with POST /v1/rules",
            "rules",
        )

    async def keep_definition(self, entry: GameEntry) -> None:
        """Store a game's definition beside its blocks (a rule set's file, a need table's
        too; a built-in has none), before work goes to the workers: what they solve it from
        (an engine opened here stores it as it opens)."""
        if entry.definition is not None:
            await self._store.put_definition(namespace(entry.game), entry.definition)

    async def write_used(self) -> None:
        """Write the stamps of the names asked about since their last one was written (at
        most about hourly); a store that refuses them loses only their precision."""
        names, self._asked = sorted(self._asked), set()
        if not names:
            return
        now = time.time()
        try:
            await self._store.mark_used(names, now)
        except StoreUnavailableError as exc:
            log.info("when %d rule sets were last asked about was not kept: %s", len(names), exc)
            return
        self._written.update((name, now) for name in names)

    async def register(self, rules: RuleSet, quota: int) -> bool:
        """Register ``rules`` under its name; True when new, False when the same rules were
        registered already; 409 when the name holds other rules or is a built-in's; 429 when
        the name is free but ``quota`` names are registered already."""
        built_in = RULE_SETS.get(rules.name)
        if built_in is not None:
            if built_in.fingerprint == rules.fingerprint:
                return False
            raise ApiError(409, "name", f"{rules.name} is a built-in rule set; choose another name")
        held = await self._store.registration(rules.name)
        if held is None:
            document = definition_of(rules)
            assert document is not None, "not a built-in's name, so not a built-in"
            try:
                held = await self._store.register(rules.name, rules.fingerprint, document, quota)
            except RegistrationQuotaError:
                raise ApiError(
                    429,
                    "rules",
                    f"this service's registration quota of {quota:,} rule sets is reached "
                    "(--registration-quota); send the rule set inline instead, or ask the "
                    "operator",
                ) from None
            if held is None:  # this request's registration, of all that raced for the name
                # Kept once registered, so that a refused registration leaves nothing behind.
                await self.keep_definition(entry_for(rules))
                await self._store.mark_used([rules.name], time.time())
                return True
        if self._parse(held).fingerprint == rules.fingerprint:
            return False
        raise ApiError(
            409, "name", f"{rules.name} is registered with other rules; choose another name"
        )

    async def unregister(self, name: str, queue: JobQueue | None) -> tuple[RuleSet, bool]:
        """Remove a registration (404 when there is none); the rule set, and whether its
        blocks went too (when no built-in and no other registration shares them): its mean
        values and every other value table of it (:meth:`_tables_of`), each of which keeps
        its own definition, and would otherwise stay known to ``prune`` for good.

        Their queued and running jobs fail first, saying why, so that none is left to end
        as done on blocks that are gone; a worker still solving one has its next commit
        refused by the store (:class:`~memo_solver.core.store.NamespaceGoneError`)."""
        document = await self._store.registration(name)
        if document is None:
            raise ApiError(404, "name", f"no rule set is registered as {name!r}")
        rules = self._parse(document)
        sharing = await self._store.unregister(name)
        if sharing or is_built_in(rules):
            return rules, False
        tables = await self._tables_of(rules.fingerprint)
        if queue is not None:
            why = (
                f"the rule set {name!r} was deleted (DELETE /v1/rules/{name}) while this job "
                "was queued or running: its blocks went with it"
            )
            for table in tables:
                await queue.fail_jobs_of(fingerprint_in(table), why, DEFAULT_JOB_TTL_S)
        for table in tables:
            await self._store.delete_namespace(table)
        return rules, True

    async def _tables_of(self, fingerprint: str) -> list[str]:
        """The namespaces of the rule set's value tables: its mean values, and every other
        the store lists as written whose family reads it as one of the rule set's (a need
        table), without walking all the store holds."""
        own = namespace_of(fingerprint)
        others = [
            ns
            for ns in await self._store.written()
            if ns != own and of_this_format(ns) and _table_of(ns) == fingerprint
        ]
        return [own, *others]


def _table_of(ns: str) -> str | None:
    """The fingerprint of the game whose value table the namespace holds, as its family
    reads it (None when no family does)."""
    owned = value_table(fingerprint_in(ns))
    return None if owned is None else owned[1].game
