"""Play at a risk over HTTP: ``risk`` on advice, batch and value, answered from the risk
table's own engine, every action's certainty equivalent the brute force's, with the errors of
any other request."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from support import risk_brute_force as brute
from support.api_support import OPENAPI_PATH, api_client, coverage_of, error_of

from memo_solver.games.yahtzee import entry_for
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.service.app import ApiSettings

QUICK = ApiSettings(deadline_s=30.0)
REL = 1e-9

# Three boxes and two dice, as in test_api_need.py.
TINY: dict[str, Any] = {
    "name": "tiny",
    "dice": 2,
    "boxes": [
        {"name": "sixes", "kind": "upper", "face": 6},
        {"name": "doubles", "kind": "all_alike", "points": 20},
        {"name": "chance", "kind": "chance"},
    ],
}
# Sixes and chance open, a 1 and a 6 with one reroll left: the bold keep the 6 for sixes
# or go for doubles, the careful score what they hold.
ONE_REROLL = {"filled": ["doubles"], "dice": [1, 6], "rerolls_left": 1}
FORM_KEYS = {"game_over", "value", "turn_start_value", "actions"}


def named(action: dict[str, Any]) -> str:
    """An action as the brute force names it."""
    if action["kind"] == "keep":
        return "keep " + (" ".join(map(str, action["keep"])) or "nothing")
    return f"score {action['category']}"


@pytest.mark.parametrize("theta", [0.5, 0.05, -0.05, -0.5])
async def test_advice_at_a_risk_gives_every_actions_certainty_equivalent_best_first(
    tmp_path: Path, theta: float
) -> None:
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        body = {"rules": TINY, "state": ONE_REROLL, "risk": theta}
        response = await client.post("/v1/advice", json=body)
        assert response.status_code == 200, response.text
        answer = response.json()
        mean = (await client.post("/v1/advice", json={**body, "risk": None})).json()

    theirs = brute.actions(TINY, theta, {1}, 0, False, (1, 6), 1)
    mine = {named(a): a["certainty_equivalent"] for a in answer["actions"]}
    kept_both = mine.pop("keep 1 6")  # no reroll: the brute force offers only keeps that reroll
    assert mine == pytest.approx(theirs, rel=REL)
    assert kept_both == pytest.approx(max(theirs["score sixes"], theirs["score chance"]), rel=REL)
    ranked = [a["certainty_equivalent"] for a in answer["actions"]]
    assert ranked == sorted(ranked, reverse=True)
    assert answer["risk"] == theta
    assert answer["certainty_equivalent"] == ranked[0]
    assert answer["value"] == mean["value"]
    by_words = {a["words"]: (a["value"], a["loss"]) for a in mean["actions"]}
    assert {a["words"]: (a["value"], a["loss"]) for a in answer["actions"]} == by_words


async def test_value_and_batch_at_a_risk_answer_as_advice_does(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        advice = (
            await client.post("/v1/advice", json={"rules": TINY, "state": "start", "risk": 0.1})
        ).json()
        value = await client.post("/v1/value", json={"rules": TINY, "state": "start", "risk": 0.1})
        assert value.status_code == 200, value.text
        assert value.json() == {
            "rules": "tiny",
            "value": advice["value"],
            "turn_start_value": advice["turn_start_value"],
            "risk": 0.1,
            "certainty_equivalent": advice["certainty_equivalent"],
            "turn_start_certainty_equivalent": advice["turn_start_certainty_equivalent"],
        }
        assert value.json()["certainty_equivalent"] == pytest.approx(
            brute.value(TINY, 0.1, (), 0, False), rel=REL
        )
        states = [ONE_REROLL, "not a state", "start"]
        batch = await client.post(
            "/v1/advice/batch", json={"rules": TINY, "states": states, "risk": "0.1"}
        )
        assert batch.status_code == 200, batch.text
        first, bad, last = batch.json()["results"]
        single = await client.post(
            "/v1/advice", json={"rules": TINY, "state": ONE_REROLL, "risk": 0.1}
        )
        assert first["advice"] == single.json()
        assert bad["error"]["field"] == "state"
        assert last["advice"]["certainty_equivalent"] == advice["certainty_equivalent"]
        plain = await client.post("/v1/value", json={"rules": TINY, "state": ONE_REROLL})
        assert set(plain.json()) == {"rules", "value", "turn_start_value"}


async def test_a_risk_of_0_is_the_mean_and_an_empty_one_no_risk(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        body = {"rules": TINY, "state": ONE_REROLL}
        mean = (await client.post("/v1/advice", json=body)).json()
        zero = (await client.post("/v1/advice", json={**body, "risk": 0})).json()
        assert [a["certainty_equivalent"] for a in zero["actions"]] == [
            a["value"] for a in mean["actions"]
        ]
        for empty in ("", None):
            answer = await client.post("/v1/advice", json={**body, "risk": empty})
            assert set(answer.json()) == FORM_KEYS


async def test_bad_risks_are_422s_naming_the_field(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        body: dict[str, Any] = {"rules": TINY, "state": ONE_REROLL}
        bad_risks: list[Any] = [0.6, -0.501, 0.0005, "bold", True, [0.1], "nan"]
        for bad in bad_risks:
            for path in ("/v1/advice", "/v1/value", "/v1/advice/batch"):
                sent = {"rules": TINY, "risk": bad}
                sent |= {"states": [ONE_REROLL]} if "batch" in path else {"state": ONE_REROLL}
                error_of(await client.post(path, json=sent), 422, "risk")
        both = await client.post("/v1/advice", json={**body, "risk": 0.1, "need": 20})
        assert "not both" in error_of(both, 422, "risk")


async def test_a_warm_front_door_never_answers_a_risk(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        body = {"rules": TINY, "state": ONE_REROLL}
        for _ in range(2):
            assert (await client.post("/v1/advice", json=body)).status_code == 200
        answer = (await client.post("/v1/advice", json={**body, "risk": 0.2})).json()
        assert answer["risk"] == 0.2


async def test_a_review_at_a_risk_grades_each_decision_by_certainty_equivalent(
    tmp_path: Path,
) -> None:
    """Scoring the 1 and 6 in chance at once: a careful player loses nothing (or the brute
    force's best less chance's), and each decision says its loss in certainty-equivalent
    points beside its mean loss; without a risk the review has no risk fields."""
    game = {"turns": [{"rolls": [[1, 6]], "box": "chance"}]}
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        graded = await client.post("/v1/review", json={"rules": TINY, "game": game, "risk": -0.5})
        mean = await client.post("/v1/review", json={"rules": TINY, "game": game})
        for bad in (0.6, "bold", True, 0.0005):
            sent = {"rules": TINY, "game": game, "risk": bad}
            error_of(await client.post("/v1/review", json=sent), 422, "risk")
    assert graded.status_code == 200, graded.text
    theirs = brute.actions(TINY, -0.5, (), 0, False, (1, 6), 2)
    [decision] = graded.json()["decisions"]
    assert decision["chosen_certainty_equivalent"] == pytest.approx(theirs["score chance"], rel=REL)
    assert decision["best_certainty_equivalent"] == pytest.approx(max(theirs.values()), rel=REL)
    assert decision["risk_loss"] == pytest.approx(
        max(theirs.values()) - theirs["score chance"], abs=REL
    )
    assert decision["loss"] == mean.json()["decisions"][0]["loss"]
    assert graded.json()["risk"] == -0.5
    assert graded.json()["certainty_equivalent"] == pytest.approx(
        brute.value(TINY, -0.5, (), 0, False), rel=REL
    )
    assert mean.status_code == 200, mean.text
    assert "risk" not in mean.json()
    assert "risk_loss" not in mean.json()["decisions"][0]


async def test_coverage_counts_a_rule_sets_risk_table_by_its_risk(tmp_path: Path) -> None:
    """An operator sees a risk table's coverage as a rule set's: what a cold question at a
    risk solved is counted under that risk, nothing under another; at 0 it is the mean
    table's."""
    async with api_client(tmp_path / "s.sqlite", QUICK) as client:
        body = {"rules": TINY, "state": ONE_REROLL, "risk": 0.1}
        assert (await client.post("/v1/value", json=body)).status_code == 200
        fingerprint = entry_for(parse_rule_set(TINY)).game.fingerprint

        coverage = partial(coverage_of, client, fingerprint)

        table = await coverage("?risk=0.1")
        assert table["rules"] == "tiny (risk 0.1)"
        assert 0 < table["blocks_done"] <= table["blocks_total"]
        assert (await coverage("?risk=-0.1"))["blocks_done"] == 0
        assert await coverage("?risk=0") == await coverage("")
        for bad in ("0.6", "0.0005", "bold"):
            error_of(await client.get(f"/v1/rules/{fingerprint}/coverage?risk={bad}"), 422, "risk")
        both = await client.get(f"/v1/rules/{fingerprint}/coverage?risk=0.1&need_cap=30")
        assert "not both" in error_of(both, 422, "risk")
        doom = await client.get("/v1/rules/dice-of-doom-2x2/coverage?risk=0.1")
        error_of(doom, 422, "rules")


def test_the_openapi_document_describes_the_risk_fields() -> None:
    schemas = json.loads(OPENAPI_PATH.read_text())["components"]["schemas"]
    for request in ("StateRequest", "BatchRequest", "ReviewRequest"):
        assert "risk" in schemas[request]["properties"]
    assert "risk_loss" in schemas["DecisionOut"]["properties"]
    assert "certainty_equivalent" in schemas["RiskAdviceOut"]["properties"]
    assert "certainty_equivalent" in schemas["ValueOut"]["properties"]
