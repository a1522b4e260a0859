"""Saved rolls in play: ``simulate`` and ``review`` follow each game's bank.

A turn of a saved-rolls game starts with the rolls the turns before left unused, adds its own,
makes its first roll, and may then reroll while rolls are left or stop and score, carrying the
rest (up to the cap). The simulated moves are checked against the brute force of
``support/saved_brute_force.py`` (no code shared with the solver), the simulated means against
the pinned exact values, the logs against the rule itself, and a review of a simulated game
against advice: the strategy played is the one advised, so it loses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings, strategies as st
from support import rulebook_brute_force, saved_brute_force as brute
from support.api_support import api_client
from support.rule_strategies import tiny_saved_rule_sets

from memo_solver.cli import main as memo_cli
from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.review import GameError, Review, read_game, review_game
from memo_solver.games.yahtzee.analysis.simulate import PolicyCache, simulate
from memo_solver.games.yahtzee.analysis.summary import Strategy, Summary
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.memory import MemoryStore

EXAMPLES = Path(__file__).parent.parent / "examples" / "rules"
FORCED = json.loads((EXAMPLES / "yatzy-forced.json").read_text())
FORCED_SAVED_PINS = {None: 174.0530941844, 2: 146.9735307708}
"""Forced Yatzy with saved rolls by cap (``test_saved_rolls.FORCED_SAVED_PINS``: two
independent computations)."""
YATZY_SAVED_PIN = 280.4109275551
"""``examples/rules/yatzy-saved.json`` (``test_rule_examples``)."""
SIGMAS = 4.0
Log = dict[str, Any]


def forced_saved(cap: int | None) -> dict[str, Any]:
    return dict(FORCED, name="yatzy-forced-saved", saved_rolls=True, max_saved=cap)


def play(
    rules: RuleSet, games: int, seed: int, logs: int = 0, strategy: Strategy = "optimal"
) -> tuple[Summary, list[Log]]:
    """``games`` simulated games on a fresh memory store, the logs of the first ``logs``."""
    played: list[Log] = []

    async def keep(chunk: list[dict[str, object]]) -> None:
        played.extend(chunk)

    async def run() -> Summary:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            cache = PolicyCache(rules, strategy)
            return await simulate(
                engine, cache, games, seed, on_games=keep if logs else None, record=logs
            )

    return anyio.run(run), played


def record_of(rules: RuleSet, log: Log) -> dict[str, Any]:
    """A simulated game as the review reads a game: its rolls, keeps, boxes and banks."""
    turns = [
        {"saved": t["saved"], "rolls": t["rolls"], "keeps": t["keeps"], "box": t["box"]}
        for t in log["turns"]
    ]
    return {"rules": rules.name, "turns": turns}


def review(rules: RuleSet, game: object) -> Review:
    async def run() -> Review:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            return await review_game(engine, rules, game)

    return anyio.run(run)


# --- each simulated move is the brute force's best, by the tie rule --------------------------


def ticks(value: float) -> int:
    """Values equal to 1e-9 are tied (the tie rule)."""
    return round(value * 1e9)


def tie_rule_best(document: dict[str, Any], named: dict[str, float]) -> str:
    """Among the actions of the best value to 1e-9: scoring now, in the first box in
    scorecard order; else the keep of the most dice, then the first (lowest faces)."""
    top = max(ticks(v) for v in named.values())
    tied = [action for action, v in named.items() if ticks(v) == top]
    order = [box["name"] for box in document["boxes"]]
    scores = [action.removeprefix("score ") for action in tied if action.startswith("score ")]
    if scores:
        return "score " + min(scores, key=order.index)
    keeps = [() if a == "keep nothing" else tuple(map(int, a.split()[1:])) for a in tied]
    return rulebook_brute_force.keep_name(min(keeps, key=lambda kept: (-len(kept), kept)))


def check_moves(document: dict[str, Any], logs: Sequence[Log]) -> int:
    """Walk each logged game with the brute force's bookkeeping; every move is its best by
    the tie rule, worth the best value to 1e-9. Returns how many moves were checked."""
    game = rulebook_brute_force.game_of(document)
    order = [box["name"] for box in document["boxes"]]
    rerolls = document.get("rerolls", 2)
    moves = 0
    for log in logs:
        filled: frozenset[int] = frozenset()
        upper, fifty, bank = 0, False, 0
        for turn in log["turns"]:
            assert turn["saved"] == bank
            for i, dice in enumerate(turn["rolls"]):
                left = bank + rerolls - i
                named = brute.actions(document, filled, upper, fifty, tuple(dice), left)
                if i < len(turn["keeps"]):
                    move = rulebook_brute_force.keep_name(tuple(turn["keeps"][i]))
                else:
                    move = f"score {turn['box']}"
                assert move == tie_rule_best(document, named), (turn, i, named)
                assert named[move] == pytest.approx(max(named.values()), abs=1e-9)
                moves += 1
            box = order.index(turn["box"])
            last = tuple(sorted(turn["rolls"][-1]))
            points = rulebook_brute_force.legal_points(game, filled, last)[box]
            assert turn["points"] == points
            _, (filled, upper, fifty) = rulebook_brute_force.scored(
                game, filled, upper, fifty, last, box, points
            )
            left = bank + rerolls - (len(turn["rolls"]) - 1)
            cap = document.get("max_saved")
            bank = left if cap is None else min(left, cap)
            assert turn["carried"] == bank
    return moves


@settings(max_examples=25, deadline=None)
@given(tiny_saved_rule_sets(joker=True), st.integers(0, 2**16))
def test_every_simulated_move_is_the_brute_forces_best_by_the_tie_rule(
    document: dict[str, Any], seed: int
) -> None:
    """Tiny rule sets with saved rolls (1-3 dice, 1-3 boxes, free and forced order, caps
    0..4 or none): every keep and every box of a few games, whatever the bank."""
    _, logs = play(parse_rule_set(document), 6, seed, logs=6)
    assert check_moves(document, logs) >= 6


# --- the mean, the seed, the logs --------------------------------------------------------------


@pytest.mark.parametrize("cap", list(FORCED_SAVED_PINS))
def test_the_mean_of_forced_yatzy_with_saved_rolls_is_the_exact_mean(cap: int | None) -> None:
    """20,000 games: a standard error of about 0.27 points, a wrong choice moves it more."""
    summary, _ = play(parse_rule_set(forced_saved(cap)), 20_000, seed=5)
    assert summary.exact_mean == pytest.approx(FORCED_SAVED_PINS[cap], abs=1e-9)
    assert abs(summary.mean - FORCED_SAVED_PINS[cap]) <= SIGMAS * summary.se


@pytest.mark.full
def test_the_mean_of_yatzy_with_saved_rolls_is_the_exact_mean() -> None:
    """The free-order game of ``examples/rules/yatzy-saved.json``: the whole solve (about 41
    CPU s) and a policy for each of its 32,767 playable blocks dominate; 4,000 games then
    take seconds, with a standard error of about 0.6 points."""
    rules = parse_rule_set(json.loads((EXAMPLES / "yatzy-saved.json").read_text()))
    summary, _ = play(rules, 4_000, seed=11)
    assert summary.exact_mean == pytest.approx(YATZY_SAVED_PIN, abs=1e-9)
    assert abs(summary.mean - YATZY_SAVED_PIN) <= SIGMAS * summary.se


def test_the_same_seed_plays_the_same_saved_games() -> None:
    rules = parse_rule_set(forced_saved(None))
    first, logs = play(rules, 300, seed=9, logs=300)
    again, logs_again = play(rules, 300, seed=9, logs=300)
    other, _ = play(rules, 300, seed=10)
    assert logs == logs_again
    assert (first.histogram == again.histogram).all()
    assert first.mean != other.mean


@pytest.mark.parametrize("cap", [None, 2, 0])
def test_a_logged_game_keeps_the_rule_of_the_bank(cap: int | None) -> None:
    """Each turn makes its first roll, rerolls at least one die at a time while rolls are
    left, and carries what is left, never more than the cap; the first bank is empty."""
    rules = parse_rule_set(forced_saved(cap))
    _, logs = play(rules, 200, seed=2, logs=200)
    assert len(logs) == 200
    for log in logs:
        bank = 0
        for number, turn in enumerate(log["turns"]):
            assert turn["saved"] == bank
            most = number * rules.rerolls  # each turn before saved at most its rerolls
            assert 0 <= bank <= (most if cap is None else min(most, cap))
            assert len(turn["rolls"]) >= 1
            assert turn["rolls_left"] == [
                bank + rules.rerolls - i for i in range(len(turn["rolls"]))
            ]
            assert turn["rolls_left"][-1] >= 0
            assert len(turn["keeps"]) == len(turn["rolls"]) - 1
            assert all(len(kept) < rules.dice for kept in turn["keeps"])
            bank = turn["rolls_left"][-1] if cap is None else min(turn["rolls_left"][-1], cap)
            assert turn["carried"] == bank
            assert "rerolls_left" not in turn


def test_greedy_never_rerolls_and_carries_every_roll() -> None:
    rules = parse_rule_set(forced_saved(None))
    _, logs = play(rules, 5, seed=1, logs=5, strategy="greedy")
    for log in logs:
        for number, turn in enumerate(log["turns"]):
            assert len(turn["rolls"]) == 1
            assert turn["saved"] == number * rules.rerolls


# --- review -----------------------------------------------------------------------------------


@pytest.mark.parametrize("cap", [None, 2])
def test_a_simulated_game_reviewed_loses_nothing(cap: int | None) -> None:
    rules = parse_rule_set(forced_saved(cap))
    _, logs = play(rules, 3, seed=4, logs=3)
    for log in logs:
        result = review(rules, record_of(rules, log))
        assert result.complete
        assert result.banked == log["score"]
        assert result.total_loss == pytest.approx(0.0, abs=1e-9)
        assert all(d.chosen.words() == d.best.words() for d in result.decisions)
        shown = result.to_json()
        assert [d["saved"] for d in shown["decisions"] if d["step"] == "box"] == [
            t["saved"] for t in log["turns"]
        ]
        assert [b["carried"] for b in shown["boxes"]] == [t["carried"] for t in log["turns"]]
        assert all("rerolls_left" not in d for d in shown["decisions"])


def test_a_review_says_the_bank_in_words() -> None:
    """Scoring Ones at once with five dice 1 1 1 1 1 is best; rerolling them loses."""
    rules = parse_rule_set(forced_saved(None))
    game = {
        "turns": [
            {"rolls": [[1, 1, 1, 1, 1], [1, 1, 1, 1, 2]], "keeps": [[1, 1, 1, 1]], "box": "ones"},
            {"saved": 1, "rolls": [[2, 2, 3, 4, 5]], "box": "twos"},
        ]
    }
    result = review(rules, game)
    worst = result.worst[0]
    assert worst.turn == 1
    assert worst.words(rules).startswith(
        "turn 1 (no rolls saved), after roll 1 (1 1 1 1 1, 2 rolls left): you chose to "
        "keep 1 1 1 1 and reroll 1 die (1 roll left after it); best was to score 5 in Ones "
        "and carry 2 rolls"
    )
    last = result.decisions[-1]
    assert last.saved == 1
    assert last.to_json(rules)["rolls_left"] == 3
    assert result.to_json()["boxes"][1]["carried"] == 3


BAD_GAMES: dict[str, tuple[list[dict[str, Any]], str]] = {
    "a roll when none is left": (
        [{"rolls": [[1, 2, 3, 4, 5]] * 4, "keeps": [[1]] * 3, "box": "ones"}],
        "turn 1, roll 4: too many rolls: 4, but yatzy-forced-saved allows 3 this turn "
        "(no rolls saved and the turn's 3)",
    ),
    "a bank that does not match": (
        [
            {"rolls": [[1, 2, 3, 4, 5]], "box": "ones"},
            {"saved": 1, "rolls": [[2, 2, 3, 4, 5]], "box": "twos"},
        ],
        "turn 2: saved: the turn starts with 2 rolls saved by the turns before, not 1",
    ),
    "every die kept": (
        [{"rolls": [[1, 2, 3, 4, 5]] * 2, "keeps": [[1, 2, 3, 4, 5]], "box": "ones"}],
        "turn 1, roll 1: kept every die: under saved rolls a roll rerolls at least one die "
        "(stop and score to save the roll)",
    ),
}


@pytest.mark.parametrize(("turns", "message"), BAD_GAMES.values(), ids=list(BAD_GAMES))
def test_a_bad_saved_game_is_refused_naming_the_move(
    turns: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(GameError) as caught:
        read_game({"turns": turns}, parse_rule_set(forced_saved(None)))
    assert str(caught.value) == message
    assert caught.value.field == "game"


def test_a_later_turn_may_roll_its_saved_rolls_too() -> None:
    """Two turns scored after one roll leave 4 rolls: the third turn may roll 7 times."""
    rules = parse_rule_set(forced_saved(None))
    quick = [{"rolls": [[6, 6, 6, 6, 6]], "box": box} for box in ("ones", "twos")]
    seven = {"rolls": [[1, 1, 2, 4, 5]] * 7, "keeps": [[1, 1]] * 6, "box": "threes"}
    turns = read_game({"turns": [*quick, seven]}, rules)
    assert [t.saved for t in turns] == [0, 2, 4]
    eight = {"rolls": [[1, 1, 2, 4, 5]] * 8, "keeps": [[1, 1]] * 7, "box": "threes"}
    with pytest.raises(GameError, match="turn 3, roll 8: too many rolls: 8"):
        read_game({"turns": [*quick, eight]}, rules)


def test_the_bank_key_is_refused_without_saved_rolls() -> None:
    game = {"turns": [{"saved": 0, "rolls": [[1, 2, 3, 4, 5]], "box": "ones"}]}
    with pytest.raises(GameError, match="unknown key 'saved'; the keys are rolls, keeps, box"):
        read_game(game, parse_rule_set(FORCED))


# --- the CLI and the API ----------------------------------------------------------------------


def test_the_cli_simulates_and_reviews_a_saved_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process: ``simulate --json --log``, then ``review`` of a logged game."""
    rules_file = tmp_path / "forced-saved.json"
    rules_file.write_text(json.dumps(forced_saved(None)))
    store = tmp_path / "store.sqlite3"
    log = tmp_path / "games.jsonl"
    common = ["--store", str(store)]
    tail = ["--rules-file", str(rules_file), "--json"]
    args = ["simulate", "--games", "4", "--seed", "3", "--log", str(log), "--show"]
    assert memo_cli.main([*common, *args, *tail]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["games"] == 4
    assert payload["game"]["turns"][1]["saved"] == payload["game"]["turns"][0]["carried"]
    games = [json.loads(line) for line in log.read_text().splitlines()]
    game = tmp_path / "game.json"
    game.write_text(json.dumps(record_of(parse_rule_set(forced_saved(None)), games[0])))
    assert memo_cli.main([*common, "review", str(game), *tail]) == 0
    reviewed = json.loads(capsys.readouterr().out)
    assert reviewed["total_loss"] == pytest.approx(0.0, abs=1e-9)
    assert reviewed["final_score"] == games[0]["score"]
    assert memo_cli.main([*common, *args[:5], "--show", "--rules-file", str(rules_file)]) == 0
    assert "saved" in capsys.readouterr().out


async def test_the_api_reviews_a_saved_game() -> None:
    game = {"turns": [{"rolls": [[1, 2, 3, 4, 5]], "box": "ones"}]}
    async with api_client(lambda: MemoryStore()) as client:
        response = await client.post("/v1/review", json={"rules": forced_saved(None), "game": game})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["decisions"][0]["saved"] == 0
    assert body["decisions"][0]["rolls_left"] == 2
    assert body["boxes"][0]["carried"] == 2


def test_a_bounded_cache_plays_the_same_saved_games() -> None:
    """A cache bound far below the policies the games need (a late block's is hundreds of
    KiB: a byte per rolls left, roll and upper total) drops and rebuilds them: the games are
    the same, the bound holds."""
    rules = parse_rule_set(forced_saved(None))
    _, logs = play(rules, 50, seed=6, logs=50)
    bound = 64 << 10
    played: list[Log] = []

    async def keep(chunk: list[dict[str, object]]) -> None:
        played.extend(chunk)

    async def run() -> PolicyCache:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            cache = PolicyCache(rules, max_bytes=bound)
            await simulate(engine, cache, 50, 6, on_games=keep, record=50)
            return cache

    cache = anyio.run(run)
    assert cache.nbytes <= bound
    assert played == logs
