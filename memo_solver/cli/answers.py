"""What ``advise`` and ``value`` answer on a Yahtzee-family rule set, in words and as JSON:
for points, for the best chance of a need, for the best certainty equivalent at a risk, or
for the best chance of finishing above an opponent; one state, or JSON lines of states from
standard input.

The game's modules load when an answer is asked for, as in every handler.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from memo_solver.cli.common import EXIT_USAGE, Output, UsageError

if TYPE_CHECKING:
    from memo_solver.core.engine import Engine
    from memo_solver.games.yahtzee import RuleSet


def _chance_rows(actions: Sequence[Any]) -> list[str]:
    """Every action with its chance, best first, beside its expected points and loss."""
    rows = ["", f"{'action':<40} {'chance':>9} {'value':>10} {'loss':>9}"]
    return rows + [
        f"{a.action.words():<40} {a.probability:>9.6f} {a.action.value:>10.4f} "
        f"{a.action.loss:>9.4f}"
        for a in actions
    ]


async def beat(args: argparse.Namespace, engine: Engine, rules: RuleSet, out: Output) -> int:
    """``advise --opponent``: every move's chance of finishing above the opponent."""
    from memo_solver.games.yahtzee import Opponent, StateError, advise_beat, parse_state

    try:
        them = parse_state(args.opponent, rules)
    except StateError as exc:
        raise UsageError(f"--opponent: {exc.message}") from None
    state = parse_state(args.state, rules)
    opponent = Opponent(them, args.opponent_score)
    advice = await advise_beat(engine, rules, state, args.score, opponent)
    out.emit(advice.to_json(), _beat_text(advice))
    return 0


def _beat_text(advice: Any) -> str:
    them = (
        f"the opponent finishes with {advice.opponent_mean:.2f} on average, "
        f"{advice.opponent_best} at best"
    )
    if not advice.actions:
        return f"Chance to finish above the opponent: {advice.probability:.6f} ({them})"
    best = advice.actions[0]
    lines = [
        f"Best to finish above the opponent: {best.action.words()}  "
        f"(chance {best.probability:.6f}; {them})",
        f"Best for points: {advice.mean.actions[0].words()}",
    ]
    return "\n".join(lines + _chance_rows(advice.actions))


async def advise(state_text: str, engine: Engine, rules: RuleSet, out: Output) -> int:
    from memo_solver.games.yahtzee import advise, parse_state

    async def answer(text: str) -> tuple[dict[str, object], str]:
        advice = await advise(engine, rules, parse_state(text, rules))
        return advice.to_json(), _advice_text(advice)

    return await _answer_states(state_text, answer, out)


async def advise_need(
    state_text: str, need: int, engine: Engine, mean: Engine, rules: RuleSet, out: Output
) -> int:
    from memo_solver.games.yahtzee import advise_need, parse_state

    async def answer(text: str) -> tuple[dict[str, object], str]:
        advice = await advise_need(engine, mean, rules, parse_state(text, rules), need)
        return advice.to_json(), _need_advice_text(advice)

    return await _answer_states(state_text, answer, out)


async def advise_risk(
    state_text: str, theta: float, engine: Engine, mean: Engine, rules: RuleSet, out: Output
) -> int:
    from memo_solver.games.yahtzee import advise_risk, parse_state

    async def answer(text: str) -> tuple[dict[str, object], str]:
        advice = await advise_risk(engine, mean, rules, parse_state(text, rules), theta)
        return advice.to_json(), _risk_advice_text(advice)

    return await _answer_states(state_text, answer, out)


def _risk_advice_text(advice: Any) -> str:
    at = f"at risk {advice.risk:g}"
    if advice.mean.game_over:
        return "The game is over: no points are left to win."
    if not advice.actions:
        return (
            f"Roll the dice. Certainty equivalent {at} from here: "
            f"{advice.certainty_equivalent:.4f} more points (expect {advice.mean.value:.4f})"
        )
    best = advice.actions[0]
    lines = [
        f"Best {at}: {best.action.words()}  (certainty equivalent "
        f"{best.certainty_equivalent:.4f} more points)",
        f"Certainty equivalent before this turn's first roll: "
        f"{advice.turn_start_certainty_equivalent:.4f}",
        f"Best for points: {advice.mean.actions[0].words()}",
        "",
    ]
    said = [a.action.words() for a in advice.actions]
    wide = max(40, *map(len, said))
    lines.append(f"{'action':<{wide}} {'certain':>10} {'value':>10} {'loss':>9}")
    lines += [
        f"{words:<{wide}} {a.certainty_equivalent:>10.4f} {a.action.value:>10.4f} "
        f"{a.action.loss:>9.4f}"
        for words, a in zip(said, advice.actions, strict=True)
    ]
    return "\n".join(lines)


async def value_risk(
    state_text: str, theta: float, engine: Engine, mean: Engine, rules: RuleSet, out: Output
) -> int:
    from memo_solver.games.yahtzee import advise_risk, parse_state

    async def answer(text: str) -> tuple[dict[str, object], str]:
        computed = {id(engine): engine, id(mean): mean}.values()  # one engine at risk 0
        before = sum(e.counters.computed for e in computed)
        advice = await advise_risk(engine, mean, rules, parse_state(text, rules), theta)
        payload = {
            "rules": rules.name,
            "risk": theta,
            "certainty_equivalent": advice.certainty_equivalent,
            "turn_start_certainty_equivalent": advice.turn_start_certainty_equivalent,
            "value": advice.mean.value,
            "blocks_computed": sum(e.counters.computed for e in computed) - before,
        }
        return payload, f"{advice.certainty_equivalent:.10f}"

    return await _answer_states(state_text, answer, out)


async def _answer_states(
    state_text: str,
    answer: Callable[[str], Awaitable[tuple[dict[str, object], str]]],
    out: Output,
) -> int:
    """One state's answer, or with ``-`` one JSON line per state read from standard input
    (a bad line answered with its error, the others still answered; exit 2 if any was)."""
    from memo_solver.games.yahtzee import StateError

    if state_text != "-":
        out.emit(*await answer(state_text))
        return 0
    bad = 0
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            payload, _ = await answer(line)
        except StateError as exc:
            bad += 1
            payload = {"error": {"line": number, "field": exc.field, "message": exc.message}}
        print(json.dumps(payload), flush=True)
    return EXIT_USAGE if bad else 0


def _advice_text(advice: Any) -> str:
    if advice.game_over:
        return "The game is over: no points are left to win."
    if not advice.actions:
        return f"Roll the dice. Expected final score from here: {advice.value:.4f} more points."
    best = advice.actions[0]
    lines = [
        f"Best: {best.words()}  (expect {best.value:.4f} more points)",
        f"Turn-start value of this scorecard: {advice.turn_start_value:.4f}",
        "",
    ]
    said = [a.words() for a in advice.actions]
    wide = max(40, *map(len, said))  # the words of saved rolls run longer than 40
    lines.append(f"{'action':<{wide}} {'value':>10} {'loss':>9}")
    lines += [
        f"{words:<{wide}} {a.value:>10.4f} {a.loss:>9.4f}"
        for words, a in zip(said, advice.actions, strict=True)
    ]
    return "\n".join(lines)


def _need_advice_text(advice: Any) -> str:
    need = advice.need
    if advice.mean.game_over:
        met = "met" if need <= 0 else "missed"
        return f"The game is over: no points are left to win, and a need of {need} is {met}."
    if not advice.actions:
        return (
            f"Roll the dice. Best chance of {need} more points from here: "
            f"{advice.probability:.6f} (expect {advice.mean.value:.4f} more points)"
        )
    best = advice.actions[0]
    lines = [
        f"Best for {need} more points: {best.action.words()}  (chance {best.probability:.6f})",
        f"Chance before this turn's first roll: {advice.turn_start_probability:.6f}",
        f"Best for points: {advice.mean.actions[0].words()}",
    ]
    return "\n".join(lines + _chance_rows(advice.actions))


async def value_need(
    state_text: str, need: int, engine: Engine, mean: Engine, rules: RuleSet, out: Output
) -> int:
    from memo_solver.games.yahtzee import advise_need, parse_state

    async def answer(text: str) -> tuple[dict[str, object], str]:
        before = engine.counters.computed + mean.counters.computed
        advice = await advise_need(engine, mean, rules, parse_state(text, rules), need)
        payload = {
            "rules": rules.name,
            "need": need,
            "cap": advice.cap,
            "probability": advice.probability,
            "turn_start_probability": advice.turn_start_probability,
            "value": advice.mean.value,
            "blocks_computed": engine.counters.computed + mean.counters.computed - before,
        }
        return payload, f"{advice.probability:.10f}"

    return await _answer_states(state_text, answer, out)


async def value(state_text: str, engine: Engine, rules: RuleSet, out: Output) -> int:
    from memo_solver.games.yahtzee import advise, parse_state

    async def answer(text: str) -> tuple[dict[str, object], str]:
        before = engine.counters.computed
        advice = await advise(engine, rules, parse_state(text, rules))
        payload = {
            "rules": rules.name,
            "value": advice.value,
            "turn_start_value": advice.turn_start_value,
            # What this state cost: 0 on a warm cache (it was there, or others computed it).
            "blocks_computed": engine.counters.computed - before,
        }
        return payload, f"{advice.value:.10f}"

    return await _answer_states(state_text, answer, out)
