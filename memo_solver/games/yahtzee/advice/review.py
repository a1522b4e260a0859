"""Rate every decision of a played game against the optimal strategy (``memo-solver review``).

A player wants to know where a game was lost, not just that it was. Every decision (each
keep, and the box) is compared with :func:`memo_solver.games.yahtzee.advice.mean_advice.advise` for
the state it was
taken in: the player's choice, the best choice and the expected points lost (the chosen
action's ``loss``); the final score splits into expected score + skill + luck, skill being
minus the summed losses. The game format, every rule a game is checked against, and the
review's JSON are documented once, in the README ("Reviewing a played game"), so that the
two cannot drift; the tests read the README's example game. :func:`read_game` does all the
checking before any solving, so a bad game costs nothing and the :class:`GameError` names
the first turn and step that go wrong. Under saved rolls a turn may roll as often as its
bank and its own rolls allow, may say the bank it starts with (``saved``, checked against
the rolls the turns before left), and the review says each decision's bank and rolls left.

At a risk (:class:`AtRisk`) the game is graded against the strategy of that risk instead: the
best choice is the risk advice's (:mod:`~memo_solver.games.yahtzee.advice.risk_advice`), each
decision loses the certainty-equivalent points between the best and the chosen action beside
its mean loss, and the worst mistakes are those of the risk. The score split stays the mean
one: it accounts for the points scored, which no risk changes.

One module of about 540 lines, on purpose: the game format, the checks of a game and the
review's JSON are one contract, documented once in the README, and each decision the review
grades is a step the checks walked (a turn's bank, its rolls, its keeps), so they are read
and changed together.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memo_solver.core.engine import Engine
from memo_solver.core.errors import UserError
from memo_solver.games.yahtzee.advice.mean_advice import Action, advise, rolls as rolls_said
from memo_solver.games.yahtzee.advice.risk_advice import advise_risk
from memo_solver.games.yahtzee.rules.dice import FACES
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State, format_state, start_state
from memo_solver.games.yahtzee.solve.scoring import next_turn_start, roll_points

WORST = 3
"""How many of the worst mistakes the report spells out."""
MISTAKE_TOL = 1e-9
"""A decision losing less than this is no mistake: equal choices differ in the last bit."""
_GAME_KEYS = ("rules", "turns")
_TURN_KEYS = ("rolls", "keeps", "box")
_SAVED_TURN_KEYS = ("saved", *_TURN_KEYS)
"""A turn of a saved-rolls game may also say the bank it starts with."""


class GameError(UserError):
    """A game that breaks the rules or the format; the message names the turn and step."""

    field = "game"

    def __init__(self, message: str, turn: int | None = None, step: str | None = None) -> None:
        where = "" if turn is None else f"turn {turn}" + (f", {step}" if step else "")
        super().__init__(f"{where}: {message}" if where else message)
        self.turn, self.step = turn, step


@dataclass(frozen=True)
class Turn:
    """One checked turn: the rolls sorted, the keeps sorted, the box by index."""

    rolls: tuple[tuple[int, ...], ...]
    keeps: tuple[tuple[int, ...], ...]
    box: int
    saved: int = 0
    """The bank the turn starts with (saved rolls; 0 without them)."""


@dataclass(frozen=True)
class AtRisk:
    """Grade (or play, ``play --risk``) by the strategy of risk ``theta``, on its risk table's
    ``engine`` (the mean game's at theta = 0)."""

    engine: Engine
    theta: float


@dataclass(frozen=True)
class Certain:
    """A decision graded at a risk: the certainty equivalents of its chosen and best actions."""

    risk: float
    chosen: float
    best: float

    @property
    def loss(self) -> float:
        return self.best - self.chosen


@dataclass(frozen=True)
class Decision:
    turn: int
    step: str
    """``keep N`` for the keep after roll N, or ``box``."""
    state: State
    chosen: Action
    best: Action
    saved: int = 0
    """The bank the turn started with (saved rolls; 0 without them)."""
    certain: Certain | None = None
    """At a risk: ``best`` is the risk's, and this its certainty-equivalent loss."""

    @property
    def loss(self) -> float:
        """The expected points lost, against the mean advice's best whatever the grading."""
        return self.chosen.loss

    @property
    def grade(self) -> float:
        """What makes a mistake: the certainty-equivalent loss at a risk, else the mean loss."""
        return self.loss if self.certain is None else self.certain.loss

    def words(self, rules: RuleSet) -> str:
        """The mistake as a sentence: where, what was done, what was better, what it cost."""
        assert self.state.dice is not None
        assert self.state.rerolls_left is not None
        faces = " ".join(map(str, self.state.dice))
        left = self.state.rerolls_left
        roll = self.saved + rules.rerolls - left + 1
        where = f"turn {self.turn}, after roll {roll} ({faces})"
        if rules.saved_rolls:
            where = (
                f"turn {self.turn} ({rolls_said(self.saved)} saved), after roll {roll} "
                f"({faces}, {rolls_said(left)} left)"
            )
        if self.certain is None:
            return (
                f"{where}: you chose to {self.chosen.words()}; best was to {self.best.words()} "
                f"(-{self.loss:.4f} expected points)"
            )
        # A move as good for points reads so, not as a loss of -0.0000.
        mean = f"-{self.loss:.4f}" if self.loss > MISTAKE_TOL else "no"
        return (
            f"{where}: you chose to {self.chosen.words()}; best at risk {self.certain.risk:g} "
            f"was to {self.best.words()} (-{self.certain.loss:.4f} certainty-equivalent "
            f"points, {mean} expected points)"
        )

    def to_json(self, rules: RuleSet) -> dict[str, Any]:
        left = self.state.rerolls_left
        bank = (
            {"saved": self.saved, "rolls_left": left}
            if rules.saved_rolls
            else {"rerolls_left": left}
        )
        return {
            "turn": self.turn,
            "step": self.step,
            "state": format_state(self.state, rules),
            "dice": list(self.state.dice or ()),
            **bank,
            "chosen": self.chosen.to_json(),
            "best": self.best.to_json(),
            "loss": self.loss,
            **(
                {}
                if self.certain is None
                else {
                    "chosen_certainty_equivalent": self.certain.chosen,
                    "best_certainty_equivalent": self.certain.best,
                    "risk_loss": self.certain.loss,
                }
            ),
        }


@dataclass(frozen=True)
class Scored:
    turn: int
    box: str
    points: int
    bonus: int
    carried: int | None = None
    """Under saved rolls, the bank the score carries to the next turn."""


@dataclass(frozen=True)
class Review:
    rules: RuleSet
    expected_score: float
    """The value of the empty scorecard: what optimal play scores on average."""
    decisions: tuple[Decision, ...]
    scored: tuple[Scored, ...]
    remaining_value: float
    """The expected points still to come after the last turn played (0 for a whole game)."""
    complete: bool
    worst: tuple[Decision, ...] = field(default=())
    """The decisions losing most by their grade, most first."""
    risk: float | None = None
    """The risk graded at; None: graded for points."""
    certainty_equivalent: float | None = None
    """At a risk: the empty scorecard's certainty equivalent at it."""

    @property
    def banked(self) -> int:
        return sum(s.points + s.bonus for s in self.scored)

    @property
    def final_score(self) -> float:
        """The final score of a whole game; banked points plus the expected rest otherwise."""
        return self.banked + self.remaining_value

    @property
    def total_loss(self) -> float:
        return sum(d.loss for d in self.decisions)

    @property
    def total_risk_loss(self) -> float:
        """At a risk: the certainty-equivalent points lost, summed over the decisions."""
        return sum(d.certain.loss for d in self.decisions if d.certain is not None)

    @property
    def skill(self) -> float:
        return -self.total_loss

    @property
    def luck(self) -> float:
        return self.final_score - self.expected_score + self.total_loss

    def to_json(self) -> dict[str, Any]:
        at_risk = (
            {}
            if self.risk is None
            else {
                "risk": self.risk,
                "certainty_equivalent": self.certainty_equivalent,
                "total_risk_loss": self.total_risk_loss,
            }
        )
        return {
            "rules": self.rules.name,
            **at_risk,
            "turns_played": len(self.scored),
            "complete": self.complete,
            "decisions": [d.to_json(self.rules) for d in self.decisions],
            "boxes": [
                {
                    "turn": s.turn,
                    "box": s.box,
                    "points": s.points,
                    "bonus": s.bonus,
                    **({} if s.carried is None else {"carried": s.carried}),
                }
                for s in self.scored
            ],
            "final_score": self.banked if self.complete else self.final_score,
            "banked": self.banked,
            "remaining_value": self.remaining_value,
            "expected_score": self.expected_score,
            "total_loss": self.total_loss,
            "skill": self.skill,
            "luck": self.luck,
            "worst_mistakes": [
                {
                    "turn": d.turn,
                    "step": d.step,
                    "loss": d.loss,
                    **({} if d.certain is None else {"risk_loss": d.certain.loss}),
                    "words": d.words(self.rules),
                }
                for d in self.worst
            ],
        }


# --- reading and checking a game -----------------------------------------------------------


def read_game(obj: object, rules: RuleSet) -> list[Turn]:
    """Check a decoded game against the format and the rules, before any solving.

    Everything a game can get wrong is found here, without the engine, so a bad game costs
    nothing and the error names the first place it goes wrong.
    """
    if not isinstance(obj, dict):
        raise GameError(f"expected a JSON object with {', '.join(_GAME_KEYS)}, got {_show(obj)}")
    for key in obj:
        if key not in _GAME_KEYS:
            raise GameError(f"unknown key {key!r}; the keys are {', '.join(_GAME_KEYS)}")
    named = obj.get("rules")
    if named is not None:
        if not isinstance(named, str):
            raise GameError(f"rules: expected a rule-set name, got {_show(named)}")
        if named.strip().lower() != rules.name:
            raise GameError(
                f"the game is played under {named!r} but the review runs under {rules.name} "
                f"(review it under rules {named.strip().lower()}: --rules in the CLI)"
            )
    turns = obj.get("turns")
    if not isinstance(turns, list):
        raise GameError(f"turns: expected a list of turns, got {_show(turns)}")
    n_boxes = len(rules.categories)
    checked: list[Turn] = []
    filled: dict[int, int] = {}  # box -> the turn that filled it
    mask = 0
    bank = 0  # saved rolls: what the turns before left
    for number, raw in enumerate(turns, start=1):
        if number > n_boxes:
            raise GameError(
                f"too many turns: {rules.name} has {n_boxes} boxes, so {n_boxes} turns", number
            )
        turn = _read_turn(raw, number, rules, bank)
        bank = rules.carried(bank + rules.rerolls + 1 - len(turn.rolls))
        if turn.box in filled:
            name = rules.categories[turn.box].name
            raise GameError(f"{name} is already filled (turn {filled[turn.box]})", number, "box")
        _check_order(rules, mask, turn, number)
        _check_joker(rules, mask, turn, number)
        filled[turn.box] = number
        mask |= 1 << turn.box
        checked.append(turn)
    return checked


def _read_turn(raw: object, number: int, rules: RuleSet, bank: int) -> Turn:
    """One turn, ``bank`` the rolls the turns before saved (0 without saved rolls)."""
    if not isinstance(raw, dict):
        raise GameError(f"expected an object with rolls, keeps and box, got {_show(raw)}", number)
    keys = _SAVED_TURN_KEYS if rules.saved_rolls else _TURN_KEYS
    for key in raw:
        if key not in keys:
            raise GameError(f"unknown key {key!r}; the keys are {', '.join(keys)}", number)
    said = raw.get("saved", bank)
    if isinstance(said, bool) or said != bank:
        raise GameError(
            f"saved: the turn starts with {rolls_said(bank)} saved by the turns before, "
            f"not {_show(raw['saved'])}",
            number,
        )
    most = bank + rules.rerolls + 1
    rolls_raw = raw.get("rolls")
    if not isinstance(rolls_raw, list) or not rolls_raw:
        raise GameError(f"rolls: expected a list of 1 to {most} rolls", number)
    if len(rolls_raw) > most:
        allowed = f"{rules.rerolls + 1} per turn"
        if rules.saved_rolls:
            own = rules.rerolls + 1
            allowed = f"{most} this turn ({rolls_said(bank)} saved and the turn's {own})"
        raise GameError(
            f"too many rolls: {len(rolls_raw)}, but {rules.name} allows {allowed}",
            number,
            f"roll {most + 1}",
        )
    keeps_raw = raw.get("keeps", [] if len(rolls_raw) == 1 else None)
    if not isinstance(keeps_raw, list):
        raise GameError(
            f"keeps: expected a list of {len(rolls_raw) - 1} keeps (one after each roll but "
            f"the last), got {_show(keeps_raw)}",
            number,
        )
    if len(keeps_raw) != len(rolls_raw) - 1:
        raise GameError(
            f"keeps has {len(keeps_raw)} entries, but {len(rolls_raw)} rolls need "
            f"{len(rolls_raw) - 1} (one after each roll but the last)",
            number,
        )
    rolls: list[tuple[int, ...]] = []
    keeps: list[tuple[int, ...]] = []
    for index, roll_raw in enumerate(rolls_raw, start=1):
        step = f"roll {index}"
        roll = _faces(roll_raw, rules.dice, number, step, "roll")
        if len(roll) != rules.dice:
            raise GameError(f"expected {rules.dice} dice, got {len(roll)}", number, step)
        if keeps:
            kept = keeps[-1]
            if not _contains(roll, kept):
                raise GameError(f"kept {_dice(kept)} but the roll was {_dice(roll)}", number, step)
        rolls.append(roll)
        if index < len(rolls_raw):
            keep = _faces(keeps_raw[index - 1], rules.dice, number, step, "keep")
            if not _contains(roll, keep):
                raise GameError(
                    f"kept {_dice(keep) or 'nothing'}, which is not in the roll {_dice(roll)}",
                    number,
                    step,
                )
            if rules.saved_rolls and len(keep) == rules.dice:
                raise GameError(
                    "kept every die: under saved rolls a roll rerolls at least one die "
                    "(stop and score to save the roll)",
                    number,
                    step,
                )
            keeps.append(keep)
    box_raw = raw.get("box")
    if not isinstance(box_raw, str):
        raise GameError(f"expected a box name, got {_show(box_raw)}", number, "box")
    try:
        box = rules.category_index(box_raw)
    except KeyError as exc:
        raise GameError(str(exc.args[0]), number, "box") from None
    return Turn(tuple(rolls), tuple(keeps), box, bank)


def _faces(raw: object, dice: int, number: int, step: str, what: str) -> tuple[int, ...]:
    if not isinstance(raw, list) or not all(
        isinstance(f, int) and not isinstance(f, bool) for f in raw
    ):
        raise GameError(f"{what}: expected a list of faces, got {_show(raw)}", number, step)
    if len(raw) > dice:
        raise GameError(f"{what}: expected at most {dice} dice, got {len(raw)}", number, step)
    for face in raw:
        if not 1 <= face <= FACES:
            raise GameError(f"{what}: face {face} is outside 1..{FACES}", number, step)
    return tuple(sorted(raw))


def _contains(roll: tuple[int, ...], keep: tuple[int, ...]) -> bool:
    return not Counter(keep) - Counter(roll)


def _check_order(rules: RuleSet, filled: int, turn: Turn, number: int) -> None:
    """A box scored out of turn where the rule set fills its boxes in scorecard order."""
    boxes = rules.open_boxes(filled)
    if turn.box in boxes:
        return
    name = rules.categories[turn.box].name
    raise GameError(
        f"{rules.name} fills its boxes in scorecard order: this turn scores in "
        f"{rules.categories[boxes[0]].name}, not {name}",
        number,
        "box",
    )


def _check_joker(rules: RuleSet, filled: int, turn: Turn, number: int) -> None:
    """A box the Joker rule forbids for a roll of all dice alike.

    Whether a box is allowed depends on which others are open (the forced Joker sends a
    Yahtzee to its upper box while that is open), so the error lists the allowed ones.
    """
    last = turn.rolls[-1]
    boxes = rules.open_boxes(filled)
    roll = rules.universe.roll_index[last]
    legal = [roll_points(rules, filled, box, roll) is not None for box in boxes]
    if legal[boxes.index(turn.box)]:
        return
    allowed = [rules.categories[b].name for b, ok in zip(boxes, legal, strict=True) if ok]
    name = rules.categories[turn.box].name
    raise GameError(
        f"the Joker rule does not allow {name} for {_dice(last)} (allowed: {', '.join(allowed)})",
        number,
        "box",
    )


def _dice(faces: tuple[int, ...]) -> str:
    return " ".join(map(str, faces))


def _show(value: object) -> str:
    """Echo bad input in one short line, however long or deeply nested it was."""
    try:
        shown = json.dumps(value, default=repr)
    except RecursionError:
        shown = f"a {type(value).__name__} nested too deep to show"
    return shown if len(shown) <= 40 else shown[:37] + "..."


# --- the review ------------------------------------------------------------------------------


async def review_game(
    engine: Engine, rules: RuleSet, game: object, risk: AtRisk | None = None
) -> Review:
    """Check the game, then compare each of its decisions with the advice for its state: the
    mean advice on ``engine``, or at a ``risk`` the risk advice."""
    turns = read_game(game, rules)
    start = start_state()
    expected = (await advise(engine, rules, start)).value
    certain = None
    if risk is not None:
        opening = await advise_risk(risk.engine, engine, rules, start, risk.theta)
        certain = opening.certainty_equivalent
    decisions: list[Decision] = []
    scored: list[Scored] = []
    state = start
    for number, turn in enumerate(turns, start=1):
        for index, roll in enumerate(turn.rolls):
            left = turn.saved + rules.rerolls - index
            here = State(state.filled, state.upper, state.yahtzee_bonus, left, roll)
            actions, worth = await _ranked(engine, rules, here, risk)
            best = actions[0]
            if index < len(turn.keeps):
                keep = turn.keeps[index]
                chosen = _pick(actions, "keep", keep)
                step = f"keep {index + 1}"
                graded = _graded(risk, worth, chosen, best)
                decisions.append(Decision(number, step, here, chosen, best, turn.saved, graded))
                continue
            name = rules.categories[turn.box].name
            chosen = _pick(actions, "score", name)
            graded = _graded(risk, worth, chosen, best)
            decisions.append(Decision(number, "box", here, chosen, best, turn.saved, graded))
            scored.append(Scored(number, name, chosen.points, chosen.bonus, chosen.rolls_after))
            state = next_turn_start(rules, here, turn.box, chosen.points)
    remaining = (await advise(engine, rules, state)).value
    worst = sorted(
        (d for d in decisions if d.grade > MISTAKE_TOL), key=lambda d: (-d.grade, d.turn)
    )[:WORST]
    return Review(
        rules=rules,
        expected_score=expected,
        decisions=tuple(decisions),
        scored=tuple(scored),
        remaining_value=remaining,
        complete=state.filled == rules.all_filled,
        worst=tuple(worst),
        risk=None if risk is None else risk.theta,
        certainty_equivalent=certain,
    )


async def _ranked(
    engine: Engine, rules: RuleSet, state: State, risk: AtRisk | None
) -> tuple[tuple[Action, ...], dict[Action, float]]:
    """The state's actions best first, by the mean advice or at a risk by the risk advice's
    certainty equivalents (each action's in the mapping; empty without a risk)."""
    if risk is None:
        return (await advise(engine, rules, state)).actions, {}
    advice = await advise_risk(risk.engine, engine, rules, state, risk.theta)
    ranked = tuple(a.action for a in advice.actions)
    return ranked, {a.action: a.certainty_equivalent for a in advice.actions}


def _graded(
    risk: AtRisk | None, worth: dict[Action, float], chosen: Action, best: Action
) -> Certain | None:
    return None if risk is None else Certain(risk.theta, worth[chosen], worth[best])


def _pick(actions: tuple[Action, ...], kind: str, choice: tuple[int, ...] | str) -> Action:
    """The advice's action for the player's keep (dice) or box (name)."""
    for action in actions:
        if action.kind == kind and (action.keep if kind == "keep" else action.category) == choice:
            return action
    raise AssertionError("a move the game checks let through is not among the legal ones")
