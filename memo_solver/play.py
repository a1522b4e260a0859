"""The interactive table: type your dice, get advice, confirm a move, keep the scorecard.

It reads plain lines, so it works the same typed by hand or scripted on standard input
(one answer per line). Bad answers are explained and asked again; the game never ends on
a typo. With ``--json`` every decision is one JSON line instead of words and prompts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TextIO

from memo_solver.advice import Action, Advice, advise
from memo_solver.dice import DICE
from memo_solver.engine import Engine
from memo_solver.rules import RuleSet, normalize_name
from memo_solver.state import State, StateError, start_state

_SHOWN = 6


class InputEndedError(Exception):
    """Standard input ended before the game did."""


@dataclass
class _Table:
    rules: RuleSet
    infile: TextIO
    out: TextIO
    as_json: bool

    def say(self, text: str) -> None:
        if not self.as_json:
            print(text, file=self.out, flush=True)

    def emit(self, payload: dict[str, object]) -> None:
        if self.as_json:
            print(json.dumps(payload), file=self.out, flush=True)

    def ask(self, prompt: str) -> str:
        if not self.as_json:
            print(prompt, end="", file=self.out, flush=True)
        line = self.infile.readline()
        if line == "":
            raise InputEndedError
        return line.strip()

    def reject(self, field: str, message: str) -> None:
        """Explain a bad answer (a JSON error line for programs) before asking again."""
        if self.as_json:
            self.emit({"error": {"field": field, "message": message}})
        else:
            self.say(f"  {message}")

    def ask_dice(self, prompt: str, kept: tuple[int, ...] = ()) -> tuple[int, ...]:
        while True:
            answer = self.ask(prompt)
            try:
                faces = parse_faces(answer, DICE)
            except StateError as exc:
                self.reject("dice", f"{exc.message}; type five faces like 12226")
                continue
            if not _contains(faces, kept):
                self.say(
                    f"  you kept {' '.join(map(str, kept))}: those dice must be among the five"
                )
                continue
            return faces


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


def _choose(table: _Table, advice: Advice, state: State) -> Action:
    """Ask until the player names a legal move; Enter takes the best one."""
    while True:
        answer = table.ask("Your move (Enter = best; 'keep 222', 'keep none'; or a box name): ")
        if not answer:
            return advice.actions[0]
        words = answer.split(maxsplit=1)
        if words[0].lower() == "keep":
            if not state.rerolls_left:
                table.reject("choice", "no rerolls left: score the dice in a box")
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
        name = normalize_name(answer)
        match = [a for a in advice.actions if a.kind == "score" and a.category == name]
        if match:
            return match[0]
        legal = ", ".join(a.category for a in advice.actions if a.kind == "score")
        table.reject(
            "choice", f"{answer!r} is not an open box you may use now (choose from: {legal})"
        )


def _show_advice(table: _Table, advice: Advice) -> None:
    for i, action in enumerate(advice.actions[:_SHOWN]):
        mark = "best" if i == 0 else "tie" if action.loss < 0.005 else f"-{action.loss:.2f}"
        table.say(f"  {mark:>7}  {action.words():<38} expect {action.value:8.3f} more")
    if len(advice.actions) > _SHOWN:
        more = len(advice.actions) - _SHOWN
        table.say(f"  ... and {more} more move{'s' if more > 1 else ''}")


async def play_game(
    engine: Engine, rules: RuleSet, infile: TextIO, out: TextIO, *, as_json: bool
) -> int:
    table = _Table(rules, infile, out, as_json)
    state, total, turn = start_state(), 0, 1
    try:
        while state.filled != rules.all_filled:
            start = await advise(engine, rules, state)
            table.say(
                f"\nTurn {turn}: score {total}, upper total {state.upper}; "
                f"expected final score {total + start.value:.2f}"
            )
            faces = table.ask_dice("Roll five dice and type them (e.g. 12226): ")
            state = State(state.filled, state.upper, state.yahtzee_bonus, rules.rerolls, faces)
            while True:
                advice = await advise(engine, rules, state)
                _show_advice(table, advice)
                action = _choose(table, advice, state)
                table.emit(
                    {
                        "turn": turn,
                        "dice": list(faces),
                        "rerolls_left": state.rerolls_left,
                        "choice": action.to_json(),
                        "best": advice.actions[0].to_json(),
                    }
                )
                assert state.rerolls_left is not None
                if action.kind == "score":
                    break
                if len(action.keep) < DICE:
                    faces = table.ask_dice(
                        f"Reroll {DICE - len(action.keep)} and type all five dice: ", action.keep
                    )
                state = State(
                    state.filled, state.upper, state.yahtzee_bonus, state.rerolls_left - 1, faces
                )
            box = rules.category_index(action.category)
            gained = action.points + action.bonus
            total += gained
            extra = f" (+{action.bonus} bonus)" if action.bonus else ""
            table.say(f"  scored {action.points} in {action.label}{extra}; total {total}")
            upper = state.upper + (action.points if rules.categories[box].upper_face else 0)
            fifty = rules.categories[box].is_yahtzee and action.points > 0
            state = State(state.filled | 1 << box, upper, state.yahtzee_bonus or fifty, None, None)
            turn += 1
    except InputEndedError:
        table.say("")
        raise StateError(
            "input", f"ended before the game did (turn {turn}, score {total})"
        ) from None
    table.say(f"\nGame over: final score {total}")
    table.emit({"final_score": total, "turns": turn - 1})
    return 0
