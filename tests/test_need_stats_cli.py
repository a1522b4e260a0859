"""``stats --need`` and ``simulate --need`` as real processes.

One die, one chance box, one reroll (``cli_support.TINY_RULES``), needing 5: the target
policy keeps a 5 or 6 and rerolls anything else, so it reaches 5 with 1 - (4/6)^2 = 5/9
and scores 2/6 * 5.5 + 4/6 * 3.5 = 25/6 on average; the mean policy keeps a 4 too (worth
more than a reroll's 3.5), reaching 5 only half the time for 4.25 points: playing for 5
costs 1/12 of a point and gains 1/18 of chance.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli_support import answer, memo_solver, one_error_line

TOL = 1e-9


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite3"


def test_stats_with_a_need_shows_both_policies_side_by_side(
    store: Path, tiny_rules_file: Path
) -> None:
    args = ("stats", "--rules-file", str(tiny_rules_file), "--need", "5", "--threshold", "4")
    payload = answer(memo_solver(store, *args, "--json"))

    assert payload["need"] == 5
    assert payload["probability"] == pytest.approx(5 / 9, abs=TOL)
    target, mean = payload["target_policy"], payload["mean_policy"]
    assert target["p_need"] == pytest.approx(5 / 9, abs=TOL)
    assert payload["agrees"] is True
    assert target["probabilities"] == pytest.approx([0, *[4 / 36] * 4, 10 / 36, 10 / 36])
    assert target["mean"] == pytest.approx(25 / 6, abs=TOL)
    assert target["survival"] == {"4": pytest.approx(2 / 3), "5": pytest.approx(5 / 9)}
    assert mean["p_need"] == pytest.approx(1 / 2, abs=TOL)
    assert mean["mean"] == pytest.approx(4.25, abs=TOL)
    assert payload["points_cost"] == pytest.approx(1 / 12, abs=TOL)
    assert payload["chance_gain"] == pytest.approx(1 / 18, abs=TOL)

    words = memo_solver(store, *args)
    assert words.returncode == 0, words.stderr
    rows = [line.split() for line in words.stdout.splitlines()]
    assert ["P(final", "score", ">=", "5)", "0.555556", "0.500000"] in rows
    assert ["mean", "4.1667", "4.2500"] in rows
    assert "the forward pass agrees with it" in words.stdout
    assert "playing for 5 costs 0.0833 points on average and gains 0.055556 of chance" in (
        words.stdout
    )


def test_stats_with_a_need_above_the_cap_is_refused(store: Path, tiny_rules_file: Path) -> None:
    result = memo_solver(
        store, "stats", "--rules-file", str(tiny_rules_file), "--need", "5", "--need-cap", "4"
    )
    assert "need 5 is above the need table's cap of 4" in one_error_line(result)


def test_simulate_with_a_need_plays_the_target_policy(store: Path, tiny_rules_file: Path) -> None:
    """4,000 seeded games: the share reaching 5 lies within a few standard errors of 5/9
    and well above the mean policy's 1/2 (seven errors apart), the mean score near 25/6."""
    args = ("simulate", "--rules-file", str(tiny_rules_file), "--need", "5", "--games", "4000")
    payload = answer(memo_solver(store, *args, "--seed", "3", "--json"))

    need = payload["need"]
    assert need["exact"] == pytest.approx(5 / 9, abs=TOL)
    assert abs(need["hit_rate"] - 5 / 9) < 4 * need["hit_rate_se"]
    assert need["hit_rate"] > 1 / 2 + 3 * need["hit_rate_se"]
    assert abs(payload["mean"] - 25 / 6) < 4 * payload["se"]
    assert "exact_mean" not in payload
    words = memo_solver(store, *args, "--seed", "3")
    assert words.returncode == 0, words.stderr
    assert "playing for a final score of 5 or more: reached in" in words.stdout


def test_simulate_with_a_need_refuses_the_greedy_policy(store: Path, tiny_rules_file: Path) -> None:
    result = memo_solver(
        store, "simulate", "--rules-file", str(tiny_rules_file), "--need", "5", "--policy", "greedy"
    )
    assert "--need plays the target policy" in one_error_line(result)


def test_stats_with_a_need_refuses_a_plot(
    store: Path, tiny_rules_file: Path, tmp_path: Path
) -> None:
    result = memo_solver(
        store, "stats", "--rules-file", str(tiny_rules_file), "--need", "5", "--plot",
        str(tmp_path / "d.png"),
    )  # fmt: skip
    assert "--plot draws the mean policy's distribution" in one_error_line(result)
