"""The hot path of the HTTP service: a route's common case without FastAPI's per-request work.

Warm ``POST /v1/advice`` costs well under a millisecond of CPU, and FastAPI's generic
machinery (body parsing through ``email.message``, dependency solving, validating the
20-odd actions of the answer against the response model, then encoding them) cost more
than the advice itself. :class:`FastPost` takes over the handler of one route (after
routing, so the route's metrics, 405s and exception handlers stay as they are): it parses
a JSON body once with ``json.loads``, as FastAPI does, and asks an ``answer`` function for
the response body. Anything that is not the plain case (another content type, JSON that
does not parse, an ``answer`` of None: a body or state with a problem) goes to the route's
own FastAPI handler with the body replayed, so every error keeps its words and status.
Exceptions the ``answer`` raises (503 after the deadline, store down) reach the app's
exception handlers as the route's own would. Warm advice goes further: the app's
:class:`FrontDoor` answers it before any of the app's layers (routing and middleware cost
as much again), and leaves the rest to the app.

The advice answer is written here twice, on purpose side by side: as the response models
(``AdviceOut``, ``BatchOut`` and their parts: what ``openapi.json`` documents and what
FastAPI's handler validates and encodes when the fast path steps aside), and as
:func:`advice_body` and the ``batch_*`` writers, which give the same bytes directly (same
keys, same order, nulls left out, same float text) for the fast path and for the batch
route's ready response. The two must never differ (a client cannot tell which path
answered); ``tests/test_api_fast.py`` holds them to byte equality.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from json.encoder import encode_basestring_ascii as _str
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memo_solver.games.yahtzee import Action, Advice
from memo_solver.service import metrics

Answer = Callable[[Scope, Any], Awaitable[bytes | None]]
"""Given the scope and the decoded JSON body: the response body (200), or None for the
route's own handler to answer."""

log = logging.getLogger(__name__)
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))
"""As ``AsciiJSONResponse.render``: ASCII, compact, no NaN."""
_JSON = (b"application/json",)


class FastPost:
    """Replaces the handler of ``route`` (a POST taking a JSON body) by ``answer``, with the
    route's own handler behind it for everything ``answer`` leaves."""

    def __init__(self, route: APIRoute, answer: Answer) -> None:
        self.route = route
        self.fallback: ASGIApp = route.app
        self.answer = answer
        self.answered = 0
        """Requests answered here rather than by the route's handler (for the tests)."""

    def install(self) -> FastPost:
        self.route.app = self
        return self

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        messages, body, whole = await _read(receive)
        payload = await _answer(self.answer, scope, body) if whole and _is_json(scope) else None
        if payload is None:
            await self.fallback(scope, _replay(messages, receive), send)
            return
        self.answered += 1
        await _send(send, payload)


class FrontDoor:
    """A route's answers that need nothing of the app's layers, given before all of them.

    Even with :class:`FastPost`, a request crosses about ten ASGI layers (FastAPI's and
    Starlette's error, telemetry and body-limit middleware, the metrics and body limit of
    :mod:`.middleware`, the exception handlers, the router's matching of every route) that
    cost a warm ``POST /v1/advice`` about as much as its advice. The app calls this first
    (:meth:`takes`): it reads the body of a POST to the route's exact path with a JSON
    content type and a Content-Length within ``max_bytes``, and asks ``answer``, which gives
    the body of a 200 only where nothing can go wrong (warm advice: no wait, no store, no
    deadline). It counts what it answers in the route's request metrics, as the metrics
    middleware would. Everything else (another method, content type or size, a chunked
    body, JSON that does not parse, ``answer`` None, or raising) goes to the whole app with
    the body replayed, where the route's :class:`FastPost` and handlers answer as before: no
    error is answered here.
    """

    def __init__(self, route: APIRoute, answer: Answer, max_bytes: int) -> None:
        self.path = route.path
        self.answer = answer
        self.max_bytes = max_bytes
        self.answered = 0
        """Requests answered here rather than by the app (for the tests)."""
        self._observed: tuple[Any, Any] | None = None

    def takes(self, scope: Scope) -> bool:
        """Whether the request is this door's to try: the rest goes straight to the app."""
        return (
            scope["type"] == "http"
            and scope["path"] == self.path
            and scope["method"] == "POST"
            and not scope.get("root_path")
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send, app: ASGIApp) -> None:
        started = time.perf_counter()
        payload = None
        messages: list[Message] = []
        length = _header(scope, b"content-length")
        if length is not None and length.isdigit() and int(length) <= self.max_bytes:
            messages, body, whole = await _read(receive)
            if whole and len(body) <= self.max_bytes and _is_json(scope):
                try:
                    payload = await _answer(self.answer, scope, body)
                except Exception:  # a bug (a warm answer cannot fail): the app's to answer
                    log.exception("the front door of %s failed; the app answers", self.path)
        if payload is None:
            await app(scope, _replay(messages, receive), send)
            return
        self.answered += 1
        await _send(send, payload)
        if self._observed is None:  # bound in the process that serves (metrics' files)
            self._observed = (
                metrics.REQUESTS.labels(self.path, "200"),
                metrics.LATENCY.labels(self.path),
            )
        count, latency = self._observed
        count.inc()
        latency.observe(time.perf_counter() - started)


async def _read(receive: Receive) -> tuple[list[Message], bytes, bool]:
    """A request's messages, its body, and whether the body came whole (not cut short by
    the client going away)."""
    messages: list[Message] = []
    more = True
    while more:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        more = message.get("more_body", False)
    return messages, b"".join(m.get("body", b"") for m in messages), not more


async def _answer(answer: Answer, scope: Scope, body: bytes) -> bytes | None:
    try:
        decoded = json.loads(body)
    except Exception:  # bad JSON, bad bytes, too deep: FastAPI says which
        return None
    return await answer(scope, decoded)


async def _send(send: Send, payload: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-length", str(len(payload)).encode()),
                (b"content-type", b"application/json"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def install_fast_post(app: FastAPI, path: str, answer: Answer) -> FastPost:
    """Put ``answer`` in front of the handler of ``POST path``."""
    return FastPost(post_route(app, path), answer).install()


def post_route(app: FastAPI, path: str) -> APIRoute:
    """The app's route of ``POST path``."""
    for route in app.router.routes:
        if isinstance(route, APIRoute) and route.path == path and "POST" in (route.methods or ()):
            return route
    raise LookupError(f"no POST route {path}")


def _is_json(scope: Scope) -> bool:
    value = _header(scope, b"content-type")
    return value is not None and value.lower() in _JSON


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value  # type: ignore[no-any-return]
    return None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


# --- the advice answer: its models, and the writers of the same bytes ----------------------
#
# Keep these two halves in step: a field added, renamed, reordered or made optional in a
# model below must be written the same way by the functions after them, or the fast path
# answers what the documented model does not (tests/test_api_fast.py fails).


class ActionOut(BaseModel):
    kind: Literal["keep", "score"]
    value: float
    loss: float
    words: str
    keep: list[int] | None = None
    category: str | None = None
    points: int | None = None
    bonus: int | None = None
    rolls_left_after: int | None = Field(
        default=None,
        description="a keep under a rule set with saved rolls: the rolls left after its reroll",
    )
    carried: int | None = Field(
        default=None,
        description="a score under a rule set with saved rolls: the rolls it carries to the "
        "next turn's bank",
    )


class AdviceOut(BaseModel):
    game_over: bool
    value: float
    turn_start_value: float
    actions: list[ActionOut]


class NeedActionOut(ActionOut):
    probability: float = Field(description="the best chance of the need after this action")


class NeedAdviceOut(BaseModel):
    """The answer to a request with a need: every action, best chance first."""

    need: int
    cap: int
    game_over: bool
    probability: float = Field(description="the state's best chance of the need")
    turn_start_probability: float
    value: float
    turn_start_value: float
    actions: list[NeedActionOut]


class RiskActionOut(ActionOut):
    certainty_equivalent: float = Field(
        description="the certainty equivalent at the risk after this action"
    )


class RiskAdviceOut(BaseModel):
    """The answer to a request with a risk: every action, best certainty equivalent first."""

    risk: float
    game_over: bool
    certainty_equivalent: float = Field(description="the state's certainty equivalent")
    turn_start_certainty_equivalent: float
    value: float
    turn_start_value: float
    actions: list[RiskActionOut]


class SolveOut(BaseModel):
    """A whole-game solve the service runs in the background (``POST /v1/solve``), or
    offers to, in a 422 refusing a question past its cold budget."""

    rules: str
    fingerprint: str = Field(description="its progress: GET /v1/rules/{fingerprint}/coverage")
    turn_starts: int = Field(description="the whole game's: what the solve takes")
    blocks_total: int
    blocks_done: int = Field(description="blocks the store held when this was answered")
    cpu_s: float = Field(
        description="about the CPU seconds of the whole solve on one core of this server "
        "(a sample of its blocks timed)"
    )
    store_bytes: int = Field(description="about what the whole game's blocks take in the store")


class ErrorDetail(BaseModel):
    field: str
    message: str
    solve: SolveOut | None = Field(
        default=None,
        description="where the question is past the cold budget and the client may start "
        "the whole game solving: what POST /v1/solve would start",
    )


class BatchItemOut(BaseModel):
    advice: AdviceOut | NeedAdviceOut | RiskAdviceOut | None = None
    error: ErrorDetail | None = None


class BatchOut(BaseModel):
    results: list[BatchItemOut]


def advice_body(advice: Advice) -> bytes:
    """The JSON of ``AdviceOut`` with ``exclude_none`` for this advice, as bytes.

    Written directly (a third faster than building dicts for the encoder): floats as
    ``repr``, as the encoder writes them, and the rest of each action (its words, keep or
    box: a few hundred texts in all) from :func:`_keep_tail` and :func:`_score_tail`; a
    value that is not finite goes to the encoder, which refuses it as the response did.
    """
    floats = [advice.value, advice.turn_start_value]
    parts = []
    for a in advice.actions:
        floats += (a.value, a.loss)
        if a.kind == "keep":  # ActionOut's order: kind, value, loss, words, keep, category, ...
            tail = _keep_tail(a.keep, a.rerolled, a.rolls_after)
        else:
            tail = _score_tail(a.category, a.label, a.points, a.bonus, a.rolls_after)
        parts.append(f'{{"kind":"{a.kind}","value":{a.value!r},"loss":{a.loss!r},{tail}')
    if not all(map(math.isfinite, floats)):
        return _encoded(advice)
    return (
        f'{{"game_over":{"true" if advice.game_over else "false"},"value":{advice.value!r},'
        f'"turn_start_value":{advice.turn_start_value!r},"actions":[{",".join(parts)}]}}'
    ).encode()


@functools.lru_cache(maxsize=4096)
def _keep_tail(keep: tuple[int, ...], rerolled: int, rolls_after: int | None) -> str:
    """A keep's JSON after its loss: its words and dice (462 keeps with six dice), and
    under saved rolls the rolls left after it."""
    words = Action("keep", 0.0, 0.0, keep=keep, rerolled=rerolled, rolls_after=rolls_after).words()
    saved = "" if rolls_after is None else f',"rolls_left_after":{rolls_after!r}'
    return f'"words":{_str(words)},"keep":[{",".join(map(str, keep))}]{saved}}}'


@functools.lru_cache(maxsize=4096)
def _score_tail(category: str, label: str, points: int, bonus: int, rolls_after: int | None) -> str:
    """A score's JSON after its loss: its words, box, points and bonus, and under saved
    rolls the rolls it carries."""
    action = Action(
        "score",
        0.0,
        0.0,
        category=category,
        label=label,
        points=points,
        bonus=bonus,
        rolls_after=rolls_after,
    )
    saved = "" if rolls_after is None else f',"carried":{rolls_after!r}'
    return (
        f'"words":{_str(action.words())},"category":{_str(category)},"points":{points!r},'
        f'"bonus":{bonus!r}{saved}}}'
    )


def batch_advice(advice: Advice) -> bytes:
    """One answer of ``BatchOut.results`` (``BatchItemOut`` without nulls)."""
    return b'{"advice":%s}' % advice_body(advice)


def batch_need(answer: dict[str, object]) -> bytes:
    """One answer with a need or a risk (``NeedAdviceOut``'s or ``RiskAdviceOut``'s JSON)
    of ``BatchOut.results``."""
    return _ENCODER.encode({"advice": answer}).encode()


def batch_error(field: str, message: str) -> bytes:
    """One bad state's entry of ``BatchOut.results``."""
    return _ENCODER.encode({"error": {"field": field, "message": message}}).encode()


def batch_body(results: list[bytes]) -> bytes:
    """``BatchOut`` from its entries."""
    return b'{"results":[%s]}' % b",".join(results)


def _encoded(advice: Advice) -> bytes:
    """The same through the JSON encoder (which raises ValueError for NaN or infinity)."""
    return _ENCODER.encode(
        {
            "game_over": advice.game_over,
            "value": advice.value,
            "turn_start_value": advice.turn_start_value,
            "actions": [_action(a) for a in advice.actions],
        }
    ).encode()


def _action(action: Action) -> dict[str, object]:
    saved = action.rolls_after
    if action.kind == "keep":
        return {
            "kind": "keep",
            "value": action.value,
            "loss": action.loss,
            "words": action.words(),
            "keep": list(action.keep),
            **({} if saved is None else {"rolls_left_after": saved}),
        }
    return {
        "kind": "score",
        "value": action.value,
        "loss": action.loss,
        "words": action.words(),
        "category": action.category,
        "points": action.points,
        "bonus": action.bonus,
        **({} if saved is None else {"carried": saved}),
    }
