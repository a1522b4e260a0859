"""``/v1/rules``: the rule sets (built in, and registered once by anyone, then named by name
or fingerprint), registration, an operator's deletion, and how much of each game the memo
holds."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from functools import cache
from typing import Annotated, Any, Final

import anyio
from fastapi import Query, Request, Response

from memo_solver.core.engine import namespace
from memo_solver.core.errors import UserError
from memo_solver.games.entry import GameEntry
from memo_solver.games.registry import registry
from memo_solver.games.yahtzee import (
    MAX_RULE_BYTES,
    RULE_SETS,
    RuleSet,
    definition_of,
    entry_for,
    need_entry_of,
    parse_rule_text,
    risk_entry_of,
)
from memo_solver.service.errors import ApiError
from memo_solver.service.inputs import authorize, rules_of
from memo_solver.service.models import CoverageOut, RegisteredOut, RuleSetOut, UnregisteredOut
from memo_solver.service.routes import Routes
from memo_solver.service.service import Service, service_of

routes = Routes()

PAGE = 100
"""Rule sets per page of ``GET /v1/rules`` unless ``limit`` says fewer."""
LISTED_KEPT: Final = 1024
"""Registered rule sets whose listing is kept, as bytes (each a few KiB): ten pages."""
_listed: OrderedDict[bytes, bytes] = OrderedDict()
"""A registration's document -> its entry of ``GET /v1/rules``, as JSON: parsing and
serializing a page of 100 is 80-140 ms of CPU, which on the event loop would stall every
other request, warm advice included. A document's entry never changes (its name is never a
built-in's), so it is kept by the document; it is written only on the event loop."""
_listing = anyio.CapacityLimiter(1)
"""One thread at a time lists the rule sets not kept yet: a burst of pages cannot take
every core from the requests."""


def rule_set_out(rules: RuleSet) -> RuleSetOut:
    """The rule set as listed; its saved rolls only where it has them (every other rule
    set's entry as before), to be written without what is unset."""
    saved: dict[str, Any] = {}
    if rules.saved_rolls:
        saved["saved_rolls"] = True
        if rules.max_saved is not None:
            saved["max_saved"] = rules.max_saved
    return RuleSetOut(
        name=rules.name,
        description=rules.description,
        built_in=RULE_SETS.get(rules.name) is rules,
        dice=rules.dice,
        order=rules.order,
        boxes=[c.name for c in rules.categories],
        labels={c.name: c.label for c in rules.categories},
        upper_boxes=[c.name for c in rules.categories if c.upper_face],
        yahtzee_box=None if rules.yahtzee_box is None else rules.categories[rules.yahtzee_box].name,
        rerolls=rules.rerolls,
        upper_threshold=rules.upper_threshold,
        upper_bonus=rules.upper_bonus,
        yahtzee_bonus=rules.yahtzee_bonus,
        joker=rules.joker,
        **saved,
        start_value=rules.start_value,
        fingerprint=rules.fingerprint,
        possible_points={
            c.name: list(points)
            for c, points in zip(rules.categories, rules.possible_points, strict=True)
        },
    )


@routes.get("/v1/rules", response_model=list[RuleSetOut])
async def rules_list(
    request: Request,
    after: str = Query("", description="the last name of the previous page (its Link header)"),
    limit: int = Query(PAGE, ge=1, le=PAGE, description="rule sets per page"),
) -> Response:
    """The built-in rule sets, then the registered ones by name, a page at a time: a
    ``Link: <...>; rel="next"`` header names the next page while there is one."""
    service = service_of(request)
    page: list[tuple[str, bytes]] = []
    registered_after = after
    if not after or after in RULE_SETS:  # built-ins first, in their order
        names = list(RULE_SETS)
        start = names.index(after) + 1 if after else 0
        page = [(name, _built_in_listed(name)) for name in names[start : start + limit + 1]]
        registered_after = ""
    if len(page) <= limit:  # one more than the page: whether there is a next one
        found = await service.store.registrations(registered_after, limit + 1 - len(page))
        page += zip((name for name, _ in found), await _registered_listed(found), strict=True)
    headers = {}
    if len(page) > limit:
        page = page[:limit]
        url = request.url.include_query_params(after=page[-1][0], limit=limit)
        headers["Link"] = f'<{url}>; rel="next"'
    body = b"[" + b",".join(listed for _, listed in page) + b"]"
    return Response(body, media_type="application/json", headers=headers)


def _listed_json(rules: RuleSet) -> bytes:
    """A rule set's entry of the list, the bytes the app's JSON response would write."""
    content = rule_set_out(rules).model_dump(mode="json", exclude_unset=True)
    return json.dumps(content, allow_nan=False, separators=(",", ":")).encode()


@cache
def _built_in_listed(name: str) -> bytes:
    return _listed_json(RULE_SETS[name])


async def _registered_listed(found: Sequence[tuple[str, bytes]]) -> list[bytes]:
    """The entries of registrations (name, document): those kept, and the others made in a
    thread, off the event loop (one found kept by then, made by a request before this one,
    is not made again), then kept."""
    entries = {document: _listed[document] for _, document in found if document in _listed}
    missing = [document for _, document in found if document not in entries]
    if missing:

        def make() -> list[bytes]:
            return [
                _listed.get(document) or _listed_json(parse_rule_text(document))
                for document in missing
            ]

        made = await anyio.to_thread.run_sync(make, limiter=_listing)
        entries.update(zip(missing, made, strict=True))
    for document, entry in entries.items():
        _keep_listed(document, entry)
    return [entries[document] for _, document in found]


def _keep_listed(document: bytes, entry: bytes) -> None:
    _listed[document] = entry
    _listed.move_to_end(document)
    while len(_listed) > LISTED_KEPT:
        _listed.popitem(last=False)


@routes.post("/v1/rules", response_model=RegisteredOut, status_code=201)
async def register(request: Request, response: Response) -> RegisteredOut:
    """Register a rule-set file (the README's format) under its name, for anyone to name
    later by that name or by its fingerprint. The same rules again: 200 with the same
    fingerprint; a name that holds other rules, or a built-in's: 409; past the registration
    quota: 429. Served with ``--registration operator``, the operator token is required."""
    service = service_of(request)
    if service.settings.registration == "operator":
        authorize(request)
    rules = await _rules_sent(request)
    created = await service.rulebook.register(rules, service.settings.registration_quota)
    if created:  # listed from now on: its entry made here, where it was just parsed
        document = definition_of(rules)
        assert document is not None, "registered, so not a built-in"
        _keep_listed(document, _listed_json(rules))
    else:
        response.status_code = 200
    return RegisteredOut(name=rules.name, fingerprint=rules.fingerprint, created=created)


@routes.post("/v1/rules/preview", response_model=RuleSetOut, response_model_exclude_unset=True)
async def preview(request: Request) -> RuleSetOut:
    """A rule-set file read as ``GET /v1/rules`` would list it, registering nothing: what
    the players' page shows of a rule set it sends inline (where registering needs the
    operator token, or the quota is reached)."""
    return rule_set_out(await _rules_sent(request))


async def _rules_sent(request: Request) -> RuleSet:
    """The rule-set file a request's body holds (413 past the size of one)."""
    body = await request.body()
    if len(body) > MAX_RULE_BYTES:
        raise ApiError(413, "rules", f"a rule set is at most {MAX_RULE_BYTES} bytes")
    return parse_rule_text(body)


@routes.delete("/v1/rules/{name}", response_model=UnregisteredOut)
async def unregister(name: str, request: Request) -> UnregisteredOut:
    """Delete a registration (operator token required); its blocks go too unless a
    built-in or another registration shares them."""
    authorize(request)
    if name in RULE_SETS:
        raise ApiError(409, "name", f"{name} is built in and cannot be deleted")
    service = service_of(request)
    rules, deleted = await service.rulebook.unregister(name, service.queue)
    return UnregisteredOut(name=rules.name, fingerprint=rules.fingerprint, blocks_deleted=deleted)


@routes.get("/v1/rules/{name}/coverage", response_model=CoverageOut)
async def coverage(
    name: str,
    request: Request,
    need_cap: Annotated[
        int | None,
        Query(description="count the rule set's need table up to this cap (1 to 2000) instead"),
    ] = None,
    risk: Annotated[
        str | None,
        Query(
            description="count the rule set's risk table at this risk theta instead: a "
            "number from -0.5 to 0.5 with at most 3 decimals (0: the rule set's own table)"
        ),
    ] = None,
) -> CoverageOut:
    """Blocks solved of total, claims held, and workers alive: for a rule set (built in,
    registered or by fingerprint) or any other game the service knows
    (``dice-of-doom-3x3``); with ``need_cap``, for the rule set's need table; with ``risk``,
    for its risk table."""
    service = service_of(request)
    entry = await game_or_rules(service, name)
    if need_cap is not None and risk is not None:
        raise UserError("give need_cap or risk, not both", "risk")
    if need_cap is not None:
        entry = need_entry_of(entry, need_cap)
    if risk is not None:
        entry = risk_entry_of(entry, risk)
    game = entry.game
    covered = await service.store.coverage(namespace(game))
    queue = service.queue
    return CoverageOut(
        rules=entry.name,
        blocks_total=game.block_count,
        blocks_done=covered.blocks,
        claims_held=covered.claims,
        workers_alive=0 if queue is None else await queue.live_worker_count(),
        solving=service.solving(game.fingerprint),
    )


async def game_or_rules(service: Service, value: str | dict[str, Any]) -> GameEntry:
    """A game of the registry by name, else the rule set a request names or defines."""
    if isinstance(value, str):
        entry = registry().get(value.strip().lower())
        if entry is not None:
            return entry
    return entry_for(await rules_of(service, value))
