"""The players' page end to end: headless Chromium, driven by Playwright, against
``memo-solver serve`` run as a child process on a free port with a fresh SQLite store.

- the reference Haskell program's example position gives "keep 2 2 2" at 40.998 and the
  pinned values of the alternatives, on a phone-sized screen, with the kept dice marked;
  the first render takes under a second and a tap's advice under 100 ms (median, warm),
  and the page fits 375 and 320 px wide screens without scrolling sideways;
- the same position entered with the keyboard alone, focus always visible;
- a scripted game of ``yahtzee-upper`` in play-along mode, reloaded half way through
  (the game lives in localStorage), reviewed at the end by ``POST /v1/review`` (its first
  answer a 503 with Retry-After): the page shows that endpoint's review of the game it sent;
  a game played with the risk dial off 0 is reviewed at its risk (its certainty-equivalent
  losses), and again for points once the dial is back at 0;
- a cold state: the first answer is a 503 with Retry-After, the page says it is computing
  and asks again by itself; a refused position shows the service's message;
- points no game can put in a box (checked against ``GET /v1/rules``) get a message beside
  the box, count for nothing and ask nothing; the extra-Yahtzee count opens only after 50 in
  the Yahtzee box;
- the page takes the rule set's shape from ``GET /v1/rules`` (every page of it): Maxi Yatzy's
  six dice and 20 boxes, with advice three boxes from the end; a rule set registered over
  HTTP (two dice, three boxes filled in scorecard order: only the next box opens) offered
  under "Registered" and advised; the bonus count following the all-alike box's points; a
  pasted rule-set file registered and picked, or refused with the field named;
- the rough edges a new player met: "-4" is answered as negative, a wrong lower box leaves
  the upper total known, the others' scores' example shows whole, a loss of 0 in the review
  is not drawn as a mistake, a new rule set clears (and names) the entries it cannot hold,
  and the rule set picked stays picked in Play along;
- axe-core finds no serious or critical violation on any of these screens;
- the page asks nothing of any other origin (``data:`` URLs aside).

Screenshots of the main screens go to ``artifacts/screenshots/`` and the timing figures
(first render, tap to advice) to ``artifacts/web-timings.json``; both are printed too.
"""

from __future__ import annotations

import json
import math
import random
import re
import statistics
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.web_support import (
    CHROMIUM_ARGS,
    DESKTOP,
    PHONE,
    REPO,
    SCREENSHOTS,
    Service,
    chromium_or_reason,
    serious_violations,
)

pytestmark = pytest.mark.slow  # about 20 to 30 s in all, most of it in the browser

sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="playwright is not installed (pip install -e '.[dev]' brings it)",
)
pytest.importorskip(
    "axe_playwright_python",
    reason="axe-playwright-python is not installed (pip install -e '.[dev]' brings it)",
)

STORAGE_KEY = "memo-solver:page:v2"
MINUS = "\N{MINUS SIGN}"  # how the page writes a loss
TIMINGS_PATH = REPO / "artifacts" / "web-timings.json"
SMALL_PHONE = {"width": 320, "height": 568}

# The reference Haskell program's example: Ones and Yahtzee open, upper total 62 (Twos to
# Sixes hold 8 + 9 + 12 + 15 + 18: each a multiple of its face, as the page checks), no
# bonus, first roll, dice 1 2 2 2 6.
REFERENCE_UPPER = {"twos": 8, "threes": 9, "fours": 12, "fives": 15, "sixes": 18}
REFERENCE_LOWER = {
    "three_of_a_kind": 24,
    "four_of_a_kind": 0,
    "full_house": 25,
    "small_straight": 30,
    "large_straight": 40,
    "chance": 22,
}
REFERENCE_DICE = [1, 2, 2, 2, 6]
REFERENCE_BANKED = sum(REFERENCE_UPPER.values()) + sum(REFERENCE_LOWER.values())
PINS = {
    "keep 2 2 2 and": 40.998025624,
    "keep 1 2 2 2 and": 40.001351082,
    "keep 1 and": 39.926679721,
    "score 1 in Ones": 38.301432126,
    "score 0 in Yahtzee": 34.834789978,
}

# Each replaces the lowest die: 12226 -> 22236 22346 23456 34556 14556 45566 25566 35566,
# all new to the page (it keeps the answers it had).
TIMED_FACES = (3, 4, 5, 5, 1, 6, 2, 3)

_timings: dict[str, Any] = {}


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> str:
    path, reason = chromium_or_reason()
    if path is None:
        pytest.skip(reason)
    return path


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    with Service(tmp_path_factory.mktemp("web-service")) as running:
        yield running


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module", autouse=True)
def _write_timings() -> Iterator[None]:
    yield
    if _timings:
        TIMINGS_PATH.parent.mkdir(parents=True, exist_ok=True)
        TIMINGS_PATH.write_text(json.dumps(_timings, indent=2) + "\n")
        print(f"\nweb timings ({TIMINGS_PATH.relative_to(REPO)}): {json.dumps(_timings)}")


@pytest.fixture
def page(browser: Any, service: Service) -> Iterator[Any]:
    """A fresh phone-sized page (its own localStorage); page errors fail the test."""
    context = browser.new_context(
        viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    opened.on(
        "console",
        lambda message: (
            problems.append(f"console: {message.text}")
            if message.type == "error" and "Failed to load resource" not in message.text
            else None
        ),
    )
    try:
        yield opened
    finally:
        context.close()
    assert not problems, f"the page reported errors (service log: {service.log()}):\n{problems}"


@pytest.fixture
def sent(page: Any, service: Service) -> Iterator[list[Any]]:
    """Every request the page makes; afterwards, none may have left the service's origin."""
    requests: list[Any] = []
    page.on("request", lambda request: requests.append(request))
    yield requests
    assert requests
    foreign = [r.url for r in requests if not r.url.startswith((f"{service.url}/", "data:"))]
    assert not foreign, f"the page asked other origins than {service.url}: {foreign}"


# --- helpers ---------------------------------------------------------------------------------


def open_page(page: Any, service: Service) -> float:
    """Load the page and wait for its first render; the time to it in ms (page's clock)."""
    page.goto(service.url + "/")
    page.wait_for_selector('#app[data-ready="yes"]')
    ready: float = page.evaluate("window.memoTimings.ready")
    return ready


def shot(page: Any, name: str, *, full_page: bool = True) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path), full_page=full_page)
    return path


def assert_accessible(page: Any, screen: str) -> None:
    found = serious_violations(page)
    assert not found, f"axe-core on {screen}: {json.dumps(found, indent=2)}"


def assert_fits(page: Any, size: dict[str, int]) -> None:
    """At this viewport the page needs no sideways scrolling."""
    page.set_viewport_size(size)
    widths = page.evaluate(
        "({scroll: document.documentElement.scrollWidth, inner: window.innerWidth})"
    )
    assert widths["inner"] == size["width"], widths
    assert widths["scroll"] <= widths["inner"], f"overflows sideways at {size}: {widths}"


def post_json(service: Service, path: str, body: Any) -> Any:
    request = urllib.request.Request(
        service.url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.load(answer)


def enter_reference_scorecard(page: Any) -> None:
    for name, points in {**REFERENCE_UPPER, **REFERENCE_LOWER}.items():
        page.fill(f"#box-{name}-points", str(points))  # typing points ticks the box
    for name in [*REFERENCE_UPPER, *REFERENCE_LOWER]:
        assert page.is_checked(f"#box-{name}")
    assert not page.is_checked("#box-ones")
    assert not page.is_checked("#box-yahtzee")


def tap_die(page: Any, face: int) -> None:
    page.locator(f'.pad-button[data-face="{face}"]').tap()


def advice_count(page: Any) -> int:
    count: int = page.evaluate("window.memoTimings.advice.length")
    return count


def wait_advice(page: Any) -> None:
    page.wait_for_selector('#advice[data-state="ready"] #best-move')


def rows(page: Any) -> list[dict[str, Any]]:
    """The table of moves: words, expected final, value to come, loss (as shown), raw value."""
    found: list[dict[str, Any]] = page.evaluate(
        """() => [...document.querySelectorAll('#actions tbody tr')].map(tr => ({
            words: tr.querySelector('th').textContent.trim(),
            final: tr.cells[1].textContent, raw: tr.cells[2].textContent,
            loss: tr.cells[3].textContent, value: Number(tr.dataset.value),
            kind: tr.dataset.kind}))"""
    )
    return found


def kept_faces(page: Any) -> list[int]:
    faces: list[int] = page.evaluate(
        """() => [...document.querySelectorAll('#dice button.die[data-kept="yes"]')]
            .map(b => Number(b.dataset.face))"""
    )
    return faces


def saved_play(page: Any) -> dict[str, Any]:
    play: dict[str, Any] = page.evaluate(f"JSON.parse(localStorage.getItem('{STORAGE_KEY}')).play")
    return play


def assert_reference_advice(page: Any) -> None:
    assert page.inner_text("#best-move").startswith("keep 2 2 2 and reroll 2 dice")
    assert page.inner_text("#best-value") == "40.998"
    final = page.inner_text("#outlook .final")
    assert final == f"{REFERENCE_BANKED + 40.998025624:.3f}"
    table = rows(page)
    assert table[0]["words"].startswith("keep 2 2 2 and")
    for prefix, pinned in PINS.items():
        row = next(r for r in table if r["words"].startswith(prefix))
        assert row["raw"] == f"{pinned:.3f}", (prefix, row)
        assert row["value"] == pytest.approx(pinned, abs=1e-8), (prefix, row)
        assert row["final"] == f"{REFERENCE_BANKED + pinned:.3f}"
    losses = [r["loss"] for r in table]
    assert losses[0] == "0"
    assert losses[1] == f"{MINUS}0.997"  # keep 1 2 2 2: 40.998 - 40.001
    assert kept_faces(page) == [2, 2, 2]
    assert page.inner_text("#upper-total") == "62"
    assert page.inner_text("#banked") == str(REFERENCE_BANKED)


# --- tests -----------------------------------------------------------------------------------


def test_reference_position_on_a_phone(page: Any, service: Service, sent: list[Any]) -> None:
    """The reference example gives keep 2 2 2 (40.998) and the pinned alternatives; the
    page renders in under a second, answers a tap within 100 ms when warm, and fits
    phones 375 and 320 px wide."""
    cold_ms = open_page(page, service)
    warm_ms = open_page(page, service)  # the same browser again: the service is warm now
    paint = page.evaluate("performance.getEntriesByName('first-contentful-paint')[0]?.startTime")
    _timings["first_render_ms"] = {
        "first_load": round(cold_ms, 1),
        "reload": round(warm_ms, 1),
        "reload_first_contentful_paint": round(paint or 0, 1),
    }
    assert warm_ms < 1000, f"first render took {warm_ms:.0f} ms"

    assert page.input_value("#rules") == "yahtzee"
    enter_reference_scorecard(page)
    assert page.is_checked('input[name="roll"][value="1"]')
    for face in REFERENCE_DICE:
        tap_die(page, face)
    wait_advice(page)
    assert_reference_advice(page)
    assert_fits(page, PHONE)
    shot(page, "advisor-reference-375x667.png")
    assert_accessible(page, "the advice at 375x667")

    # Tap to advice, warm: one die taken back and another tapped, giving a roll of the same
    # scorecard (so the same blocks) not asked before: one round trip to the service.
    inside, outside = [], []
    for face in TIMED_FACES:
        page.locator('#dice button.die[data-index="0"]').tap()
        before = advice_count(page)
        started = time.perf_counter()
        tap_die(page, face)
        page.wait_for_function(f"window.memoTimings.advice.length > {before}")
        outside.append((time.perf_counter() - started) * 1000)
        inside.append(page.evaluate("window.memoTimings.advice.at(-1)"))
        wait_advice(page)
    _timings["tap_to_advice_ms"] = {
        "in_page_median": round(statistics.median(inside), 1),
        "in_page_max": round(max(inside), 1),
        "playwright_median": round(statistics.median(outside), 1),
        "playwright_max": round(max(outside), 1),
        "taps": len(inside),
    }
    print(f"\ntap to advice (ms, in page): {[round(t, 1) for t in inside]}")
    assert statistics.median(inside) < 100, inside

    assert page.inner_text("#quick") == f"Best move: {page.inner_text('#best-move')}"
    assert page.is_hidden("#do-best")  # choosing is for play-along mode

    # Back to the reference dice, and the same screen on a desktop.
    page.click("#clear-dice")
    for face in REFERENCE_DICE:
        tap_die(page, face)
    wait_advice(page)
    assert_reference_advice(page)
    assert_fits(page, SMALL_PHONE)
    shot(page, "advisor-reference-320x568.png")
    assert_accessible(page, "the advice at 320x568")
    page.set_viewport_size(DESKTOP)
    shot(page, "advisor-reference-desktop.png")
    assert_accessible(page, "the advice at 1280x900")


def tab_until(page: Any, predicate: str, key: str = "Tab", limit: int = 80) -> None:
    for _ in range(limit):
        page.keyboard.press(key)
        if page.evaluate(predicate):
            return
    raise AssertionError(f"{key} never reached {predicate}")


def focused(expression: str) -> str:
    return f"(() => {{ const e = document.activeElement; return !!e && ({expression}); }})()"


def assert_focus_visible(page: Any) -> None:
    style = page.evaluate(
        """() => { const e = document.activeElement;
            const target = e.type === 'radio' ? e.closest('label') : e;
            const s = getComputedStyle(target);
            return {outline: s.outlineStyle, width: parseFloat(s.outlineWidth),
                    shadow: s.boxShadow}; }"""
    )
    assert style["outline"] != "none", style
    assert style["width"] >= 2, style


def test_keyboard_alone(page: Any, service: Service) -> None:
    """Scorecard, dice and roll entered with Tab, Space, digits and arrows only."""
    open_page(page, service)
    for name, points in REFERENCE_UPPER.items():
        tab_until(page, focused(f"e.id === 'box-{name}-points'"))
        page.keyboard.type(str(points))
    for name in REFERENCE_LOWER:
        if name != "chance":  # ticked alone, a box counts 0, which Chance never holds
            tab_until(page, focused(f"e.id === 'box-{name}'"))
            page.keyboard.press("Space")
    tab_until(page, focused("e.id === 'box-chance-points'"))
    page.keyboard.type(str(REFERENCE_LOWER["chance"]))
    assert page.inner_text("#upper-total") == "62"
    assert page.inner_text("#banked") == str(62 + REFERENCE_LOWER["chance"])
    # Back up to the dice pad: Enter on "Add a 1", then the digits typed.
    tab_until(page, focused("e.getAttribute('aria-label') === 'Add a 1'"), key="Shift+Tab")
    assert_focus_visible(page)
    page.keyboard.press("Enter")
    page.keyboard.type("2226")
    wait_advice(page)
    assert page.inner_text("#best-move").startswith("keep 2 2 2 and")
    assert page.inner_text("#best-value") == "40.998"
    assert kept_faces(page) == [2, 2, 2]

    # A die taken back with the keyboard, and typed again: the focus stays on the dice.
    tab_until(page, focused("e.matches('#dice button.die[data-index=\"4\"]')"), key="Shift+Tab")
    page.keyboard.press("Enter")
    assert page.locator("#dice button.die").count() == 4
    assert page.evaluate(focused("e.closest('#dice, .pad') !== null"))
    page.keyboard.type("6")
    wait_advice(page)
    assert page.inner_text("#best-value") == "40.998"
    assert page.evaluate(focused("e.closest('#dice, .pad') !== null"))
    assert_focus_visible(page)
    shot(page, "keyboard-focus-375x667.png", full_page=False)

    # The roll of the turn, by arrow keys in the radio group: 2nd roll, one reroll left.
    tab_until(page, focused("e.name === 'roll' && e.checked"), key="Shift+Tab")
    assert_focus_visible(page)
    page.keyboard.press("ArrowRight")
    assert page.is_checked('input[name="roll"][value="2"]')
    page.wait_for_function("document.querySelector('#best-value')?.textContent !== '40.998'")
    wait_advice(page)
    assert page.inner_text("#best-move").startswith(("keep", "score"))
    assert_accessible(page, "the keyboard-driven page")


def choose_row(page: Any, wanted: int) -> int:
    """The first row from ``wanted`` on that costs points (or the best when wanted is 0)."""
    table = rows(page)
    if wanted == 0:
        return 0
    for index in range(min(wanted, len(table) - 1), len(table)):
        if table[index]["loss"] != "0":
            return index
    return 0


def choose(page: Any, index: int) -> None:
    """The best move by its button under the dice, any other by its row in the table."""
    if index == 0:
        assert page.get_attribute("#do-best", "aria-label") == f"Do this: {rows(page)[0]['words']}"
        page.locator("#do-best").tap()
    else:
        page.locator(f'#actions button.choose[data-index="{index}"]').tap()


def test_play_along_a_whole_game(page: Any, service: Service, sent: list[Any]) -> None:
    """Six turns of yahtzee-upper entered by taps, reloaded half way; at the end the page
    shows the review POST /v1/review gives for the game it sent, after a 503 first."""
    review_calls: list[float] = []
    page.route("**/v1/review", _cold_then_through(review_calls))
    open_page(page, service)
    page.locator("label:has(input[value='play'])").tap()
    page.select_option("#rules", "yahtzee-upper")
    assert page.is_visible("#play-bar")
    assert page.inner_text("#roll-text") == "Turn 1 of 6 · roll 1 of 3"

    faces = random.Random(20240601)
    # (turn, roll) -> the row to pick instead of the best (a costly one from there on).
    detours = {(2, 1): 1, (4, 1): 3, (5, 1): 6}
    chosen: list[tuple[str, float]] = []  # each move chosen: its words and loss, as shown
    undone = reloaded = False
    while not page.is_visible("#review"):
        turn, roll = map(int, re.findall(r"\d+", page.inner_text("#roll-text"))[::2][:2])
        for _ in range(5 - page.locator("#dice button.die").count()):
            tap_die(page, faces.randint(1, 6))
        wait_advice(page)
        if turn == 4 and roll == 1 and not reloaded:
            # Half way: the game survives a reload (localStorage), advice and all.
            reloaded = True
            before = saved_play(page)
            page.reload()
            page.wait_for_selector('#app[data-ready="yes"]')
            assert saved_play(page) == before
            assert page.inner_text("#roll-text") == "Turn 4 of 6 · roll 1 of 3"
            assert page.locator("#boxes li.filled").count() == 3
            wait_advice(page)
            shot(page, "play-along-turn4-375x667.png")
            assert_accessible(page, "play-along in mid-game")
        table = rows(page)
        index = choose_row(page, detours.get((turn, roll), 0))
        if turn == 2 and roll == 1 and not undone:
            # Undo puts the game, the dice and the advice back; the choice is then made again.
            undone = True
            before = saved_play(page)
            choose(page, index)
            assert saved_play(page) != before
            page.click("#undo")
            assert saved_play(page) == before
            wait_advice(page)
            assert rows(page) == table
        choose(page, index)
        chosen.append((table[index]["words"], table[0]["value"] - table[index]["value"]))
        assert len(chosen) < 40, "the game does not end"
    assert undone
    assert reloaded

    # The review's first answer is a 503: the page says so and asks again by itself.
    page.wait_for_selector('#review[data-state="computing"]')
    status = page.inner_text("#review-status")
    assert "computing the positions of this game" in status
    assert "asks again by itself in 1 s" in status
    assert_accessible(page, "the review being computed")
    page.wait_for_selector('#review[data-state="ready"]')
    assert len(review_calls) == 2
    assert review_calls[1] - review_calls[0] >= 0.9
    _timings["review_retry_after_503_s"] = round(review_calls[1] - review_calls[0], 2)
    assert page.inner_text("#review-status") == ""

    # What the page shows is what POST /v1/review answers for the game the page sent.
    asked = [r for r in sent if r.url == f"{service.url}/v1/review"]
    assert len(asked) == 2
    assert asked[0].post_data == asked[1].post_data
    game = json.loads(asked[1].post_data)
    assert game["rules"] == "yahtzee-upper"
    assert len(game["game"]["turns"]) == 6
    review = post_json(service, "/v1/review", game)
    play = saved_play(page)
    assert play["over"]
    assert play["review"] == review
    decisions = review["decisions"]
    assert [d["chosen"]["words"] for d in decisions] == [words for words, _ in chosen]
    for decision, (_, loss) in zip(decisions, chosen, strict=True):
        assert decision["loss"] == pytest.approx(loss, abs=1e-9)
    assert [b["box"] for b in review["boxes"]] == [t["box"] for t in game["game"]["turns"]]
    assert review["final_score"] == sum(play["boxes"].values()) + play["bonus"]

    assert page.inner_text("#final-score") == str(review["final_score"])
    assert page.inner_text("#points-lost") == f"{review['total_loss']:.3f}"
    assert page.inner_text("#expected-score") == f"{review['expected_score']:.3f}"
    assert page.inner_text("#skill") == f"{MINUS}{-review['skill']:.3f}"
    luck = review["luck"]
    assert page.inner_text("#luck") == f"{MINUS if luck < 0 else '+'}{abs(luck):.3f}"
    worst = review["worst_mistakes"]
    assert len(worst) == 3, decisions
    assert page.locator("#review .worst li").all_inner_texts() == [m["words"] for m in worst]
    losses = page.locator("#review .decisions tbody td.loss").all_inner_texts()
    assert losses == [f"{MINUS}{d['loss']:.3f}" if d["loss"] >= 5e-10 else "0" for d in decisions]
    # Each decision's turn and roll: keep N after roll N, the box after the turn's last roll.
    when = page.locator("#review .decisions tbody tr td:nth-child(2)").all_inner_texts()
    assert when == [f"T{d['turn']} R{3 - d['rerolls_left']}" for d in decisions]
    # The running tally of the play bar adds up the advice's losses the same way.
    assert f"{review['total_loss']:.3f} points lost" in page.inner_text("#play-status")
    shot(page, "play-along-review-375x667.png")
    assert_accessible(page, "the game review")

    # The review is kept with the game: a reload shows it again without asking anew.
    shown = page.inner_text("#review-body")
    page.reload()
    page.wait_for_selector('#review[data-state="ready"]')
    assert page.inner_text("#review-body") == shown
    assert len([r for r in sent if r.url == f"{service.url}/v1/review"]) == 2
    # A new game starts from an empty scorecard.
    page.click("#review-new-game")
    assert page.inner_text("#roll-text") == "Turn 1 of 6 · roll 1 of 3"
    assert page.locator("#boxes li.filled").count() == 0


# One die, one roll a turn, two boxes: a game of two decisions, the first of which can cost
# points (6 in High leaves Sixes worth 1 on average instead of 6 + 3.5 the other way round:
# a loss of 2.5) and the second of which cannot (one box is left).
ONE_ROLL = {
    "name": "one-roll-two-boxes",
    "dice": 1,
    "rerolls": 0,
    "boxes": [
        {"name": "high", "kind": "chance"},
        {"name": "sixes", "kind": "upper", "face": 6},
    ],
}


def test_a_loss_of_0_is_not_shown_as_a_mistake_in_the_review(page: Any, service: Service) -> None:
    """In the review a decision that lost nothing shows its 0 in another colour than the
    mistakes' losses: a loss of 0 is not a mistake."""
    post_json(service, "/v1/rules", ONE_ROLL)
    open_page(page, service)
    page.locator("label:has(input[value='play'])").tap()
    page.select_option("#rules", ONE_ROLL["name"])
    tap_die(page, 6)
    wait_advice(page)
    choose(page, next(i for i, r in enumerate(rows(page)) if r["words"] == "score 6 in High"))
    tap_die(page, 2)
    wait_advice(page)
    choose(page, 0)
    page.wait_for_selector('#review[data-state="ready"]')
    cells = page.locator("#review .decisions tbody td.loss")
    assert cells.all_inner_texts() == [f"{MINUS}2.500", "0"]
    mistake, none = (cells.nth(i).evaluate("td => getComputedStyle(td).color") for i in (0, 1))
    assert none != mistake, "a loss of 0 is drawn in the mistakes' colour"


def _cold_then_through(calls: list[float]) -> Any:
    def handle(route: Any) -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            route.fulfill(
                status=503,
                headers={"Retry-After": "1"},
                content_type="application/json",
                body=json.dumps(
                    {
                        "error": {
                            "field": "state",
                            "message": "still computing this state; retry shortly "
                            "(the work goes on)",
                        }
                    }
                ),
            )
        else:
            route.continue_()

    return handle


def test_cold_state_says_computing_and_retries(page: Any, service: Service) -> None:
    """A 503 with Retry-After: 1 shows the computing message; the page asks again itself."""
    calls: list[float] = []
    page.route("**/v1/advice", _cold_then_through(calls))
    open_page(page, service)
    page.select_option("#rules", "yahtzee-upper")
    page.fill("#box-sixes-points", "24")
    for face in (3, 3, 5, 6, 6):
        tap_die(page, face)
    status = page.locator("#status")
    status.wait_for(state="visible")
    assert "computing this position" in status.inner_text()
    assert "asks again by itself in 1 s" in status.inner_text()
    assert page.inner_text("#quick") == "The solver is computing this position…"
    assert page.get_attribute("#advice", "data-state") == "computing"
    shot(page, "computing-503-375x667.png")
    assert_accessible(page, "the computing message")
    wait_advice(page)
    assert len(calls) == 2
    assert calls[1] - calls[0] >= 0.9
    assert page.inner_text("#status") == ""
    assert page.inner_text("#quick") == f"Best move: {page.inner_text('#best-move')}"
    _timings["retry_after_503_s"] = round(calls[1] - calls[0], 2)


def test_refused_positions_show_the_message(page: Any, service: Service) -> None:
    """A bad entry is caught on the page; a 4xx from the service shows its message."""
    open_page(page, service)
    error = page.locator("#error")
    page.fill("#box-twos-points", "7")
    sync_api.expect(error).to_have_text("Twos: the points must be a multiple of 2 from 0 to 10.")
    page.fill("#box-twos-points", "8")
    sync_api.expect(error).to_have_text("")

    def refuse(route: Any) -> None:
        body = {"error": {"field": "dice", "message": "face 7 is outside 1..6"}}
        route.fulfill(status=422, content_type="application/json", body=json.dumps(body))

    page.route("**/v1/advice", refuse)
    for face in (1, 1, 4, 5, 6):
        tap_die(page, face)
    page.wait_for_selector('#advice[data-state="error"]')
    sync_api.expect(error).to_have_text(
        "The service refused this position: face 7 is outside 1..6 (dice)."
    )
    shot(page, "refused-422-375x667.png")
    assert_accessible(page, "the error message")


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_a_game_the_server_has_not_solved_is_solved_in_the_background(
    page: Any, tmp_path: Path
) -> None:
    """Past a lowered cold budget, on a server without workers and on loopback: the page
    says what the first answer costs; the player starts the solve, sees its progress (the
    first question after the start is answered 503 here, as while a longer solve runs) and
    then the best move."""
    with Service(tmp_path / "background", options=["--cold-budget", "10"]) as small:
        solves: list[Any] = []
        page.on("request", lambda r: solves.append(r) if r.url.endswith("/v1/solve") else None)
        held: list[float] = []

        def hold_the_first_after_the_start(route: Any) -> None:
            if solves and not held:
                _cold_then_through(held)(route)
            else:
                route.continue_()

        page.route("**/v1/advice", hold_the_first_after_the_start)
        open_page(page, small)
        page.select_option("#rules", "yahtzee-lower")
        for face in (2, 3, 4, 5, 6):
            tap_die(page, face)
        offer = page.locator("#solve-offer")
        offer.wait_for(state="visible")
        words = page.inner_text("#solve-offer-text")
        assert "This server has not solved yahtzee-lower yet" in words
        assert "128 blocks" in words
        assert page.inner_text("#error") == ""
        assert (
            page.inner_text("#quick") == "This server has not solved yahtzee-lower yet: see below."
        )
        shot(page, "background-solve-offer-375x667.png")
        assert_accessible(page, "the offer of a background solve")
        page.click("#solve-start")
        status = page.locator("#status")
        sync_api.expect(status).to_contain_text("solving yahtzee-lower in the background")
        sync_api.expect(status).to_contain_text("of 128 blocks")
        assert offer.is_hidden()
        wait_advice(page)
        assert len(solves) == 1
        coverage = json.loads(
            urllib.request.urlopen(f"{small.url}/v1/rules/yahtzee-lower/coverage").read()
        )
        assert coverage["blocks_done"] == 128


# Points no game can put in these boxes under the yahtzee rules, each with the page's words
# beside the box (from the possible points of GET /v1/rules), then points a game can.
IMPOSSIBLE_POINTS = [
    ("yahtzee", "30", "Yahtzee: the points must be 0 or 50."),
    ("full_house", "20", "Full House: the points must be 0 or 25."),
    ("large_straight", "35", "Large Straight: the points must be 0 or 40."),
    ("chance", "3", "Chance: the points must be from 5 to 30."),
    ("chance", "31", "Chance: the points must be from 5 to 30."),
    ("three_of_a_kind", "4", "Three of a Kind: the points must be 0 or 5 to 30."),
]
POSSIBLE_POINTS = {
    "yahtzee": 0,
    "full_house": 25,
    "large_straight": 40,
    "chance": 5,
    "three_of_a_kind": 30,
}


def advice_asked(sent: list[Any], service: Service) -> list[dict[str, Any]]:
    """The states of the POST /v1/advice requests the page has sent so far."""
    return [json.loads(r.post_data)["state"] for r in sent if r.url == f"{service.url}/v1/advice"]


def test_impossible_points_are_refused_beside_the_box(
    page: Any, service: Service, sent: list[Any]
) -> None:
    """Points no game can put in a lower box get the message beside it, count for nothing
    and ask nothing of the service; points a game can are counted and asked about."""
    open_page(page, service)
    for face in REFERENCE_DICE:
        tap_die(page, face)
    wait_advice(page)
    entered: dict[str, int] = {}
    for name, points, message in IMPOSSIBLE_POINTS:
        asked = len(advice_asked(sent, service))
        page.fill(f"#box-{name}-points", points)
        beside = page.locator(f'.box-row[data-box="{name}"] .field-message')
        sync_api.expect(beside).to_have_text(message)
        assert page.get_attribute(f"#box-{name}-points", "aria-invalid") == "true"
        assert page.get_attribute(f"#box-{name}-points", "aria-describedby") == (
            beside.get_attribute("id")
        )
        assert page.inner_text("#banked") == "?"
        page.wait_for_selector('#advice[data-state="error"]')  # the page has decided
        sync_api.expect(page.locator("#error")).to_have_text(message)
        assert len(advice_asked(sent, service)) == asked, "the page asked with bad points"
        if (name, points) == ("chance", "3"):
            assert_fits(page, SMALL_PHONE)
            shot(page, "impossible-points-320x568.png")
            assert_accessible(page, "a box's message at 320x568")
            page.set_viewport_size(PHONE)

        page.fill(f"#box-{name}-points", str(POSSIBLE_POINTS[name]))
        sync_api.expect(beside).to_have_text("")
        assert page.get_attribute(f"#box-{name}-points", "aria-invalid") is None
        wait_advice(page)
        entered[name] = POSSIBLE_POINTS[name]
        assert page.inner_text("#banked") == str(sum(entered.values()))
        assert name in advice_asked(sent, service)[-1]["filled"]
    assert page.inner_text("#error") == ""


def test_extra_yahtzees_count_only_after_50_in_the_yahtzee_box(page: Any, service: Service) -> None:
    """The extra-Yahtzee count is closed while the Yahtzee box is open or holds 0, and then
    adds nothing; after 50 it adds +100 each, one at most per other box filled."""
    open_page(page, service)
    extra = page.locator("#extra-bonuses")
    hint = "Counts once Yahtzee holds 50."
    sync_api.expect(extra).to_be_disabled()
    sync_api.expect(page.locator("#extra-bonuses-hint")).to_have_text(hint)
    page.fill("#box-chance-points", "20")
    page.fill("#box-full_house-points", "25")
    page.check("#box-yahtzee")  # ticked alone: 0, a scratch
    sync_api.expect(extra).to_be_disabled()
    assert page.inner_text("#banked") == "45"

    page.fill("#box-yahtzee-points", "50")
    sync_api.expect(extra).to_be_enabled()
    sync_api.expect(page.locator("#extra-bonuses-hint")).to_have_text("")
    extra.fill("2")
    sync_api.expect(page.locator("#banked")).to_have_text(str(45 + 50 + 200))
    extra.fill("3")  # three extra Yahtzees need three boxes besides Yahtzee: two are filled
    message = page.locator("#extra-bonuses-message")
    sync_api.expect(message).to_have_text(
        "Extra Yahtzees: enter a whole number, at most 2 (one for each box filled besides Yahtzee)."
    )
    assert extra.get_attribute("aria-invalid") == "true"
    assert page.inner_text("#banked") == "?"
    assert_accessible(page, "the extra Yahtzees' message")

    page.fill("#box-yahtzee-points", "0")
    sync_api.expect(extra).to_be_disabled()
    sync_api.expect(extra).to_have_value("0")
    sync_api.expect(message).to_have_text("")
    assert page.inner_text("#banked") == "45"
    page.uncheck("#box-yahtzee")
    sync_api.expect(extra).to_be_disabled()
    assert page.inner_text("#banked") == "45"


def test_a_wrong_lower_box_leaves_the_upper_total_known(page: Any, service: Service) -> None:
    """Impossible points in a lower box make the points banked unknown, not the upper
    total: that one is unknown only while an upper box is wrong."""
    open_page(page, service)
    page.fill("#box-twos-points", "8")
    page.fill("#box-fours-points", "12")
    page.fill("#box-full_house-points", "20")
    sync_api.expect(page.locator("#error")).to_have_text("Full House: the points must be 0 or 25.")
    assert page.inner_text("#banked") == "?"
    assert page.inner_text("#upper-total") == "20"
    assert "of 63 for the +35 bonus" in page.inner_text("#totals")
    page.fill("#box-twos-points", "7")
    sync_api.expect(page.locator("#upper-total")).to_have_text("?")
    assert "for the +35 bonus" not in page.inner_text("#totals")


def test_negative_points_are_refused_as_negative(page: Any, service: Service) -> None:
    """Minus points are answered in words that say what is wrong: no box holds less than 0."""
    open_page(page, service)
    page.fill("#box-twos-points", "-4")
    message = "Twos: the points cannot be negative."
    sync_api.expect(page.locator('.box-row[data-box="twos"] .field-message')).to_have_text(message)
    sync_api.expect(page.locator("#error")).to_have_text(message)
    assert page.inner_text("#banked") == "?"
    page.fill("#box-twos-points", "4")
    sync_api.expect(page.locator("#error")).to_have_text("")
    assert page.inner_text("#banked") == "4"


def test_the_placeholder_of_the_others_scores_shows_in_full(page: Any, service: Service) -> None:
    """The example in the others' final scores field fits inside it, on both phone widths."""
    open_page(page, service)
    assert page.get_attribute("#others", "placeholder") == "e.g. 231, 254"
    for size in (PHONE, SMALL_PHONE):
        page.set_viewport_size(size)
        room = page.evaluate(
            """() => {
                const input = document.querySelector('#others');
                const style = getComputedStyle(input);
                const context = document.createElement('canvas').getContext('2d');
                context.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} `
                    + style.fontFamily;
                return {
                    text: context.measureText(input.placeholder).width,
                    inside: input.clientWidth - parseFloat(style.paddingLeft)
                        - parseFloat(style.paddingRight),
                };
            }"""
        )
        assert room["text"] <= room["inside"], (size, room)


# --- rule sets of any shape ------------------------------------------------------------------

# Maxi Yatzy three boxes from the end: Ones to Sixes hold 63 (short of the 84 the +100 bonus
# needs), Tower, Chance and Maxi Yatzy are open, every other box is scratched.
MAXI_UPPER = {"ones": 3, "twos": 6, "threes": 9, "fours": 12, "fives": 15, "sixes": 18}
MAXI_OPEN = ("tower", "chance", "maxi_yatzy")
MAXI_DICE = [2, 3, 5, 5, 6, 6]

# A house rule of two dice and three boxes filled in scorecard order, registered over HTTP.
TINY = {
    "name": "tiny-pair",
    "description": "Two dice, three boxes in order",
    "dice": 2,
    "rerolls": 1,
    "order": "forced",
    "upper_threshold": 6,
    "upper_bonus": 10,
    "boxes": [
        {"name": "sixes", "kind": "upper", "face": 6},
        {"name": "pair", "label": "A Pair", "kind": "pairs", "count": 1},
        {"name": "chance", "kind": "chance"},
    ],
}


def get_json(service: Service, path: str) -> Any:
    with urllib.request.urlopen(service.url + path, timeout=30) as answer:
        return json.load(answer)


def rule_set(service: Service, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(r for r in get_json(service, "/v1/rules") if r["name"] == name)
    return found


def box_rows(page: Any) -> list[str]:
    """The scorecard's boxes as shown, in order."""
    found: list[str] = page.locator("#boxes .box-row .box-name").all_inner_texts()
    return [text.removesuffix("NEXT").strip() for text in found]


def best_value(service: Service, asked: dict[str, Any]) -> float:
    """The service's own value of the position the page asked about."""
    value: float = post_json(service, "/v1/advice", asked)["value"]
    return value


def test_maxi_yatzy_shows_six_dice_and_twenty_boxes(
    page: Any, service: Service, sent: list[Any]
) -> None:
    """Maxi Yatzy: six dice to enter, its 20 boxes labelled in scorecard order, no Yahtzee
    bonus count, the upper total measured against 84; advice three boxes from the end."""
    maxi = rule_set(service, "maxi-yatzy")
    open_page(page, service)
    page.select_option("#rules", "maxi-yatzy")
    assert page.locator("#dice .die.empty").count() == 6
    assert page.inner_text("#dice-hint").startswith("Tap the six dice you rolled")
    assert box_rows(page) == [maxi["labels"][name] for name in maxi["boxes"]]
    assert len(maxi["boxes"]) == 20
    assert page.locator('input[name="roll"]').count() == 3
    assert page.is_hidden("#extra-bonus-field")

    for name, points in MAXI_UPPER.items():
        page.fill(f"#box-{name}-points", str(points))
    for name in maxi["boxes"]:
        if name not in MAXI_UPPER and name not in MAXI_OPEN:
            page.check(f"#box-{name}")  # ticked alone: a scratch, 0
    assert page.inner_text("#upper-total") == "63"
    assert "of 84 for the +100 bonus" in page.inner_text("#totals")
    for face in MAXI_DICE:
        tap_die(page, face)
    assert page.get_attribute('.pad-button[data-face="1"]', "aria-disabled") == "true"
    wait_advice(page)

    asked = json.loads(next(r for r in reversed(sent) if r.url.endswith("/v1/advice")).post_data)
    assert asked["rules"] == "maxi-yatzy"
    assert asked["state"]["dice"] == MAXI_DICE
    assert sorted(asked["state"]["filled"]) == sorted(set(maxi["boxes"]) - set(MAXI_OPEN))
    assert asked["state"]["upper"] == 63
    assert page.inner_text("#best-move").startswith("keep 5 5 6 6 and reroll 2 dice")
    assert kept_faces(page) == [5, 5, 6, 6]
    assert page.inner_text("#best-value") == f"{best_value(service, asked):.3f}"
    assert page.inner_text("#banked") == "63"
    assert_fits(page, SMALL_PHONE)
    shot(page, "maxi-yatzy-late-320x568.png")
    assert_accessible(page, "Maxi Yatzy at 320x568")


def test_a_registered_rule_set_is_offered_and_advised(
    page: Any, service: Service, sent: list[Any]
) -> None:
    """A rule set registered over HTTP is in the picker (its pages followed to the end,
    under "Registered"); the page takes its two dice, its three boxes with their labels and
    its two rolls, and, its boxes being filled in order, opens only the next one."""
    registered = post_json(service, "/v1/rules", TINY)
    assert registered["name"] == "tiny-pair"
    # Pages of four: the page follows the Link headers through all of them.
    page.route(
        lambda url: url.endswith("/v1/rules"),
        lambda route: route.continue_(url=f"{service.url}/v1/rules?limit=4"),
    )
    open_page(page, service)
    listed = [r["name"] for r in get_json(service, "/v1/rules")]
    offered = page.eval_on_selector_all("#rules option", "options => options.map(o => o.value)")
    assert offered == listed
    pages = [r for r in sent if "/v1/rules" in r.url and r.method == "GET"]
    assert len(pages) == -(-len(listed) // 4), [r.url for r in pages]
    group = page.locator('#rules optgroup[label="Registered"] option')
    assert "tiny-pair" in group.all_inner_texts()

    # A yahtzee scorecard with Chance filled is not kept: in scorecard order Sixes comes first.
    page.fill("#box-chance-points", "12")
    page.select_option("#rules", "tiny-pair")
    assert page.inner_text("#rules-description").startswith(
        "Registered: 2 dice, 3 boxes filled in scorecard order, 2 rolls a turn."
    )
    assert box_rows(page) == ["Sixes", "A Pair", "Chance"]
    assert page.locator("#dice .die.empty").count() == 2
    assert page.locator('input[name="roll"]').count() == 2
    assert page.is_hidden("#extra-bonus-field")
    sync_api.expect(page.locator("#rules-note")).to_have_text(
        "Cleared what tiny-pair cannot hold: Chance 12."
    )
    assert not page.is_checked("#box-chance")

    # Only the next box opens: Sixes, then A Pair.
    next_row = page.locator(".box-row.next")
    sync_api.expect(next_row).to_have_attribute("data-box", "sixes")
    for closed in ("#box-pair", "#box-pair-points", "#box-chance", "#box-chance-points"):
        assert page.is_disabled(closed), closed
    page.fill("#box-sixes-points", "12")
    sync_api.expect(next_row).to_have_attribute("data-box", "pair")
    for opened in ("#box-sixes", "#box-pair", "#box-pair-points"):
        assert page.is_enabled(opened), opened
    for closed in ("#box-chance", "#box-chance-points"):
        assert page.is_disabled(closed), closed
    assert page.inner_text("#upper-total") == "12"
    assert "(bonus +10 reached)" in page.inner_text("#totals")
    assert page.inner_text("#banked") == "22"

    tap_die(page, 3)
    tap_die(page, 3)
    wait_advice(page)
    asked = json.loads(next(r for r in reversed(sent) if r.url.endswith("/v1/advice")).post_data)
    assert asked == {
        "rules": "tiny-pair",
        "state": {
            "filled": ["sixes"],
            "upper": 12,
            "yahtzee_bonus": False,
            "rerolls_left": 1,
            "dice": [3, 3],
        },
    }
    scored = [r["words"] for r in rows(page) if r["kind"] == "score"]
    assert scored == ["score 6 in A Pair"]  # the next box is the only one to score in
    assert page.inner_text("#best-value") == f"{best_value(service, asked):.3f}"
    shot(page, "registered-rule-set-375x667.png")
    assert_accessible(page, "a registered rule set in forced order")

    # Played along, the game's turns are its boxes and its rolls two; Sixes comes next.
    page.locator("label:has(input[value='play'])").tap()
    page.select_option("#rules", "tiny-pair")
    assert page.inner_text("#roll-text") == "Turn 1 of 3 · roll 1 of 2"
    sync_api.expect(page.locator(".box-row.next .open")).to_have_text("next")
    assert page.get_attribute(".box-row.next", "data-box") == "sixes"


# Saved rolls on two dice and three boxes (cold in milliseconds), a bank of one roll at most.
TINY_SAVED = {
    "name": "tiny-saved",
    "dice": 2,
    "rerolls": 1,
    "saved_rolls": True,
    "max_saved": 1,
    "boxes": [
        {"name": "sixes", "kind": "upper", "face": 6},
        {"name": "doubles", "kind": "all_alike", "points": 20},
        {"name": "chance", "kind": "chance"},
    ],
}


def choose_words(page: Any, words: str) -> None:
    """Choose the move the table words so."""
    choose(page, next(i for i, r in enumerate(rows(page)) if r["words"] == words))


def assert_bank(page: Any, turn: str, left: int, carried: int) -> None:
    """The turn's place, the rolls left after this roll and the bank the turn started with."""
    sync_api.expect(page.locator("#roll-text")).to_have_text(turn)
    sync_api.expect(page.locator("#rolls-left-now")).to_have_text(str(left))
    sync_api.expect(page.locator("#bank-carried")).to_have_text(str(carried))


def test_saved_rolls_are_counted_down_and_carried_to_the_next_turn(
    page: Any, service: Service, sent: list[Any]
) -> None:
    """Playing along under saved rolls: each roll takes one from what is left, a score
    carries what is left (at most the cap) into the next turn, the advice says what becomes
    of the bank, and the page asks with rolls_left, never rerolls_left."""
    post_json(service, "/v1/rules", TINY_SAVED)
    open_page(page, service)
    # Any position: the bank and the rolls left are typed (none typed: the first roll's).
    page.select_option("#rules", "tiny-saved")
    assert page.is_hidden("#roll-field")
    page.fill("#box-doubles-points", "0")
    page.fill("#saved", "1")
    for face in (6, 6):
        tap_die(page, face)
    wait_advice(page)
    assert advice_asked(sent, service)[-1]["rolls_left"] == 2  # 1 saved and 1 reroll
    page.fill("#rolls-left", "0")
    sync_api.expect(page.locator("#best-move")).to_have_text("score 12 in Sixes and carry no rolls")
    page.fill("#saved", "2")  # one box filled: a bank of one roll at most
    sync_api.expect(page.locator("#error")).to_contain_text("(saved)")
    page.fill("#saved", "-1")
    sync_api.expect(page.locator("#bank-message")).to_have_text(
        "Rolls saved from earlier turns: a whole number, 0 or more."
    )

    page.locator("label:has(input[value='play'])").tap()
    page.select_option("#rules", "tiny-saved")
    assert page.inner_text("#rules-description").startswith(
        "Registered: 2 dice, 3 boxes, 2 rolls a turn, unused rolls saved to later turns "
        "(at most 1)."
    )
    assert page.is_hidden("#bank-field")
    assert_bank(page, "Turn 1 of 3 · roll 1 of 2", 1, 0)
    for face in (6, 6):
        tap_die(page, face)
    wait_advice(page)
    choose_words(page, "score 20 in Doubles and carry 1 roll")
    sync_api.expect(page.locator("#status")).to_have_text(
        "Scored 20 in Doubles and carried 1 roll to the next turn."
    )
    assert_bank(page, "Turn 2 of 3 · roll 1 of 3", 2, 1)  # the roll carried and 1 of its own

    for face in (3, 4):
        tap_die(page, face)
    wait_advice(page)
    choose_words(page, "score 7 in Chance and carry 1 roll")  # 2 left, 1 carried: the cap
    assert_bank(page, "Turn 3 of 3 · roll 1 of 3", 2, 1)

    for face in (1, 2):
        tap_die(page, face)
    wait_advice(page)
    choose_words(page, "reroll all two dice (1 roll left after it)")
    assert_bank(page, "Turn 3 of 3 · roll 2 of 3", 1, 1)
    for face in (2, 5):
        tap_die(page, face)
    wait_advice(page)
    words = [r["words"] for r in rows(page)]
    assert "reroll all two dice (no rolls left after it)" in words
    assert "score 0 in Sixes and carry 1 roll" in words
    asked = [json.loads(r.post_data) for r in sent if r.url.endswith("/v1/advice")]
    assert asked[-1]["state"] == {
        "filled": ["doubles", "chance"],
        "upper": 0,
        "yahtzee_bonus": True,  # 20 in the all-alike box
        "saved": 1,
        "rolls_left": 1,
        "dice": [2, 5],
    }
    assert all("rerolls_left" not in a["state"] for a in asked)
    assert saved_play(page)["saved"] == 1
    shot(page, "saved-rolls-play-375x667.png")
    assert_accessible(page, "a game with saved rolls")


def test_a_saved_rolls_rule_set_not_solved_offers_its_whole_solve_at_its_size(
    page: Any, tmp_path: Path
) -> None:
    """yatzy-saved on a server that has not solved it, past a lowered cold budget: the page
    asks with the bank it is told (no rerolls_left) and offers the whole solve at the size
    the service reports for it, with the store it takes (8 bytes a turn start)."""
    rules = json.loads((REPO / "examples" / "rules" / "yatzy-saved.json").read_text())
    with Service(tmp_path / "saved", options=["--cold-budget", "1000"]) as small:
        post_json(small, "/v1/rules", rules)
        with pytest.raises(urllib.error.HTTPError) as refused:
            post_json(small, "/v1/value", {"rules": "yatzy-saved", "state": "start"})
        assert refused.value.code == 422
        reported = json.load(refused.value)["error"]["solve"]
        sent: list[Any] = []
        page.on("request", lambda request: sent.append(request))
        open_page(page, small)
        page.select_option("#rules", "yatzy-saved")
        assert page.is_hidden("#roll-field")
        page.fill("#saved", "0")
        sync_api.expect(page.locator("#rolls-left")).to_have_attribute("placeholder", "2")
        for face in (1, 2, 3, 5, 5):
            tap_die(page, face)
        page.locator("#solve-offer").wait_for(state="visible")
        words = page.inner_text("#solve-offer-text")
        stored = reported["store_bytes"]
        unit, size = next((u, s) for u, s in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)) if stored >= s)
        assert f"{reported['turn_starts']:,} positions at the start of a turn" in words
        assert f"in {reported['blocks_total']:,} blocks" in words
        # What it costs, as the service timed a sample of its blocks: CPU time and store.
        assert re.search(r"about \d+ CPU (second|minute|hour)s? on one of its cores", words)
        assert f"and {stored / size:.1f} {unit} in its store" in words
        asked = json.loads(
            next(r for r in reversed(sent) if r.url.endswith("/v1/advice")).post_data
        )
        assert asked["state"]["rolls_left"] == 2
        assert "rerolls_left" not in asked["state"]
        shot(page, "saved-rolls-offer-375x667.png")
        assert_accessible(page, "the offer of a whole solve with saved rolls")


def test_the_bonus_count_follows_the_all_alike_box(page: Any, service: Service) -> None:
    """With a bonus for every further roll of all dice alike, the count opens once the
    all-alike box holds its points (8 here, not Yahtzee's 50), under that box's label."""
    post_json(service, "/v1/rules", {
        "name": "twin-bonus",
        "dice": 2,
        "yahtzee_bonus": 5,
        "boxes": [
            {"name": "chance", "kind": "chance"},
            {"name": "twin", "label": "Twin", "kind": "all_alike", "points": 8},
        ],
    })  # fmt: skip
    open_page(page, service)
    page.select_option("#rules", "twin-bonus")
    extra = page.locator("#extra-bonuses")
    assert page.inner_text('label[for="extra-bonuses"]') == "Extra Twins so far (+5 each)"
    sync_api.expect(page.locator("#extra-bonuses-hint")).to_have_text("Counts once Twin holds 8.")
    page.fill("#box-chance-points", "7")
    page.fill("#box-twin-points", "8")
    sync_api.expect(extra).to_be_enabled()
    extra.fill("1")
    sync_api.expect(page.locator("#banked")).to_have_text(str(7 + 8 + 5))


def test_a_new_rule_set_keeps_only_the_entries_it_can_hold(page: Any, service: Service) -> None:
    """Picking another rule set keeps the position's entries that the new one could hold
    and clears the others, saying which: yahtzee's Full House 25 is no Maxi Yatzy score."""
    open_page(page, service)
    page.fill("#box-twos-points", "8")
    page.fill("#box-full_house-points", "25")
    page.fill("#box-chance-points", "20")
    page.select_option("#rules", "maxi-yatzy")
    sync_api.expect(page.locator("#rules-note")).to_have_text(
        "Cleared what maxi-yatzy cannot hold: Full House 25."
    )
    assert page.inner_text("#error") == ""
    assert not page.is_checked("#box-full_house")
    assert page.input_value("#box-full_house-points") == ""
    assert page.input_value("#box-twos-points") == "8"
    assert page.input_value("#box-chance-points") == "20"
    assert page.inner_text("#upper-total") == "8"
    assert page.inner_text("#banked") == "28"
    page.select_option("#rules", "yahtzee")
    sync_api.expect(page.locator("#rules-note")).to_have_text("")
    assert not page.is_checked("#box-full_house")
    assert page.inner_text("#banked") == "28"


def test_play_along_keeps_the_picked_rule_set(page: Any, service: Service) -> None:
    """The rule set picked stays picked from one mode to the other while no game is under
    way: a player who picked yahtzee-lower plays yahtzee-lower."""
    lower = rule_set(service, "yahtzee-lower")
    open_page(page, service)
    page.select_option("#rules", "yahtzee-lower")
    page.locator("label:has(input[value='play'])").tap()
    assert page.input_value("#rules") == "yahtzee-lower"
    assert page.inner_text("#roll-text") == f"Turn 1 of {len(lower['boxes'])} · roll 1 of 3"
    assert box_rows(page) == [lower["labels"][name] for name in lower["boxes"]]
    page.select_option("#rules", "yahtzee-upper")
    page.locator("label:has(input[value='advise'])").tap()
    assert page.input_value("#rules") == "yahtzee-upper"
    assert len(box_rows(page)) == 6


def test_a_pasted_rule_set_is_registered_and_picked(page: Any, service: Service) -> None:
    """A pasted rule-set file is registered and picked; one the service refuses shows its
    message and the field it names."""
    open_page(page, service)
    page.click("#add-rules summary")
    page.fill("#rules-file", json.dumps({"name": "bad-face", "boxes": [
        {"name": "high", "kind": "upper", "face": 9},
    ]}))  # fmt: skip
    page.click("#register")
    sync_api.expect(page.locator("#register-error")).to_have_text(
        "The service refused this rule set: expected an integer 1..6, got 9 (boxes[0].face)."
    )
    assert page.get_attribute("#rules-file", "aria-invalid") == "true"
    assert page.input_value("#rules") == "yahtzee"
    assert_accessible(page, "a refused rule-set file")

    one_die = {
        "name": "one-die",
        "dice": 1,
        "rerolls": 0,
        "boxes": [
            {"name": "high", "kind": "chance"},
            {"name": "sixes", "kind": "upper", "face": 6},
        ],
    }
    page.fill("#rules-file", json.dumps(one_die))
    page.click("#register")
    sync_api.expect(page.locator("#register-status")).to_have_text("Added one-die, and picked it.")
    assert page.inner_text("#register-error") == ""
    assert page.get_attribute("#rules-file", "aria-invalid") is None
    assert page.input_value("#rules") == "one-die"
    assert rule_set(service, "one-die")["dice"] == 1
    assert page.inner_text("#dice-hint").startswith("Tap the die you rolled")
    assert page.is_hidden("#roll-field")  # one roll a turn: nothing to say
    assert box_rows(page) == ["High", "Sixes"]
    tap_die(page, 4)
    wait_advice(page)
    assert page.inner_text("#best-move") == "score 4 in High"
    shot(page, "pasted-rule-set-375x667.png")
    assert_accessible(page, "a pasted rule set, picked")


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_a_pasted_rule_set_is_used_inline_where_registering_needs_the_token(
    page: Any, service: Service, sent: list[Any]
) -> None:
    """Where POST /v1/rules wants the operator token (``serve --registration operator``
    answers 401 without one), the pasted rule set is read without registering it, picked,
    said to be this page's alone, and sent inline with each question; it stays after a
    reload, and the service never lists it."""

    def needs_the_token(route: Any) -> None:
        if route.request.method != "POST":
            route.fallback()
            return
        body = {"error": {"field": "authorization", "message": "send 'Authorization: Bearer'"}}
        route.fulfill(status=401, content_type="application/json", body=json.dumps(body))

    page.route(re.compile(r".*/v1/rules$"), needs_the_token)
    open_page(page, service)
    page.click("#add-rules summary")
    two_dice = {
        "name": "pasted-pair",
        "dice": 2,
        "rerolls": 0,
        "boxes": [
            {"name": "high", "kind": "chance"},
            {"name": "sixes", "kind": "upper", "face": 6},
        ],
    }
    page.fill("#rules-file", json.dumps(two_dice))
    page.click("#register")
    sync_api.expect(page.locator("#register-status")).to_contain_text(
        "Added pasted-pair for this page alone (only the service's operator may add rule sets"
    )
    assert page.input_value("#rules") == "pasted-pair"
    assert "pasted-pair" not in [r["name"] for r in get_json(service, "/v1/rules")]
    tap_die(page, 6)
    tap_die(page, 6)
    wait_advice(page)
    asked = [json.loads(r.post_data) for r in sent if r.url == f"{service.url}/v1/advice"]
    assert asked[-1]["rules"] == two_dice
    assert page.inner_text("#best-move") == "score 12 in Sixes"
    assert_accessible(page, "a pasted rule set used inline")
    page.fill("#rules-file", json.dumps(two_dice | {"name": "yahtzee"}))
    page.click("#register")
    sync_api.expect(page.locator("#register-error")).to_have_text(
        "The service refused this rule set: yahtzee is offered already; choose another name (name)."
    )
    assert page.input_value("#rules") == "pasted-pair"
    page.reload()
    page.wait_for_selector('#app[data-ready="yes"]')
    assert page.input_value("#rules") == "pasted-pair"


def test_play_to_reach_shows_every_moves_chance_beside_the_mean_advice(
    page: Any, service: Service, sent: list[Any]
) -> None:
    """The others' final scores make the target (the best + 1); the page asks for the
    points still needed and shows the chance of the target for every move, the one the
    service ranks first as the best move, and the mean's own best where it differs."""
    open_page(page, service)
    enter_reference_scorecard(page)
    for face in REFERENCE_DICE:
        tap_die(page, face)
    wait_advice(page)
    page.fill("#others", "231, 260")
    page.wait_for_selector("#reach")
    need = 261 - REFERENCE_BANKED
    asked = [json.loads(r.post_data) for r in sent if r.url == f"{service.url}/v1/advice"]
    assert asked[-1]["need"] == need
    answer = post_json(service, "/v1/advice", asked[-1])
    assert page.inner_text("#reach") == f"{100 * answer['probability']:.1f}%"
    assert f"{need} more points needed" in page.inner_text("#outlook")
    assert page.is_visible("#chance-head")
    chances = page.evaluate(
        "() => [...document.querySelectorAll('#actions tbody td.chance')].map(td => td.textContent)"
    )
    assert chances == [f"{100 * a['probability']:.1f}%" for a in answer["actions"]]
    assert page.inner_text("#best-move") == answer["actions"][0]["words"]
    mean_best = min(answer["actions"], key=lambda a: a["loss"])
    if mean_best is not answer["actions"][0]:
        assert f"For the best average instead: {mean_best['words']}" in page.inner_text("#outlook")
    assert_accessible(page, "play to reach")
    shot(page, "play-to-reach.png")
    page.fill("#others", "two hundred")
    page.wait_for_selector("#target-message:has-text('whole numbers')")
    page.fill("#others", "")
    page.fill("#target", "")
    page.wait_for_selector("#reach", state="detached")
    assert page.is_hidden("#chance-head")
    assert_reference_advice(page)


# yahtzee-lower with four of a kind, Yahtzee and chance open and 6 6 6 5 3 on the second
# roll of three: the bold keep 6 6 6 for a Yahtzee, the safe keep 5 6 6 6 for points in
# chance (`memo-solver advise --risk 0.1` and `--risk -0.1`).
RISK_FILLED = ("three_of_a_kind", "full_house", "small_straight", "large_straight")
RISK_DICE = (6, 6, 6, 5, 3)
RISK_BEST = {0.1: "keep 6 6 6 and reroll 2 dice", -0.1: "keep 5 6 6 6 and reroll 1 die"}


def asked_bodies(sent: list[Any], service: Service) -> list[dict[str, Any]]:
    """The POST /v1/advice bodies the page has sent so far."""
    return [json.loads(r.post_data) for r in sent if r.url == f"{service.url}/v1/advice"]


def risks_asked(sent: list[Any], service: Service) -> list[float | None]:
    """The `risk` of each POST /v1/advice the page has sent so far (None: not sent)."""
    return [body.get("risk") for body in asked_bodies(sent, service)]


def certainty_equivalents(page: Any) -> list[float]:
    shown: list[float] = page.evaluate(
        "() => [...document.querySelectorAll('#actions tbody td.risk')]"
        ".map(td => Number(td.textContent))"
    )
    return shown


def enter_risk_position(page: Any) -> None:
    page.select_option("#rules", "yahtzee-lower")
    for name in RISK_FILLED:
        page.check(f"#box-{name}")  # ticked alone: a scratch, 0
    page.check('input[name="roll"][value="2"]')
    for face in RISK_DICE:
        tap_die(page, face)
    wait_advice(page)


def test_the_risk_dial_reranks_the_moves_and_at_0_is_the_mean_page(
    page: Any, service: Service, sent: list[Any]
) -> None:
    """Moving the dial asks with `risk` and shows the moves best certainty equivalent first,
    each beside its expected final score; back at 0 the page is the mean's and sends none."""
    open_page(page, service)
    enter_risk_position(page)
    mean = rows(page)
    assert page.is_hidden("#risk-head")
    assert certainty_equivalents(page) == []
    assert set(risks_asked(sent, service)) == {None}
    assert page.get_attribute("#risk", "aria-valuetext") == "off: the best average"

    for theta, best in RISK_BEST.items():
        page.fill("#risk", str(theta))
        sync_api.expect(page.locator("#risk-head")).to_be_visible()  # the answer at a risk
        sync_api.expect(page.locator("#best-move")).to_have_text(best)
        assert risks_asked(sent, service)[-1] == theta
        shown = certainty_equivalents(page)
        assert len(shown) == len(mean)
        assert shown == sorted(shown, reverse=True)
        assert {r["words"] for r in rows(page)} == {r["words"] for r in mean}
        side = "bold" if theta > 0 else "safe"
        assert page.get_attribute("#risk", "aria-valuetext") == f"{theta} ({side})"
        if theta > 0:
            assert_fits(page, PHONE)
            shot(page, "risk-dial-375x667.png")
            assert_accessible(page, "the risk dial, bold")

    asked = len(risks_asked(sent, service))
    page.fill("#risk", "0")
    sync_api.expect(page.locator("#risk-head")).to_be_hidden()
    assert rows(page) == mean
    assert risks_asked(sent, service)[asked:] == [None] * (len(risks_asked(sent, service)) - asked)

    # The others' scores play to reach the best of them + 1 (`need`) with the dial at 0;
    # moved off 0, the dial plays at its risk instead.
    page.fill("#others", "150")
    sync_api.expect(page.locator("#chance-head")).to_be_visible()
    assert asked_bodies(sent, service)[-1].get("need") is not None
    page.fill("#risk", "0.1")
    sync_api.expect(page.locator("#risk-head")).to_be_visible()
    assert page.is_hidden("#chance-head")
    assert page.inner_text("#best-move") == RISK_BEST[0.1]  # the answer kept from above
    assert all("need" not in body for body in asked_bodies(sent, service) if "risk" in body)


def sign(x: float) -> int:
    return (x > 0) - (x < 0)


def test_the_gap_to_the_others_suggests_a_risk_bold_behind_and_safe_ahead(
    page: Any, service: Service, sent: list[Any]
) -> None:
    """Behind the best of the others' scores the page suggests a bold risk, ahead a safe
    one, 0 level with them, never less bold for a wider gap behind, within the dial's ends;
    the player's to apply (the dial moves to it) or ignore."""
    open_page(page, service)
    enter_risk_position(page)
    banked = {"three_of_a_kind": 30, "full_house": 25, "small_straight": 30, "large_straight": 40}
    for name, points in banked.items():  # enough banked to be 150 points ahead of a score
        page.fill(f"#box-{name}-points", str(points))
    sync_api.expect(page.locator("#banked")).to_have_text(str(sum(banked.values())))
    wait_advice(page)
    assert page.is_hidden("#risk-suggestion")  # no others' scores: nothing to suggest
    expected = sum(banked.values()) + max(r["value"] for r in rows(page))  # the mean final
    suggested: list[float] = []
    gaps = (-150, -60, -20, 0, 20, 60, 300)
    for gap in gaps:
        others = round(expected) + gap
        page.fill("#others", f"{others}, 12")
        shown = abs(others - expected)
        sync_api.expect(page.locator("#risk-suggestion-text")).to_contain_text(
            f"Expected {shown:.3f} points"
        )
        suggested.append(float(page.get_attribute("#risk-suggestion", "data-risk") or "nan"))
    assert suggested == sorted(suggested)  # monotone in the gap
    for gap, risk in zip(gaps, suggested, strict=True):
        assert -0.1 <= risk <= 0.1
        assert sign(risk) == sign(gap), (gap, risk)  # behind: bold, ahead: safe, level: 0
    assert suggested[0] == -0.1
    assert suggested[-1] == 0.1
    assert set(risks_asked(sent, service)) == {None}  # a suggestion, not applied

    assert_accessible(page, "a risk suggested")
    page.click("#risk-apply")
    sync_api.expect(page.locator("#risk-head")).to_be_visible()
    assert page.input_value("#risk") == "0.1"
    assert risks_asked(sent, service)[-1] == 0.1
    sync_api.expect(page.locator("#risk-apply")).to_be_hidden()  # the dial is at it


# One die, a chance box, one reroll: a 3 scored is 3 points, the reroll 3.5 on average and
# (1/theta) ln of the mean of exp(theta face) at a risk, 3.645 at 0.1: scoring the 3 loses
# 0.5 expected points, 0.645 certainty-equivalent points at 0.1.
ONE_DIE = {
    "name": "one-die-review",
    "dice": 1,
    "rerolls": 1,
    "boxes": [{"name": "chance", "kind": "chance"}],
}


def test_the_review_grades_against_the_strategy_the_dial_plays(
    page: Any, service: Service, sent: list[Any]
) -> None:
    """A game played with the dial at +0.1 is reviewed at that risk (what POST /v1/review
    answers at it: each decision's certainty-equivalent loss beside its expected points');
    the dial moved back to 0, the same game is reviewed for points."""
    post_json(service, "/v1/rules", ONE_DIE)
    open_page(page, service)
    page.locator("label:has(input[value='play'])").tap()
    page.select_option("#rules", ONE_DIE["name"])
    page.fill("#risk", "0.1")
    tap_die(page, 3)
    sync_api.expect(page.locator("#risk-head")).to_be_visible()  # the answer at the risk
    choose_words(page, "score 3 in Chance")
    page.wait_for_selector('#review[data-state="ready"] #risk-lost')

    def reviews() -> list[dict[str, Any]]:
        return [json.loads(r.post_data) for r in sent if r.url == f"{service.url}/v1/review"]

    asked = reviews()[-1]
    assert asked["risk"] == 0.1
    review = post_json(service, "/v1/review", asked)
    (decision,) = review["decisions"]
    bold = math.log(sum(math.exp(0.1 * face) for face in range(1, 7)) / 6) / 0.1
    assert decision["risk_loss"] == pytest.approx(bold - 3, abs=1e-9)
    assert decision["loss"] == pytest.approx(0.5, abs=1e-9)
    assert page.inner_text("#risk-lost") == f"{review['total_risk_loss']:.3f}" == "0.645"
    assert page.inner_text("#certain-score") == f"{review['certainty_equivalent']:.3f}"
    assert "Graded at risk +0.1 (bold)" in page.inner_text("#graded-at")
    cells = page.locator("#review .decisions tbody td.risk-loss").all_inner_texts()
    assert cells == [f"{MINUS}0.645"]
    assert page.locator("#review .decisions tbody td.loss").all_inner_texts() == [f"{MINUS}0.500"]
    assert_accessible(page, "a review at a risk")

    page.fill("#risk", "0")
    page.wait_for_selector("#review #risk-lost", state="detached")
    assert "risk" not in reviews()[-1]
    assert page.is_hidden("#graded-at")
    assert page.inner_text("#points-lost") == "0.500"
    assert page.locator("#review .decisions tbody td.risk-loss").count() == 0
