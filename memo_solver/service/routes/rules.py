"""``/v1/rules``: the rule sets (built in, and registered once by anyone, then named by name
or fingerprint), registration, an operator's deletion, and how much of each game the memo
holds."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Request, Response

from memo_solver.core.engine import namespace
from memo_solver.games.entry import GameEntry
from memo_solver.games.registry import registry
from memo_solver.games.yahtzee.catalog import RULE_SETS
from memo_solver.games.yahtzee.family import entry_for
from memo_solver.games.yahtzee.need_entry import need_entry_of
from memo_solver.games.yahtzee.rule_file import MAX_RULE_BYTES, parse_rule_text
from memo_solver.games.yahtzee.rules import RuleSet
from memo_solver.service.errors import ApiError
from memo_solver.service.inputs import authorize, rules_of
from memo_solver.service.models import CoverageOut, RegisteredOut, RuleSetOut, UnregisteredOut
from memo_solver.service.routes import Routes
from memo_solver.service.service import Service, service_of

routes = Routes()

PAGE = 100
"""Rule sets per page of ``GET /v1/rules`` unless ``limit`` says fewer."""


def rule_set_out(rules: RuleSet) -> RuleSetOut:
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
    response: Response,
    after: str = Query("", description="the last name of the previous page (its Link header)"),
    limit: int = Query(PAGE, ge=1, le=PAGE, description="rule sets per page"),
) -> list[RuleSetOut]:
    """The built-in rule sets, then the registered ones by name, a page at a time: a
    ``Link: <...>; rel="next"`` header names the next page while there is one."""
    service = service_of(request)
    page: list[RuleSet] = []
    registered_after = after
    if not after or after in RULE_SETS:  # built-ins first, in their order
        names = list(RULE_SETS)
        start = names.index(after) + 1 if after else 0
        page = [RULE_SETS[name] for name in names[start : start + limit + 1]]
        registered_after = ""
    if len(page) <= limit:  # one more than the page: whether there is a next one
        page += await service.rulebook.registered(registered_after, limit + 1 - len(page))
    more = len(page) > limit
    page = page[:limit]
    if more:
        url = request.url.include_query_params(after=page[-1].name, limit=limit)
        response.headers["Link"] = f'<{url}>; rel="next"'
    return [rule_set_out(rules) for rules in page]


@routes.post("/v1/rules", response_model=RegisteredOut, status_code=201)
async def register(request: Request, response: Response) -> RegisteredOut:
    """Register a rule-set file (the README's format) under its name, for anyone to name
    later by that name or by its fingerprint. The same rules again: 200 with the same
    fingerprint; a name that holds other rules, or a built-in's: 409."""
    body = await request.body()
    if len(body) > MAX_RULE_BYTES:
        raise ApiError(413, "rules", f"a rule set is at most {MAX_RULE_BYTES} bytes")
    rules = parse_rule_text(body)
    created = await service_of(request).rulebook.register(rules)
    if not created:
        response.status_code = 200
    return RegisteredOut(name=rules.name, fingerprint=rules.fingerprint, created=created)


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
) -> CoverageOut:
    """Blocks solved of total, claims held, and workers alive: for a rule set (built in,
    registered or by fingerprint) or any other game the service knows
    (``dice-of-doom-3x3``); with ``need_cap``, for the rule set's need table."""
    service = service_of(request)
    entry = await game_or_rules(service, name)
    if need_cap is not None:
        entry = need_entry_of(entry, need_cap)
    game = entry.game
    covered = await service.store.coverage(namespace(game))
    queue = service.queue
    return CoverageOut(
        rules=entry.name,
        blocks_total=game.block_count,
        blocks_done=covered.blocks,
        claims_held=covered.claims,
        workers_alive=0 if queue is None else await queue.live_worker_count(),
    )


async def game_or_rules(service: Service, value: str | dict[str, Any]) -> GameEntry:
    """A game of the registry by name, else the rule set a request names or defines."""
    if isinstance(value, str):
        entry = registry().get(value.strip().lower())
        if entry is not None:
            return entry
    return entry_for(await rules_of(service, value))
