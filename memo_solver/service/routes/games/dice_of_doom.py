"""``POST /v1/games/dice-of-doom/advice``: Dice of Doom positions over HTTP.

The same JSON as ``memo-solver advise --game dice-of-doom --json``. A position whose turn
ends only on turn starts the shared memo holds is answered from it; any other is solved on
its own DAG in a worker thread, within the service's deadline (503 and Retry-After past
it, the retry finding the finished work). Bad boards are 422s naming the field, through
the :class:`~memo_solver.games.dice_of_doom.board.DoomError` handler
(:mod:`memo_solver.service.errors`); so is a position past the solver's limit, and that
failure is remembered in the store (:data:`PAST_LIMIT_NAMESPACE`), so that the retries a
503 invites get the 422 at once instead of each starting the doomed solve again, whichever
of the service's processes they reach.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Literal

import anyio
from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field

from memo_solver.core.store import StoreUnavailableError
from memo_solver.games.dice_of_doom.advice import DoomAdvice, from_memo, solve
from memo_solver.games.dice_of_doom.board import MAX_SIZE, DoomError, parse_board, player_index
from memo_solver.games.dice_of_doom.report import analysis_to_json
from memo_solver.games.dice_of_doom.sizes import SIZES, doom_name
from memo_solver.games.dice_of_doom.tree import DoomLimitError, DoomSolver, Position
from memo_solver.service.routes import Routes
from memo_solver.service.service import Codec, service_of, store_key
from memo_solver.service.settings import ApiSettings

PAST_LIMIT_NAMESPACE = "api1:doom-past-limit"
"""The limit's message per (position, stats, limit) whose solve failed at that limit: a
service started with another limit learns its own. Apart from the games' blocks, so
``prune`` empties it; each entry is a line of text, and costs a failed solve to make."""
ANSWER = Codec[dict[str, Any]](
    lambda payload: json.dumps(payload).encode(), lambda data: dict(json.loads(data))
)
"""A solved position's answer as the store keeps it for the other processes (JSON: its
values are fraction strings and floats, which JSON gives back exactly)."""


class DoomAdviceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    board: str = Field(
        max_length=400,
        description="rows separated by '/', each hex owner-dice: 'a-3 b-3 / a-2 b-2'",
        examples=["a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3"],
    )
    to_move: str = Field("a", max_length=8, description="the player to move: a or b")
    captured: int = Field(
        0,
        ge=0,
        le=3 * MAX_SIZE * MAX_SIZE,
        strict=True,  # a JSON number: true or false is not a count (0 or 1 in lax mode)
        description="dice captured so far this turn",
    )
    stats: bool = Field(
        False, description="also count the game tree below (solves the position here)"
    )


class DoomPositionOut(BaseModel):
    board: str
    size: int
    code: int
    player: Literal["a", "b"]
    captured: int


class DoomMoveOut(BaseModel):
    kind: Literal["pass", "attack"]
    text: str
    src: int | None = None
    dst: int | None = None
    value: str = Field(description="for the player making the move: 0, 1/2 or 1")
    value_float: float
    after: DoomPositionOut


class DoomLeavesOut(BaseModel):
    a: int
    b: int
    tie: int


class DoomStatsOut(BaseModel):
    tree_size: int
    depth: int
    positions: int
    calls: int
    leaf_winners: DoomLeavesOut


class DoomAdviceOut(BaseModel):
    position: DoomPositionOut
    value: str = Field(description="for the player to move: 0, 1/2 or 1")
    value_float: float
    game_over: bool
    winners: list[Literal["a", "b"]] | None = Field(
        None, description="when the game is over here: who holds the most hexes"
    )
    best: DoomMoveOut | None = Field(
        None, description="the book's move (the first best); absent when the game is over"
    )
    moves: list[DoomMoveOut]
    stats: DoomStatsOut | None = None
    source: Literal["memo", "solved", "computed"] = Field(
        description="memo: read from the shared memo; solved: on the position's own DAG; "
        "computed: too large for that, so computed on the shared memo, where it stays"
    )


FAMILY = "dice-of-doom"
"""The family these routes serve (its ``--game`` name in the registry)."""


def routes(settings: ApiSettings) -> Routes:
    """The route for one app: its solves within the app's position limit, one at a time."""
    limit = settings.doom_limit
    routes = Routes()
    limiter = anyio.CapacityLimiter(1)

    @routes.post(
        "/v1/games/dice-of-doom/advice",
        response_model=DoomAdviceOut,
        response_model_exclude_none=True,
    )
    async def doom_advice(body: DoomAdviceRequest, request: Request) -> dict[str, Any]:
        """The value of a Dice of Doom position for the player to move, every legal move with
        its value, and the book's move; with ``stats``, the game tree's exact figures."""
        board = parse_board(body.board)
        try:
            player = player_index(body.to_move)
        except DoomError as exc:
            raise DoomError("to_move", exc.message) from None
        position = Position(board, player, body.captured)
        service = service_of(request)
        engine = service.engines.get(doom_name(board.size)) if board.size in SIZES else None

        def answer(advice: DoomAdvice) -> dict[str, Any]:
            return {**analysis_to_json(advice.analysis), "source": advice.source}

        def shown(payload: dict[str, Any]) -> dict[str, Any]:
            return payload if body.stats else {k: v for k, v in payload.items() if k != "stats"}

        if engine is not None and not body.stats:
            # Read the memo on every request (never a kept answer): it fills over time.
            found = await from_memo(position, engine.stored)
            if found is not None:
                return shown(answer(DoomAdvice(found, "memo")))
        question = ("dice-of-doom", position, body.stats, limit)
        past_limit = store_key(question)
        remembered = await service.store.get_many(PAST_LIMIT_NAMESPACE, [past_limit])
        if past_limit in remembered:
            raise DoomLimitError("limit", remembered[past_limit].decode())
        # Tree figures come from the solver alone; without them, a position too large for
        # it is computed on the shared memo (past the deadline: 503, and the work goes on).
        compute = None if engine is None or body.stats else engine.blocks

        async def work() -> dict[str, Any]:
            try:
                advice = await solve(position, DoomSolver(board.size, limit), limiter, compute)
            except DoomLimitError as exc:
                with contextlib.suppress(StoreUnavailableError):  # the 422 stands
                    await service.store.commit(
                        PAST_LIMIT_NAMESPACE, {past_limit: exc.message.encode()}, None
                    )
                raise
            return answer(advice)

        # Shared: a retry after a 503 finds the solve its first request started.
        return shown(await service.run_shared(question, work, ANSWER))

    return routes
