"""The analyst commands' answers for a person: the words of ``stats``, ``simulate`` and
``review``, and the plot of ``stats --plot``.

The figures themselves come from the games (:mod:`memo_solver.games.yahtzee.analysis.distribution`,
:mod:`~memo_solver.games.yahtzee.analysis.simulate`,
:mod:`~memo_solver.games.yahtzee.advice.review`); their JSON is theirs too, so that the command line
and the HTTP service answer alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np

from memo_solver.games.yahtzee import (
    PERCENTILES,
    SIMULATED_PERCENTILES,
    Category,
    Distribution,
    Review,
    RuleSet,
    State,
    Summary,
    format_state,
    rolls as rolls_said,
    start_state,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MARKED: Final = (5, 25, 50, 75, 95)
"""The percentiles drawn on the plot: more lines would hide the curve."""
GLYPHS: Final = "⚀⚁⚂⚃⚄⚅"


# --- stats -----------------------------------------------------------------------------------


def describe_distribution(
    dist: Distribution,
    rules: RuleSet,
    state: State,
    thresholds: tuple[int, ...] = (),
    plot: Path | None = None,
    strategy: str = "optimal play",
) -> str:
    """The distribution in words, for a person at a terminal; ``strategy`` says whose."""
    from_start = state == start_state()
    what = "final score" if from_start else "points still to come"
    lines = [
        f"{rules.name}, {_where(rules, state)}: the {what} under {strategy}",
    ]
    if not from_start:
        lines.append("(points already on the scorecard are not included)")
    lines += [
        f"mean {dist.mean:.4f}   std {dist.std:.4f}",
        "percentiles: " + ", ".join(f"{q}% {dist.percentile(q / 100)}" for q in PERCENTILES),
    ]
    lines += [f"P({what} >= {t}) = {_chance(dist.survival(t))}" for t in thresholds]
    if rules.upper_bonus:
        lines.append(f"P(upper bonus {rules.upper_bonus}) = {_chance(dist.p_upper_bonus)}")
    if rules.yahtzee_box is not None:
        alike = rules.categories[rules.yahtzee_box]
        name = alike.label
        lines.append(f"P({name} {_points(alike)}) = {_chance(dist.p_yahtzee)}")
        lines.append(f"P(any {name} rolled) = {_chance(dist.p_any_yahtzee)}")
    if rules.yahtzee_bonus:
        lines.append(f"P(any +{rules.yahtzee_bonus}) = {_chance(dist.p_extra_bonus)}")
    lines += ["", "expected points per box" + ("" if from_start else " (still to come)") + ":"]
    rows = [(rules.categories[rules.category_index(n)].label, v) for n, v in _boxes(dist, rules)]
    rows += [(_BONUS_LABELS.get(name, name), value) for name, value in dist.bonus_points.items()]
    width = max((len(label) for label, _ in rows), default=0)
    lines += [f"  {label:<{width}}  {value:8.4f}" for label, value in rows]
    if plot is not None:
        lines += ["", f"plot written to {plot}"]
    return "\n".join(lines)


def describe_need_distribution(payload: Mapping[str, Any], rules: RuleSet, state: State) -> str:
    """``stats --need`` in words: the target policy beside the mean policy (the JSON of
    :func:`memo_solver.games.yahtzee.analysis.stats.need_stats_json`)."""
    from_start = state == start_state()
    what = "final score" if from_start else "points still to come"
    need = payload["need"]
    target, mean = payload["target_policy"], payload["mean_policy"]
    lines = [f"{rules.name}, {_where(rules, state)}: the {what} playing for {need} or more"]
    if not from_start:
        lines.append("(points already on the scorecard are not included)")
    rows = [
        (f"P({what} >= {need})", _chance(target["p_need"]), _chance(mean["p_need"])),
        ("mean", f"{target['mean']:.4f}", f"{mean['mean']:.4f}"),
        ("std", f"{target['std']:.4f}", f"{mean['std']:.4f}"),
    ]
    rows += [
        (f"{q}th percentile", str(target["percentiles"][str(q)]), str(mean["percentiles"][str(q)]))
        for q in (5, 25, 50, 75, 95)
    ]
    rows += [
        (f"P({what} >= {t})", _chance(target["survival"][t]), _chance(mean["survival"][t]))
        for t in target["survival"]
        if int(t) != need
    ]
    width = max(len(row[0]) for row in rows)
    lines.append(f"  {'':<{width}}  {'for ' + str(need):>14}  {'for points':>14}")
    lines += [f"  {name:<{width}}  {ours:>14}  {theirs:>14}" for name, ours, theirs in rows]
    check = "agrees with" if payload["agrees"] else "DISAGREES with"
    lines += [
        f"best chance of {need} (the need table's value): {_chance(payload['probability'])}; "
        f"the forward pass {check} it",
        f"playing for {need} costs {payload['points_cost']:.4f} points on average and gains "
        f"{_chance(payload['chance_gain'])} of chance",
    ]
    return "\n".join(lines)


def _points(alike: Category) -> int:
    """What the all-alike box scores (50 in Yahtzee, 100 in Maxi Yatzy)."""
    return int(alike.scores.max())


def _chance(p: float) -> str:
    """Six decimals, without the "-0.000000" that a difference of sums can round to."""
    return f"{min(1.0, max(0.0, p)):.6f}"


_BONUS_LABELS = {"upper": "upper bonus", "yahtzee": "extra Yahtzee bonuses"}


def _boxes(dist: Distribution, rules: RuleSet) -> list[tuple[str, float]]:
    """The open boxes in scorecard order (the pass finds them in its own order)."""
    return [
        (c.name, dist.box_points[c.name]) for c in rules.categories if c.name in dist.box_points
    ]


def _where(rules: RuleSet, state: State) -> str:
    return "from the start" if state == start_state() else f"from {format_state(state, rules)}"


def plot_title(rules: RuleSet, state: State) -> str:
    what = "final score" if state == start_state() else "points still to come"
    return f"{rules.name} {_where(rules, state)}: {what}"


def draw_distribution(dist: Distribution, path: Path, *, title: str = "") -> None:
    """The probability of each total above, P(points >= s) below, the percentiles marked.

    A bare :class:`~matplotlib.figure.Figure` (no pyplot) leaves no global state behind and
    needs no display, so it is safe in a server or a test run.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 7), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    probabilities = dist.probabilities
    totals = list(range(probabilities.size))
    top.bar(totals, probabilities, width=1.0, color="#4c72b0")
    top.set_ylabel("P(points = s)")
    top.set_title(title or "distribution of the points")
    survival = probabilities[::-1].cumsum()[::-1]
    bottom.step(totals, survival, where="mid", color="#4c72b0")
    bottom.set_ylabel("P(points >= s)")
    bottom.set_xlabel("points s")
    bottom.set_ylim(0, 1.02)
    nonzero = np.flatnonzero(probabilities > 1e-9)
    if nonzero.size:  # the tails past one in a billion would only squeeze the picture
        bottom.set_xlim(max(-0.5, nonzero[0] - 5), nonzero[-1] + 5)
    for axes in (top, bottom):
        _mark_percentiles(axes, dist)
    top.axvline(dist.mean, color="#c44e52", linewidth=1.2, label=f"mean {dist.mean:.2f}")
    top.legend(loc="upper right", fontsize="small")
    fig.savefig(path, dpi=100)


def _mark_percentiles(axes: Axes, dist: Distribution) -> None:
    top = axes.get_ylim()[1]
    for q in MARKED:
        at = dist.percentile(q / 100)
        axes.axvline(at, color="#888888", linestyle="--", linewidth=0.8)
        axes.annotate(
            f"{q}%: {at}",
            (at, top),
            xytext=(2, -2),
            textcoords="offset points",
            rotation=90,
            va="top",
            fontsize="x-small",
            color="#555555",
        )


# --- simulate ------------------------------------------------------------------------------


def describe_simulation(summary: Summary, thresholds: tuple[int, ...] = ()) -> str:
    """The figures in words, each ± its standard error; the chances are labelled as in
    ``memo-solver stats`` (``P(Yahtzee 50)``: the box's points scored in it), so the two read
    side by side."""
    rules = summary.rules
    if summary.games == 1:
        score = f"{summary.mean:8.2f} (one game: no standard error)"
    else:
        score = f"{summary.mean:8.2f} ± {summary.se:.2f} (standard error)"
    if summary.exact_mean is not None:
        score += f"   exact mean {summary.exact_mean:.4f}"
        if summary.z is not None:
            score += f" (z = {summary.z:+.2f})"
    spread = "  ".join(
        f"{q}%: {summary.percentile(q / 100)} ± {summary.percentile_se(q / 100):.1f}"
        for q in SIMULATED_PERCENTILES
        if q != 50
    )
    rows = [
        ("score", score),
        ("std", f"{summary.std:8.2f} ± {summary.std_se:.2f}"),
        ("median", f"{summary.percentile(0.5):8d} ± {summary.percentile_se(0.5):.1f}"),
        ("percentiles", spread),
    ]
    shares = [(f"P(score >= {t})", summary.survival(t)) for t in thresholds]
    if rules.upper_bonus:
        shares.append(
            (f"P(upper bonus {rules.upper_bonus})", summary.share(summary.upper_bonus_games))
        )
    if rules.yahtzee_box is not None:
        alike = rules.categories[rules.yahtzee_box]
        name = alike.label
        shares.append((f"P({name} {_points(alike)})", summary.share(summary.yahtzee_games)))
        shares.append((f"P(any {name} rolled)", summary.share(summary.any_yahtzee_games)))
    if rules.yahtzee_bonus:
        shares.append((f"P(any +{rules.yahtzee_bonus})", summary.share(summary.extra_games)))
    rows += [(label, f"{100 * p:7.2f}% ± {100 * se:.2f}%") for label, (p, se) in shares]
    width = max(len(label) for label, _ in rows)
    lines = [
        f"{rules.name}, {summary.strategy} strategy: {_games(summary.games)} (seed {summary.seed})"
    ]
    lines += [f"  {label:<{width}} {value}" for label, value in rows]
    lines.append("  mean points per box:")
    for c, mean, se in zip(rules.categories, summary.box_means, summary.box_se, strict=True):
        lines.append(f"    {c.label:<16} {mean:7.3f} ± {se:.3f}")
    built = (
        f" ({summary.policies_built:,} block policies built in {summary.policy_seconds:.1f} s)"
        if summary.policies_built
        else ""
    )
    lines.append(
        f"  {_games(summary.games)} in {summary.seconds:.2f} s: "
        f"{summary.games_per_second:,.0f} games/s{built}"
    )
    return "\n".join(lines)


def _games(count: int) -> str:
    return f"{count:,} game" + ("" if count == 1 else "s")


def faces(dice: Iterable[int]) -> str:
    """Dice as die faces: [2, 2, 4] -> ⚁⚁⚃."""
    return "".join(GLYPHS[d - 1] for d in dice)


def narrate(rules: RuleSet, log: Mapping[str, object]) -> str:
    """A logged game told decision by decision, like a bot at the table."""
    lines = []
    total = 0
    for turn in cast(list[dict[str, object]], log["turns"]):
        rolls = cast(list[list[int]], turn["rolls"])
        keeps = cast(list[list[int]], turn["keeps"])
        parts = [f"rolled {faces(rolls[0])}"]
        for kept, after in zip(keeps, rolls[1:], strict=True):
            rerolled = rules.dice - len(kept)
            what = f"keep {faces(kept)}, reroll {rerolled}" if kept else f"reroll all {rerolled}"
            parts += [what, f"rolled {faces(after)}"]
        box = rules.categories[rules.category_index(str(turn["box"]))]
        gained = cast(int, turn["points"])
        upper_bonus = cast(int, turn["upper_bonus"])
        extra = cast(int, turn["yahtzee_bonus"])
        total += gained + upper_bonus + extra
        scored = f"score {gained} in {box.label}"
        if upper_bonus:
            scored += f" (+{upper_bonus} upper bonus)"
        if extra:
            scored += f" (+{extra} Yahtzee bonus)"
        bank = ""
        if "saved" in turn:  # saved rolls: the bank the turn began with, and what it carries
            bank = f" ({rolls_said(cast(int, turn['saved']))} saved)"
            scored += f", carry {rolls_said(cast(int, turn['carried']))}"
        parts.append(scored)
        lines.append(f"Turn {turn['turn']}{bank}: {' → '.join(parts)}.  Total {total}")
    lines.append(
        f"Final score: {log['score']} "
        f"(upper bonus {log['upper_bonus']}, Yahtzee bonus {log['yahtzee_bonus']})"
    )
    return "\n".join(lines)


# --- review --------------------------------------------------------------------------------


def describe_review(review: Review) -> str:
    """The review in words: a table of decisions, the worst mistakes, the score split; at a
    risk each decision's certainty-equivalent loss beside its mean loss."""
    rules = review.rules
    at_risk = review.risk is not None
    best = f"best at risk {review.risk:g}" if at_risk else "best choice"
    rows = [("turn", "step", "dice", "your choice", best, "loss", *(("ce loss",) * at_risk))]
    for d in review.decisions:
        same = d.chosen == d.best
        rows.append(
            (
                str(d.turn),
                d.step,
                " ".join(map(str, d.state.dice or ())),
                d.chosen.words(),
                "=" if same else d.best.words(),
                f"{d.loss:.4f}",
                *(() if d.certain is None else (f"{d.certain.loss:.4f}",)),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(w) if i < 5 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines += ["", f"expected points lost in all: {review.total_loss:.4f}"]
    if review.risk is not None:
        lines += [
            f"certainty-equivalent points lost at risk {review.risk:g} in all: "
            f"{review.total_risk_loss:.4f} (from {review.certainty_equivalent:.4f} at the start)"
        ]
    if review.worst:
        lines.append("worst mistakes:")
        lines += [f"  {i}. {d.words(rules)}" for i, d in enumerate(review.worst, start=1)]
    else:
        lines.append("no mistakes: every decision was optimal")
    if review.complete:
        head = f"final score {review.banked}"
    else:
        head = (
            f"game stopped after {len(review.scored)} turns: {review.banked} banked "
            f"+ {review.remaining_value:.4f} expected from here = {review.final_score:.4f}"
        )
    lines += [
        "",
        head,
        f"  = expected {review.expected_score:.4f} (optimal play, on average)",
        f"  + skill {review.skill:+.4f} (minus the expected points lost)",
        f"  + luck {review.luck:+.4f} (what the dice gave beyond the average)",
    ]
    return "\n".join(lines)
