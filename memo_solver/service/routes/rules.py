"""``GET /v1/rules`` and ``GET /v1/rules/{name}/coverage``: the rule sets, and how much of
each game the memo holds."""

from __future__ import annotations

from fastapi import Request

from memo_solver.core.engine import namespace
from memo_solver.games.yahtzee.catalog import RULE_SETS
from memo_solver.service.inputs import game_named
from memo_solver.service.models import CoverageOut, RuleSetOut
from memo_solver.service.routes import Routes
from memo_solver.service.service import service_of

routes = Routes()


@routes.get("/v1/rules", response_model=list[RuleSetOut])
async def rules_list() -> list[RuleSetOut]:
    """The built-in rule sets with their boxes and pinned start values."""
    return [
        RuleSetOut(
            name=r.name,
            description=r.description,
            boxes=[c.name for c in r.categories],
            upper_boxes=[c.name for c in r.categories if c.upper_face],
            yahtzee_box=None if r.yahtzee_box is None else r.categories[r.yahtzee_box].name,
            rerolls=r.rerolls,
            upper_threshold=r.upper_threshold,
            upper_bonus=r.upper_bonus,
            yahtzee_bonus=r.yahtzee_bonus,
            joker=r.joker,
            start_value=r.start_value,
            fingerprint=r.fingerprint,
            possible_points={
                c.name: list(points)
                for c, points in zip(r.categories, r.possible_points, strict=True)
            },
        )
        for r in RULE_SETS.values()
    ]


@routes.get("/v1/rules/{name}/coverage", response_model=CoverageOut)
async def coverage(name: str, request: Request) -> CoverageOut:
    """Blocks solved of total, claims held, and workers alive: for a rule set or any
    other game the service knows (``dice-of-doom-3x3``)."""
    entry = game_named(name)
    service = service_of(request)
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
