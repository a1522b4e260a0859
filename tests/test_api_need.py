"""Play to reach a target over HTTP: ``need`` (and ``need_cap``) on advice, batch and value,
answered from the need table's own engine, within its own cold budget, with the errors and
the 503s of any other request."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from support.api_support import OPENAPI_PATH, api_client, coverage_of, error_of
from test_api import poll_until_ok

from memo_solver.core.engine import namespace_of, open_engine
from memo_solver.games.yahtzee.advice.need_advice import advise_need
from memo_solver.games.yahtzee.family import entry_for
from memo_solver.games.yahtzee.need_entries import need_entry
from memo_solver.games.yahtzee.questions import NeedQuestion, mean_cone, need_question
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.state import parse_state
from memo_solver.games.yahtzee.solve.need import NeedBeyondCapError, NeedError
from memo_solver.games.yahtzee.solve.need_table import cone_values
from memo_solver.jobs.queue import beat
from memo_solver.service.app import ApiSettings
from memo_solver.stores.memory import MemoryStore

QUICK = ApiSettings(deadline_s=30.0)
TOL = 1e-12

# Three boxes and two dice: every chance below is checked by hand.
TINY: dict[str, Any] = {
    "name": "tiny",
    "dice": 2,
    "boxes": [
        {"name": "sixes", "kind": "upper", "face": 6},
        {"name": "doubles", "kind": "all_alike", "points": 20},
        {"name": "chance", "kind": "chance"},
    ],
}
# Only the doubles box is open (20 points or none) and one reroll is left.
ONE_REROLL = {"filled": ["sixes", "chance"], "dice": [1, 2], "rerolls_left": 1}
FORM_KEYS = {"game_over", "value", "turn_start_value", "actions"}


async def test_advice_with_a_need_gives_every_actions_chance_best_first(tmp_path: Path) -> None:
    """20 points need the two dice alike after one reroll: 1 in 6 whatever is kept, so
    every keep ties and the mean advice's order stands; 21 is past what the box gives."""
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        body = {"rules": TINY, "state": ONE_REROLL, "need": 20}
        response = await client.post("/v1/advice", json=body)
        assert response.status_code == 200, response.text
        answer = response.json()
        assert (answer["need"], answer["cap"]) == (20, 400)
        assert answer["probability"] == pytest.approx(1 / 6, abs=TOL)
        assert answer["value"] == pytest.approx(20 / 6, abs=TOL)
        assert [a["probability"] for a in answer["actions"][:3]] == pytest.approx([1 / 6] * 3)
        mean = (await client.post("/v1/advice", json={**body, "need": None})).json()
        assert set(mean) == FORM_KEYS
        assert [a["words"] for a in answer["actions"]] == [a["words"] for a in mean["actions"]]
        scoring_now = [a for a in answer["actions"] if a["kind"] == "score"]
        assert [a["probability"] for a in scoring_now] == [0.0]  # 1 and 2 are no doubles
        for need, certain in ((21, 0.0), (0, 1.0), (-5, 1.0)):
            got = (await client.post("/v1/advice", json={**body, "need": need})).json()
            assert got["probability"] == certain
            assert {a["probability"] for a in got["actions"]} == {certain}


async def test_value_and_batch_with_a_need_answer_as_advice_does(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        value = await client.post(
            "/v1/value", json={"rules": TINY, "state": ONE_REROLL, "need": 20}
        )
        assert value.status_code == 200, value.text
        assert value.json() == {
            "rules": "tiny",
            "value": pytest.approx(20 / 6, abs=TOL),
            "turn_start_value": pytest.approx(value.json()["turn_start_value"]),
            "need": 20,
            "cap": 400,
            "probability": pytest.approx(1 / 6, abs=TOL),
            "turn_start_probability": pytest.approx(1 - (5 / 6) ** 3, abs=TOL),
        }
        states = [ONE_REROLL, "not a state", {**ONE_REROLL, "rerolls_left": 0}]
        batch = await client.post(
            "/v1/advice/batch", json={"rules": TINY, "states": states, "need": 20}
        )
        assert batch.status_code == 200, batch.text
        first, bad, last = batch.json()["results"]
        assert first["advice"]["probability"] == pytest.approx(1 / 6, abs=TOL)
        assert bad["error"]["field"] == "state"
        assert last["advice"]["probability"] == 0.0
        plain = await client.post("/v1/value", json={"rules": TINY, "state": ONE_REROLL})
        assert set(plain.json()) == {"rules", "value", "turn_start_value"}


async def test_a_form_that_sends_every_field_empty_asks_no_need(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        for fields in ({"need": ""}, {"need": "", "need_cap": ""}, {"need": None}):
            body = {"rules": TINY, "state": ONE_REROLL, **fields}
            response = await client.post("/v1/advice", json=body)
            assert response.status_code == 200, response.text
            assert set(response.json()) == FORM_KEYS
        typed = {"rules": TINY, "state": ONE_REROLL, "need": "20", "need_cap": " 30 "}
        answer = (await client.post("/v1/advice", json=typed)).json()
        assert (answer["need"], answer["cap"]) == (20, 30)


async def test_bad_needs_and_caps_are_422s_naming_the_field(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        late = {"rules": "yahtzee", "state": "open=chance,yahtzee dice=66666 rerolls=0"}
        past_cap = await client.post("/v1/advice", json={**late, "need": 60, "need_cap": 50})
        message = error_of(past_cap, 422, "need")
        assert "cap of 50" in message
        for path in ("/v1/value", "/v1/advice/batch"):
            body = {"rules": "yahtzee", "need": 60, "need_cap": 50}
            body |= {"states": [late["state"]]} if "batch" in path else {"state": late["state"]}
            error_of(await client.post(path, json=body), 422, "need")
        cap = await client.post("/v1/advice", json={**late, "need": 10, "need_cap": 0})
        assert "between 1 and 2000" in error_of(cap, 422, "need_cap")
        for bad in (True, 1.5, "ten", [3]):
            error_of(await client.post("/v1/advice", json={**late, "need": bad}), 422, "need")
        # Past the cap but past the reach too: impossible, not refused.
        beyond = await client.post("/v1/advice", json={**late, "need": 1000, "need_cap": 50})
        assert beyond.json()["probability"] == 0.0


async def test_a_warm_front_door_never_answers_a_need(tmp_path: Path) -> None:
    """The fast paths answer the mean advice only: with the state warm, a need still
    gets its chances."""
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        body = {"rules": TINY, "state": ONE_REROLL}
        for _ in range(2):
            assert (await client.post("/v1/advice", json=body)).status_code == 200
        answer = (await client.post("/v1/advice", json={**body, "need": 20})).json()
        assert answer["probability"] == pytest.approx(1 / 6, abs=TOL)


async def test_a_cold_need_past_its_deadline_is_a_503_and_the_retry_is_warm(
    tmp_path: Path,
) -> None:
    body = {"rules": "yahtzee-lower", "state": "start", "need": 150}
    async with api_client(tmp_path / "s.sqlite", ApiSettings(deadline_s=0.001)) as client:
        first = await client.post("/v1/value", json=body)
        assert "retry shortly" in error_of(first, 503, "state")
        assert first.headers["retry-after"] == "2"
        answer, _ = await poll_until_ok(client, "/v1/value", body, within_s=30)
    rules = RULE_SETS["yahtzee-lower"]
    async with (
        MemoryStore() as store,
        open_engine(entry_for(rules).game, store) as mean,
        open_engine(need_entry(rules, 400).game, store) as need,
    ):
        expected = await advise_need(need, mean, rules, parse_state("start", rules), 150)
    assert answer.json()["probability"] == pytest.approx(expected.probability, abs=TOL)


async def test_a_cold_need_past_the_need_budget_is_refused_naming_it(tmp_path: Path) -> None:
    """The mean's cone of the whole yahtzee-lower is within its budget; its need cone is
    128 blocks of one turn start times 235 needs (the most its seven boxes give), past a
    budget of 10,000."""
    settings = ApiSettings(deadline_s=30.0, need_budget=10_000)
    async with api_client(tmp_path / "s.sqlite", settings) as client:
        body = {"rules": "yahtzee-lower", "state": "start", "need": 100}
        message = error_of(await client.post("/v1/value", json=body), 422, "need")
        assert "30,080 chances" in message
        assert "need budget of 10,000" in message
        assert "precompute --need" in message
        # Certain and impossible needs take no solve, and a late state fits the budget.
        for need in (0, 10_000):
            response = await client.post("/v1/value", json={**body, "need": need})
            assert response.status_code == 200, response.text
        late = {**body, "state": "open=chance dice=12345 rerolls=0", "need": 15}
        assert (await client.post("/v1/value", json=late)).json()["probability"] == 1.0


async def test_a_cold_need_past_the_budget_goes_to_live_workers(redis_url: str) -> None:
    """With a worker alive, the need table's warm job is queued (named by the table's
    fingerprint, the rule set's file stored beside its blocks) and the client told to
    retry."""
    settings = ApiSettings(deadline_s=30.0, need_budget=10_000)
    lower = parse_rule_set(TINY | {"name": "my-lower", "boxes": TINY["boxes"][1:]})
    document = TINY | {"name": "my-lower", "boxes": TINY["boxes"][1:]}
    async with api_client(redis_url, settings) as client:
        service = client.app.state.service  # type: ignore[attr-defined]
        await beat(await service.store.client(), "w1", {"worker": "w1"}, ttl_s=60)
        body = {"rules": "yahtzee-lower", "state": "start", "need": 100}
        response = await client.post("/v1/advice", json=body)
        assert "went to the workers" in error_of(response, 503, "need")
        assert response.headers["retry-after"]
        _, records = await service.queue.recent_jobs()
        (job,) = [record for record in records if record.get("kind") == "warm"]
        fingerprint = need_entry(RULE_SETS["yahtzee-lower"], 400).game.fingerprint
        assert job["rules"] == fingerprint == f"{RULE_SETS['yahtzee-lower'].fingerprint}-need400"
        stored = await service.store.definition(namespace_of(fingerprint))
        assert stored is not None
        assert json.loads(stored)["name"] == "yahtzee-lower"
        # A small rule set sent inline is within the budget: answered here.
        small = await client.post(
            "/v1/value", json={"rules": document, "state": "start", "need": 20}
        )
        assert small.status_code == 200, small.text
        assert service.peek(need_entry(lower, 400)) is not None  # its own engine, in the pool


async def test_coverage_counts_a_rule_sets_need_table_by_its_cap(tmp_path: Path) -> None:
    """An operator sees a need table's coverage as a rule set's: what a cold need question
    solved is counted under its cap, and nothing under another cap."""
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        body = {"rules": TINY, "state": ONE_REROLL, "need": 20, "need_cap": 30}
        assert (await client.post("/v1/value", json=body)).status_code == 200
        fingerprint = entry_for(parse_rule_set(TINY)).game.fingerprint

        coverage = partial(coverage_of, client, fingerprint)

        table = await coverage("?need_cap=30")
        assert table["rules"] == "tiny (need up to 30)"
        assert 0 < table["blocks_done"] <= table["blocks_total"]
        assert (await coverage("?need_cap=40"))["blocks_done"] == 0
        bad = await client.get(f"/v1/rules/{fingerprint}/coverage?need_cap=0")
        error_of(bad, 422, "need_cap")
        doom = await client.get("/v1/rules/dice-of-doom-2x2/coverage?need_cap=30")
        error_of(doom, 422, "rules")


def test_the_openapi_document_describes_the_need_fields() -> None:
    schemas = json.loads(OPENAPI_PATH.read_text())["components"]["schemas"]
    for request in ("StateRequest", "BatchRequest"):
        assert {"need", "need_cap"} <= set(schemas[request]["properties"])
    assert "probability" in schemas["NeedAdviceOut"]["properties"]
    assert "probability" in schemas["ValueOut"]["properties"]


def test_the_family_says_what_a_need_must_solve_and_whether_it_may_be_asked() -> None:
    """The need rules are the family's, in one call the advice route makes: a need of 0 or
    less is certain and one past what the open boxes could score impossible (no solve),
    one past the cap that they could still reach refused, any other the need table's cone,
    weighed in chances (turn starts times needs) where the mean's is in turn starts."""
    lower = RULE_SETS["yahtzee-lower"]
    start = parse_state("start", lower)
    reach = 30 + 30 + 25 + 30 + 40 + 50 + 30  # every lower box at its best, no upper bonus
    for certain_or_impossible in (0, -3, reach + 1):
        assert need_question(lower, start, certain_or_impossible, 50) == NeedQuestion(None)
    past_cap = need_question(lower, start, reach, 50)
    assert past_cap.cone is None
    assert isinstance(past_cap.refusal, NeedBeyondCapError)
    with pytest.raises(NeedError, match="cap"):
        need_question(lower, start, 10, 0)
    mean = mean_cone(lower, start)
    cone = need_question(lower, start, reach, reach).cone
    assert cone is not None
    assert cone.entry is need_entry(lower, reach)
    assert (cone.size, cone.turn_starts) == (cone_values(lower, reach, 0), mean.turn_starts)
    assert (cone.keys, cone.whole, cone.game) == (mean.keys, mean.whole, "yahtzee-lower")
    assert mean.entry is entry_for(lower)
    assert mean.size == mean.turn_starts == lower.cone_turn_starts(0)
