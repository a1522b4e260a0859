"""Rule sets with saved rolls over HTTP: states with a bank (``saved`` at a turn start,
``rolls_left`` with dice) valued and advised inline or registered from a rule file, the
advice saying what becomes of the bank, the rule list saying the rule, and the other game's
fields refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.api_support import api_client, error_of
from support.closed_forms import chance_by_rolls

from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.state import state_from_json, state_to_json
from memo_solver.service.models import StateOut

EXAMPLES = Path(__file__).parent.parent / "examples" / "rules"
YATZY_SAVED = (EXAMPLES / "yatzy-saved.json").read_bytes()
TOL = 1e-12

# One die, two chance boxes: the last turn's value with n rolls has a closed form.
CHANCES: dict[str, Any] = {
    "name": "two-chances",
    "dice": 1,
    "rerolls": 2,
    "saved_rolls": True,
    "boxes": [{"name": "chance", "kind": "chance"}, {"name": "again", "kind": "chance"}],
}
PLAIN: dict[str, Any] = {k: v for k, v in CHANCES.items() if k != "saved_rolls"}


# Yatzy with saved rolls two boxes from the end (cheap cold): every upper box holds 0.
LATE_FILLED = [
    "ones", "twos", "threes", "fours", "fives", "sixes", "one_pair", "two_pairs",
    "three_of_a_kind", "four_of_a_kind", "small_straight", "large_straight", "full_house",
]  # fmt: skip


async def _post(client: httpx.AsyncClient, path: str, rules: object, state: object) -> Any:
    response = await client.post(path, json={"rules": rules, "state": state})
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_turn_start_is_valued_at_its_bank_inline(tmp_path: Path) -> None:
    """The last turn of two chance boxes with ``saved`` in the bank rolls saved + 3 times."""
    async with api_client(tmp_path / "s.sqlite") as client:
        for saved in range(3):  # one box filled: a bank of 0..2 (2 rerolls a turn)
            state = {"filled": ["chance"], "saved": saved}
            answer = await _post(client, "/v1/value", CHANCES, state)
            assert answer["value"] == pytest.approx(float(chance_by_rolls(saved + 3)), abs=TOL)
            assert answer["turn_start_value"] == answer["value"]
        # A 4 with 3 rolls left (a bank of 1 and the turn's 2 rerolls): rerolling beats it.
        rolled = {"filled": ["chance"], "dice": [4], "rolls_left": 3}
        answer = await _post(client, "/v1/value", CHANCES, rolled)
        assert answer["value"] == pytest.approx(float(chance_by_rolls(3)), abs=TOL)
        assert answer["turn_start_value"] == pytest.approx(float(chance_by_rolls(4)), abs=TOL)


async def test_advice_says_what_becomes_of_the_bank_inline(tmp_path: Path) -> None:
    """A keep says the rolls left after it, a score the rolls it carries: all of them
    without a cap, at most ``max_saved`` with one."""
    capped = {**CHANCES, "name": "two-chances-capped", "max_saved": 1}
    state = {"filled": [], "dice": [4], "rolls_left": 2}
    async with api_client(tmp_path / "s.sqlite") as client:
        for rules, carried in ((CHANCES, 2), (capped, 1)):
            advice = await _post(client, "/v1/advice", rules, state)
            keeps = [a for a in advice["actions"] if a["kind"] == "keep"]
            scores = [a for a in advice["actions"] if a["kind"] == "score"]
            assert [a["rolls_left_after"] for a in keeps] == [1]
            assert keeps[0]["words"] == "reroll the die (1 roll left after it)"
            assert {a["carried"] for a in scores} == {carried}
            said = "1 roll" if carried == 1 else f"{carried} rolls"
            assert all(a["words"].endswith(f"and carry {said}") for a in scores)
            assert all("rolls_left_after" not in a for a in scores)
            assert all("carried" not in a for a in keeps)


async def test_a_registered_rule_file_with_saved_rolls_is_advised_by_name(tmp_path: Path) -> None:
    """yatzy-saved registered from its file: late advice by name, the same bytes from the
    fast path and from FastAPI's response model, and the value of every keep and score."""
    async with api_client(tmp_path / "s.sqlite") as client:
        registered = await client.post("/v1/rules", content=YATZY_SAVED)
        assert registered.status_code == 201, registered.text
        state = {"filled": LATE_FILLED, "dice": [3, 3, 3, 5, 6], "rolls_left": 6}
        body = json.dumps({"rules": "yatzy-saved", "state": state}).encode()
        answers = []
        for content_type in ("application/json", "application/json; charset=utf-8"):
            response = await client.post(
                "/v1/advice", content=body, headers={"content-type": content_type}
            )
            assert response.status_code == 200, response.text
            answers.append(response.content)
        assert answers[0] == answers[1]  # the fast path and the response model agree
        advice = json.loads(answers[0])
        for action in advice["actions"]:
            if action["kind"] == "keep":
                assert action["rolls_left_after"] == 5
                assert action["words"].endswith("(5 rolls left after it)")
            else:  # no cap: every roll left is carried (and worth nothing after the last box)
                assert action["carried"] == 6
                assert action["words"].endswith("and carry 6 rolls")
        value = await _post(client, "/v1/value", "yatzy-saved", state)
        assert value["value"] == advice["value"]
        start = await _post(client, "/v1/value", "yatzy-saved", {"filled": LATE_FILLED, "saved": 4})
        assert start["value"] == pytest.approx(advice["turn_start_value"], abs=TOL)


async def test_a_batch_answers_each_state_as_alone(tmp_path: Path) -> None:
    """A batch's entries are the single answers' bytes, a bad state its own error."""
    states: list[Any] = [
        {"filled": ["chance"], "saved": 2},
        {"filled": [], "dice": [3], "rolls_left": 2},
        {"filled": [], "dice": [3], "rerolls_left": 1},
    ]
    async with api_client(tmp_path / "s.sqlite") as client:
        batch = await client.post("/v1/advice/batch", json={"rules": CHANCES, "states": states})
        assert batch.status_code == 200, batch.text
        results = batch.json()["results"]
        for state, result in zip(states[:2], results, strict=False):
            alone = await _post(client, "/v1/advice", CHANCES, state)
            assert result == {"advice": alone}
    assert results[2]["error"]["field"] == "rerolls_left"


async def test_the_rule_list_says_saved_rolls_where_set(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite") as client:
        for document in (YATZY_SAVED, json.dumps(PLAIN).encode()):
            registered = await client.post("/v1/rules", content=document)
            assert registered.status_code == 201, registered.text
        listed = {r["name"]: r for r in (await client.get("/v1/rules")).json()}
        capped = {**CHANCES, "max_saved": 3}
        preview = (await client.post("/v1/rules/preview", json=capped)).json()
    assert listed["yatzy-saved"]["saved_rolls"] is True
    assert "max_saved" not in listed["yatzy-saved"]  # no cap
    assert (preview["saved_rolls"], preview["max_saved"]) == (True, 3)
    for plain in ("two-chances", "yahtzee", "maxi-yatzy"):  # as listed before the rule
        assert "saved_rolls" not in listed[plain]
        assert "max_saved" not in listed[plain]


@pytest.mark.parametrize("path", ["/v1/advice", "/v1/value"])
@pytest.mark.parametrize(
    ("rules", "state", "field"),
    [
        (CHANCES, {"filled": ["chance"], "rerolls_left": 2}, "rerolls_left"),
        (CHANCES, {"filled": ["chance"], "dice": [4], "rerolls_left": 1}, "rerolls_left"),
        (CHANCES, {"filled": ["chance"], "saved": 3}, "saved"),  # past 1 box's 2 rerolls
        ({**CHANCES, "max_saved": 1}, {"filled": ["chance"], "saved": 2}, "saved"),
        (PLAIN, {"filled": ["chance"], "saved": 2}, "saved"),
        (PLAIN, {"filled": ["chance"], "dice": [4], "rolls_left": 1}, "rolls_left"),
    ],
)
async def test_the_other_games_fields_are_a_422_naming_them(
    tmp_path: Path, path: str, rules: dict[str, Any], state: dict[str, Any], field: str
) -> None:
    async with api_client(tmp_path / "s.sqlite") as client:
        response = await client.post(path, json={"rules": rules, "state": state})
        error_of(response, 422, field)


@pytest.mark.parametrize("path", ["/v1/advice", "/v1/value"])
async def test_a_form_sending_every_field_is_answered(tmp_path: Path, path: str) -> None:
    """null is absent, and a bank of 0 is true of every turn of a plain rule set."""
    nulls = {"saved": None, "rerolls_left": None, "rolls_left": None}
    async with api_client(tmp_path / "s.sqlite") as client:
        plain = {"filled": ["chance"], **nulls, "saved": 0, "dice": [4], "rerolls_left": 0}
        assert (await _post(client, path, PLAIN, plain))["value"] == pytest.approx(4.0)
        saved = {"filled": ["chance"], **nulls, "saved": 1, "dice": None}
        answer = await _post(client, path, CHANCES, saved)
        assert answer["value"] == pytest.approx(float(chance_by_rolls(4)), abs=TOL)


def test_a_state_answered_has_the_keys_of_its_rule_set() -> None:
    """``StateOut`` (the state a stats answer echoes) takes what ``state_to_json`` writes
    for either game and writes it back as it was: no ``rerolls_left`` under saved rolls,
    no bank without."""
    for rules, state in (
        (CHANCES, {"filled": ["chance"], "saved": 2}),
        (CHANCES, {"filled": ["chance"], "dice": [4], "rolls_left": 3}),
        (PLAIN, {"filled": ["chance"], "dice": [4], "rerolls_left": 1}),
    ):
        parsed = parse_rule_set(rules)
        written = state_to_json(state_from_json(state, parsed), parsed)
        out = StateOut.model_validate(written).model_dump(mode="json", exclude_unset=True)
        assert out == written
