"""The hot path of ``POST /v1/advice`` (memo_solver.service.fast) against FastAPI's own handler.

Every request is sent twice: as ``application/json``, which the fast path answers, and as
``application/json; charset=utf-8``, which it leaves to the route's FastAPI handler (body
parsing, response model, encoder). The two answers must be the same bytes with the same
headers, for warm and cold states, before and after the roll, game over included, and for
requests the fast path hands on (bad JSON, bad states, unknown rules, extra keys).
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.api_support import api_client, as_json, late_states
from support.random_states import random_state

from memo_solver.games.yahtzee.advice.mean_advice import Action, Advice
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.service.app import ApiSettings
from memo_solver.service.fast import BatchOut, FastPost, FrontDoor, advice_body

QUICK = ApiSettings(deadline_s=30.0)
FAST = {"content-type": "application/json"}
SLOW = {"content-type": "application/json; charset=utf-8"}


def fast_post(client: httpx.AsyncClient) -> FastPost:
    app = client.app  # type: ignore[attr-defined]
    (route,) = [r for r in app.router.routes if getattr(r, "path", None) == "/v1/advice"]
    assert isinstance(route.app, FastPost)
    return route.app


def answered_fast(client: httpx.AsyncClient) -> int:
    """Requests answered so far by the front door or the route's fast path."""
    app = client.app  # type: ignore[attr-defined]
    assert isinstance(app.front, FrontDoor)
    return app.front.answered + fast_post(client).answered


async def both(client: httpx.AsyncClient, body: bytes) -> tuple[httpx.Response, bool]:
    """The fast path's answer, checked equal to FastAPI's; whether the fast path took it."""
    before = answered_fast(client)
    got = await client.post("/v1/advice", content=body, headers=FAST)
    taken = answered_fast(client) == before + 1
    want = await client.post("/v1/advice", content=body, headers=SLOW)
    assert answered_fast(client) == before + taken  # the charset request goes to FastAPI
    assert (got.status_code, got.content) == (want.status_code, want.content), body
    assert got.headers == want.headers
    return got, taken


async def test_the_fast_path_is_the_response_model_byte_for_byte(tmp_path: Path) -> None:
    rng = random.Random(5)
    cases: list[dict[str, Any]] = []
    for name in ("yahtzee", "yatzy", "yahtzee-free-joker", "yahtzee-no-joker"):
        rules = RULE_SETS[name]
        cases += [{"rules": name, "state": as_json(s, rules)} for s in late_states(rules, rng, 25)]
    lower = RULE_SETS["yahtzee-lower"]
    for _ in range(60):  # a small whole game: early states, cold then warm
        state = random_state(lower, rng, rng.randrange(lower.all_filled), rolled=rng.random() < 0.9)
        cases.append({"rules": "yahtzee-lower", "state": as_json(state, lower)})
    cases += [
        {"state": "start"},  # rules by default
        {"rules": " Yahtzee-Lower ", "state": "start"},
        {"rules": "yahtzee-lower", "state": "open=chance dice=66666 rerolls=0"},
        {"rules": "yahtzee-lower", "state": {"filled": [c.name for c in lower.categories]}},
    ]
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        for case in cases:
            for _ in range(2):  # cold (or warm already), then warm
                response, taken = await both(client, json.dumps(case).encode())
                assert response.status_code == 200, response.text
                assert taken
    over = json.loads(response.content)
    assert over["game_over"] is True


async def test_the_batch_is_the_response_model_byte_for_byte(tmp_path: Path) -> None:
    rng = random.Random(7)
    lower = RULE_SETS["yahtzee-lower"]
    states: list[Any] = [as_json(s, lower) for s in late_states(lower, rng, 40, max_open=6)]
    for bad in ({"filled": ["nope"]}, "bogus", 5, None, "caf\u00e9", "\ud800", {"upper": 7}):
        states.insert(rng.randrange(len(states)), bad)
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        batch = json.dumps({"rules": "yahtzee-lower", "states": states}).encode()
        got = await client.post("/v1/advice/batch", content=batch, headers=FAST)
        entries = []
        for state in states:  # each alone, through FastAPI's handler and response model
            one = await client.post(
                "/v1/advice",
                content=json.dumps({"rules": "yahtzee-lower", "state": state}).encode(),
                headers=SLOW,
            )
            entries.append(
                b'{"advice":%s}' % one.content if one.status_code == 200 else one.content
            )
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/json"
    assert got.content == b'{"results":[%s]}' % b",".join(entries)
    model = BatchOut.model_validate_json(got.content).model_dump(mode="json", exclude_none=True)
    assert json.dumps(model, separators=(",", ":"), allow_nan=False).encode() == got.content


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"[]",
        b"null",
        b'"start"',
        b"\xff\xfe",
        b'{"rules": "yahtzee-lower"}',
        b'{"rules": 1, "state": "start"}',
        b'{"rules": null, "state": "start"}',
        b'{"rules": "nope", "state": "start"}',
        b'{"rules": "\\ud800", "state": "start"}',
        b'{"rules": "yahtzee-lower", "state": "start", "extra": 1}',
        b'{"rules": "yahtzee-lower", "state": null}',
        b'{"rules": "yahtzee-lower", "state": {"upper": NaN}}',
        b'{"rules": "yahtzee-lower", "state": {"dice": [1, 2, 3, 4, 5.0], "rerolls_left": 1}}',
        b'{"rules": "yahtzee-lower", "state": {"filled": ["nope"]}}',
        b'{"rules": "yahtzee-lower", "state": "bogus"}',
        b'{"state": %s}' % (b"[" * 100_000 + b"]" * 100_000),  # too deep for json.loads
        b'{"state": %s}' % (b"[" * 900 + b"]" * 900),  # too deep to echo in the error
    ],
)
async def test_what_the_fast_path_hands_on_is_answered_as_before(
    tmp_path: Path, body: bytes
) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response, taken = await both(client, body)
    assert 400 <= response.status_code < 500, response.text
    assert not taken


async def test_other_content_types_go_to_fastapi(tmp_path: Path) -> None:
    body = json.dumps({"rules": "yahtzee-lower", "state": "start"}).encode()
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        answers = [await client.post("/v1/advice", content=body, headers=FAST)]
        for content_type in ("application/vnd.api+json", "text/plain", None):
            headers = {} if content_type is None else {"content-type": content_type}
            answers.append(await client.post("/v1/advice", content=body, headers=headers))
        assert answered_fast(client) == 1
    assert [a.status_code for a in answers] == [200, 200, 422, 422]
    assert answers[1].content == answers[0].content


def test_advice_body_refuses_what_the_encoder_refuses() -> None:
    for bad in (float("nan"), float("inf")):
        advice = Advice(value=bad, turn_start_value=1.0, actions=())
        with pytest.raises(ValueError, match="JSON compliant"):
            advice_body(advice)
    keep = Action("keep", 2.0, 0.5, keep=(1, 2), rerolled=3)
    score = Action("score", 2.5, 0.0, category="x", label='odd "label"', points=3, bonus=35)
    advice = Advice(value=2.5, turn_start_value=-0.0, actions=(score, keep))
    assert json.loads(advice_body(advice)) == {
        "game_over": False,
        "value": 2.5,
        "turn_start_value": -0.0,
        "actions": [
            {
                "kind": "score",
                "value": 2.5,
                "loss": 0.0,
                "words": 'score 3 in odd "label" (+35 bonus)',
                "category": "x",
                "points": 3,
                "bonus": 35,
            },
            {
                "kind": "keep",
                "value": 2.0,
                "loss": 0.5,
                "words": "keep 1 2 and reroll 3 dice",
                "keep": [1, 2],
            },
        ],
    }


# --- the front door: warm advice before the app's layers -------------------------------------


def front_door(client: httpx.AsyncClient) -> FrontDoor:
    door = client.app.front  # type: ignore[attr-defined]
    assert isinstance(door, FrontDoor)
    return door


def advice_requests(text: str) -> tuple[float, float]:
    """``POST /v1/advice`` 200s counted, and latencies observed, in a metrics scrape."""
    counted = observed = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("route") != "/v1/advice":
                continue
            if sample.name == "memo_solver_requests_total" and sample.labels["status"] == "200":
                counted = sample.value
            if sample.name == "memo_solver_request_seconds_count":
                observed = sample.value
    return counted, observed


async def test_warm_advice_is_answered_at_the_front_door_and_counted_as_before(
    tmp_path: Path,
) -> None:
    cold = json.dumps({"rules": "yahtzee-lower", "state": "open=chance dice=12345 rerolls=2"})
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        door, route = front_door(client), fast_post(client)
        first = await client.post("/v1/advice", content=cold, headers=FAST)
        assert (door.answered, route.answered) == (0, 1)  # cold: the route's fast path
        before = advice_requests((await client.get("/metrics")).text)
        for _ in range(3):
            again = await client.post("/v1/advice", content=cold, headers=FAST)
            assert (again.status_code, again.content) == (200, first.content)
            assert again.headers == first.headers
        after = advice_requests((await client.get("/metrics")).text)
    assert (door.answered, route.answered) == (3, 1)  # warm: the front door
    assert (after[0] - before[0], after[1] - before[1]) == (3, 3)


async def test_the_front_door_leaves_the_rest_to_the_app(tmp_path: Path) -> None:
    body = json.dumps({"rules": "yahtzee-lower", "state": "start"}).encode()
    unknown = body.replace(b"lower", b"lowex")
    exact = ApiSettings(deadline_s=30.0, max_body_bytes=len(body))
    async with api_client(tmp_path / "memo.sqlite", exact) as client:
        door, route = front_door(client), fast_post(client)
        answers = [await client.post("/v1/advice", content=body, headers=FAST)]
        assert (door.answered, route.answered) == (0, 1)  # cold, then warm from here on

        async def streamed() -> AsyncIterator[bytes]:
            yield body[:10]
            yield body[10:]

        answers += [
            await client.post("/v1/advice", content=body + b" ", headers=FAST),
            await client.post("/v1/advice", content=unknown, headers=FAST),
            await client.post("/v1/advice", content=streamed(), headers=FAST),  # chunked
            await client.put("/v1/advice", content=body, headers=FAST),
            await client.post("/v1/advice/", content=body, headers=FAST),
            await client.post("/v1/advice", content=body, headers=SLOW),
        ]
        assert (door.answered, route.answered) == (0, 2)  # the chunked one: the route's
        last = await client.post("/v1/advice", content=body, headers=FAST)
        assert (door.answered, route.answered) == (1, 2)
    assert [a.status_code for a in answers] == [200, 413, 422, 200, 405, 307, 200]
    assert answers[3].content == answers[6].content == last.content == answers[0].content


async def test_an_answer_failing_at_the_front_door_is_the_apps_to_give(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = json.dumps({"rules": "yahtzee-lower", "state": "start"}).encode()

    async def broken(scope: Any, decoded: Any) -> bytes | None:
        raise RuntimeError("a bug")

    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        want = await client.post("/v1/advice", content=body, headers=FAST)
        door = front_door(client)
        door.answer = broken
        got = await client.post("/v1/advice", content=body, headers=FAST)
        assert fast_post(client).answered == 2
    assert (got.status_code, got.content) == (200, want.content)
    assert door.answered == 0
    assert "front door of /v1/advice failed" in caplog.text
