"""The interactive table: type your dice, get advice, confirm a move, keep the scorecard.

It reads plain lines, so it works the same typed by hand or scripted on standard input
(one answer per line). Bad answers are explained and asked again; the game never ends on
a typo, and ``undo`` takes back the last decision (dice typed, dice kept, box scored).
``quit`` or the end of input (Ctrl-D) stops the game, Ctrl-C interrupts it at once. With
``--json`` every decision is one JSON line instead of words and prompts.

With a target (``--target T``) the moves are ranked by their best chance of a final score
of at least T: the need of each step is T less the score banked so far, and each move shows
its chance beside its expected points. At a risk (``--risk THETA``) they are ranked by their
certainty equivalent at theta, which each move shows beside its expected points, as
``advise --risk`` does.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, replace
from typing import TextIO

import anyio
from anyio.from_thread import BlockingPortal

from memo_solver.cli.table_words import HELP, QUIT, UNDO, cost_mark, did_you_mean
from memo_solver.core.engine import Engine
from memo_solver.games.yahtzee import (
    Action,
    Advice,
    AtRisk,
    RuleSet,
    State,
    StateError,
    advise,
    advise_need,
    advise_risk,
    every_die,
    example_dice,
    first_roll,
    next_turn_start,
    number_word,
    rolls,
    start_state,
)

_SHOWN = 6
ALL = ("all",)
"""The table's own word beside quit, help and undo, read before dice and box names (no box
is called any of them)."""
HELP_TEXT = """\
  Type the dice you rolled, like 12226. Then choose a move:
    Enter        the best move
    keep 222     keep those dice and reroll the others ('keep none' rerolls them all)
    a box name   score the dice there, e.g. 'full house' or 'chance'
  and at any question:
    all          every move with what it is worth, not only the best few
    undo         take back the last decision (dice typed, dice kept, box scored)
    help         this list
    quit         stop the game (Ctrl-D does too; Ctrl-C interrupts at once)"""


class _StoppedError(Exception):
    """The player stopped the game: ``quit``, or the end of input."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _UndoError(Exception):
    """The player asked to take back the last decision."""


@dataclass(frozen=True)
class _Point:
    """Where the game stands when the player is asked something: what ``undo`` returns to.

    ``state.dice`` is None when the next roll of a turn is to be typed; ``kept`` is set
    when the dice after a reroll are (they must include the kept ones); otherwise the
    dice are known and the player chooses a move.
    """

    state: State
    total: int
    turn: int
    kept: tuple[int, ...] | None = None


class _Lines:
    """Lines of a file, each read in a daemon thread when the game asks for one.

    Waiting for the player must not block the event loop: there, Ctrl-C is only noticed at
    the next await, after the next Enter, which played the best move. A thread blocked in
    ``readline`` cannot be interrupted, and only a daemon one lets the process leave
    without waiting for one more line.
    """

    def __init__(self, infile: TextIO, portal: BlockingPortal) -> None:
        self._infile = infile
        self._portal = portal
        self._asked = threading.Semaphore(0)
        self._send, self._receive = anyio.create_memory_object_stream[str](1)
        threading.Thread(target=self._pump, name="play input", daemon=True).start()

    def _pump(self) -> None:
        while self._asked.acquire():
            line = self._infile.readline()
            try:
                self._portal.call(self._send.send, line)
            except RuntimeError:  # the game is over (the portal is closed)
                return
            if not line:
                return

    async def readline(self) -> str:
        self._asked.release()
        return await self._receive.receive()


@dataclass(frozen=True)
class Target:
    """Play for a final score of at least ``score``, on the need table's ``engine``."""

    engine: Engine
    score: int


@dataclass
class _Table:
    rules: RuleSet
    lines: _Lines
    out: TextIO
    as_json: bool
    target: Target | None = None
    risk: AtRisk | None = None

    def say(self, text: str) -> None:
        if not self.as_json:
            print(text, file=self.out, flush=True)

    def emit(self, payload: dict[str, object]) -> None:
        if self.as_json:
            print(json.dumps(payload), file=self.out, flush=True)

    async def ask(self, prompt: str) -> str:
        """The player's answer; ``help`` is answered here, the other commands raised."""
        while True:
            if not self.as_json:
                print(prompt, end="", file=self.out, flush=True)
            line = await self.lines.readline()
            if line == "":
                raise _StoppedError("end of input")
            answer = line.strip()
            word = answer.lower()
            if word in QUIT:
                raise _StoppedError("quit")
            if word in UNDO:
                raise _UndoError
            if word not in HELP:
                return answer
            self.say(HELP_TEXT)

    def reject(self, field: str, message: str) -> None:
        """Explain a bad answer (a JSON error line for programs) before asking again."""
        if self.as_json:
            self.emit({"error": {"field": field, "message": message}})
        else:
            self.say(f"  {message}")

    async def ask_dice(self, prompt: str, kept: tuple[int, ...] = ()) -> tuple[int, ...]:
        while True:
            answer = await self.ask(prompt)
            if answer.lower() in ALL:
                self.reject("dice", "type the dice first: the moves depend on them")
                continue
            count = self.rules.dice
            try:
                faces = parse_faces(answer, count)
            except StateError as exc:
                self.reject(
                    "dice", f"{exc.message}; type {_faces(count)} like {example_dice(count)}"
                )
                continue
            if not _contains(faces, kept):
                self.reject(
                    "dice",
                    f"you kept {' '.join(map(str, kept))}: those dice must be among the "
                    f"{number_word(count)}",
                )
                continue
            return faces


def _rerolls(rules: RuleSet) -> str:
    """What a turn counts down, in the rule set's words: rolls under saved rolls."""
    return "rolls" if rules.saved_rolls else "rerolls"


def _faces(count: int) -> str:
    return f"{number_word(count)} {'face' if count == 1 else 'faces'}"


def parse_faces(text: str, count: int | None) -> tuple[int, ...]:
    digits = [c for c in text if not c.isspace() and c != ","]
    if not all(c in "123456" for c in digits):
        raise StateError("dice", f"{text!r} is not a list of faces 1..6")
    if count is not None and len(digits) != count:
        raise StateError("dice", f"expected {count} dice, got {len(digits)}")
    return tuple(sorted(int(c) for c in digits))


def _contains(roll: tuple[int, ...], kept: tuple[int, ...]) -> bool:
    rest = list(roll)
    for face in kept:
        if face not in rest:
            return False
        rest.remove(face)
    return True


async def _choose(
    table: _Table, advice: Advice, chances: dict[Action, float], state: State
) -> Action:
    """Ask until the player names a legal move; Enter takes the best one."""
    while True:
        answer = await table.ask(
            "Your move (Enter = best; 'keep 222', 'keep none'; a box name; or 'help'): "
        )
        if not answer:
            return advice.actions[0]
        if answer.lower() in ALL:
            _show_advice(table, advice, chances, len(advice.actions))
            continue
        words = answer.split(maxsplit=1)
        if words[0].lower() == "keep":
            if not state.rerolls_left:
                table.reject("choice", f"no {_rerolls(table.rules)} left: score the dice in a box")
                continue
            if len(words) == 1:
                table.reject(
                    "choice", "say which dice to keep: 'keep 222', or 'keep none' to reroll all"
                )
                continue
            try:
                kept = () if words[1].lower() == "none" else parse_faces(words[1], None)
            except StateError as exc:
                table.reject("choice", exc.message)
                continue
            match = [a for a in advice.actions if a.kind == "keep" and a.keep == kept]
            if not match:
                table.reject("choice", f"{' '.join(map(str, kept))} is not among your dice")
                continue
            return match[0]
        try:
            name = table.rules.categories[table.rules.category_index(answer)].name
        except KeyError:
            name = ""
        match = [a for a in advice.actions if a.kind == "score" and a.category == name]
        if match:
            return match[0]
        table.reject("choice", _not_a_move(answer, advice, table.rules, state))


def _not_a_move(answer: str, advice: Advice, rules: RuleSet, state: State) -> str:
    """Why ``answer`` is no move, with the open boxes in the scorecard's order and the word
    it was likely meant to be (``kep 3456``: ``keep 3456``)."""
    usable = {a.category for a in advice.actions if a.kind == "score"}
    legal = [c.name for c in rules.categories if c.name in usable]
    words = [*legal, *HELP, *ALL, *QUIT, *UNDO] + (["keep"] if state.rerolls_left else [])
    # 0.75: one letter left out or swapped in a short word ("kep", "sixs"), not any word
    # sharing a few letters ("bogus" and "fours" are 0.6 alike).
    return (
        f"{answer!r} is not an open box you may use now (choose from: {', '.join(legal)})"
        + did_you_mean(answer, words, cutoff=0.75)
    )


def _show_advice(
    table: _Table, advice: Advice, chances: dict[Action, float], shown: int = _SHOWN
) -> None:
    """The best moves (all with ``shown`` large); with a target or a risk, ranked by
    ``chances`` (the chance of the target, or the certainty equivalent at the risk)."""
    best = advice.actions[0]
    for i, action in enumerate(advice.actions[:shown]):
        if chances:
            lost = chances[best] - chances[action]
            if table.risk is None:
                mark = cost_mark(i == 0, lost < 5e-7, f"{lost:.4f}")
                chance = f"chance {chances[action]:.6f}, "
            else:  # certainty equivalents are points: marked as the mean's losses are
                mark = cost_mark(i == 0, lost < 0.005, f"{lost:.2f}")
                chance = f"certain {chances[action]:8.3f}, "
        else:
            mark = cost_mark(i == 0, action.loss < 0.005, f"{action.loss:.2f}")
            chance = ""
        table.say(f"  {mark:>7}  {action.words():<38} {chance}expect {action.value:8.3f} more")
    if len(advice.actions) > shown:
        more = len(advice.actions) - shown
        table.say(f"  ... and {more} more move{'s' if more > 1 else ''} ('all' shows them)")


async def _decide(table: _Table, engine: Engine, point: _Point) -> _Point:
    """Show where the game stands, ask for the next decision, and return where it leads."""
    rules, state = table.rules, point.state
    if state.dice is None:
        # The header comes first: on an empty store the advice below solves for a while.
        gap = "\n" if point.turn > 1 else ""  # a blank line between turns, none before the first
        bank = f", {rolls(state.saved)} saved" if rules.saved_rolls else ""
        table.say(f"{gap}Turn {point.turn}: score {point.total}, upper total {state.upper}{bank}")
        start = await advise(engine, rules, state)
        table.say(f"  expected final score {point.total + start.value:.2f}")
        target = table.target
        if target is not None:
            need = target.score - point.total
            aim = await advise_need(target.engine, engine, rules, state, need)
            table.say(f"  chance of {target.score} or more: {aim.probability:.6f}")
        risk = table.risk
        if risk is not None:
            bold = await advise_risk(risk.engine, engine, rules, state, risk.theta)
            table.say(
                f"  certainty equivalent at risk {risk.theta:g}: "
                f"{point.total + bold.certainty_equivalent:.2f}"
            )
        count = rules.dice
        dice = "one die and type it" if count == 1 else f"{number_word(count)} dice and type them"
        faces = await table.ask_dice(f"Roll {dice} (e.g. {example_dice(count)}): ")
        return replace(point, state=first_roll(state, rules, faces))
    if point.kept is not None:
        faces = await table.ask_dice(
            f"Reroll {rules.dice - len(point.kept)} and type {every_die(rules.dice)}: ", point.kept
        )
        return replace(point, state=replace(state, dice=faces), kept=None)
    advice, chances = await _advice(table, engine, point)
    _show_advice(table, advice, chances)
    action = await _choose(table, advice, chances, state)
    choice, best = action.to_json(), advice.actions[0].to_json()
    if chances:
        said = "probability" if table.risk is None else "certainty_equivalent"
        choice[said] = chances[action]
        best[said] = chances[advice.actions[0]]
    left = "rolls_left" if rules.saved_rolls else "rerolls_left"
    table.emit(
        {
            "turn": point.turn,
            "dice": list(state.dice),
            left: state.rerolls_left,
            "choice": choice,
            "best": best,
        }
    )
    assert state.rerolls_left is not None
    if action.kind == "keep":
        after = replace(state, rerolls_left=state.rerolls_left - 1)
        kept = action.keep if len(action.keep) < rules.dice else None
        return replace(point, state=after, kept=kept)
    box = rules.category_index(action.category)
    total = point.total + action.points + action.bonus
    extra = f" (+{action.bonus} bonus)" if action.bonus else ""
    table.say(f"  scored {action.points} in {action.label}{extra}; total {total}")
    return _Point(next_turn_start(rules, state, box, action.points), total, point.turn + 1)


async def _advice(
    table: _Table, engine: Engine, point: _Point
) -> tuple[Advice, dict[Action, float]]:
    """The moves ranked for the player: by expected points, with a target by their chance of
    it, at a risk by their certainty equivalent (each move's chance or certainty equivalent
    in the mapping, empty for points)."""
    rules, state, target, risk = table.rules, point.state, table.target, table.risk
    if risk is not None:
        bold = await advise_risk(risk.engine, engine, rules, state, risk.theta)
        ranked = replace(bold.mean, actions=tuple(a.action for a in bold.actions))
        return ranked, {a.action: a.certainty_equivalent for a in bold.actions}
    if target is None:
        return await advise(engine, rules, state), {}
    aim = await advise_need(target.engine, engine, rules, state, target.score - point.total)
    ranked = replace(aim.mean, actions=tuple(a.action for a in aim.actions))
    return ranked, {a.action: a.probability for a in aim.actions}


async def play_game(
    engine: Engine,
    rules: RuleSet,
    infile: TextIO,
    out: TextIO,
    *,
    as_json: bool,
    target: Target | None = None,
    risk: AtRisk | None = None,
) -> int:
    """Play one game, for points, a ``target`` or at a ``risk``; 0 when it ends, or when the
    player stops it (``quit``, Ctrl-D)."""
    async with BlockingPortal() as portal:
        table = _Table(rules, _Lines(infile, portal), out, as_json, target, risk)
        point, history = _Point(start_state(), 0, 1), list[_Point]()
        while point.state.filled != rules.all_filled:
            try:
                following = await _decide(table, engine, point)
            except _UndoError:
                if not history:
                    table.reject("undo", "nothing to undo yet")
                    continue
                point = history.pop()
                asking = "move" if point.state.dice and point.kept is None else "dice"
                table.say(f"  undone: back to turn {point.turn}, score {point.total}")
                table.emit({"undone": {"turn": point.turn, "asking": asking}})
                continue
            except _StoppedError as stop:
                table.say(
                    f"\nGame stopped ({stop.reason}) at turn {point.turn}: score {point.total}"
                )
                table.emit({"stopped": stop.reason, "turn": point.turn, "score": point.total})
                return 0
            history.append(point)
            point = following
    table.say(f"\nGame over: final score {point.total}")
    table.emit({"final_score": point.total, "turns": point.turn - 1})
    return 0
