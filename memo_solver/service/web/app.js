/* memo-solver's players' page: plain JavaScript, no build step, nothing fetched from
 * outside this service. It keeps the scorecard, the dice and the roll of the turn, asks
 * POST /v1/advice for every legal move, and shows them best first. In play-along mode it
 * also keeps a whole game (in localStorage) as POST /v1/review reads one, and shows that
 * endpoint's review of every decision at the end. To play to reach a target (a final score,
 * or the best of the other players' + 1) it sends the points still needed as `need`, and
 * shows every move's chance of reaching it beside the mean advice. Every rule set comes from GET /v1/rules
 * (built in or registered, POST /v1/rules): its dice, rolls, boxes and fill order shape
 * the page, which knows no game of its own. Where the service lets only its operator register
 * (or its quota is reached), a pasted rule set is read by POST /v1/rules/preview and sent
 * inline with each question instead, kept in localStorage for this browser alone. Under a
 * rule set with saved rolls (its `saved_rolls`) a turn's unused rolls go to the bank: the
 * page shows the rolls left and the bank a turn started with, counts the rolls down as the
 * turn goes, carries what is left when a box is scored (at most its `max_saved`), and asks
 * with `saved` and `rolls_left` where the other rule sets send `rerolls_left`. Its risk
 * dial, off (0) unless moved, asks with `risk` and shows the moves as the service ranks them
 * at that risk, best certainty equivalent first (instead of a target's `need`). Given the
 * other players' scores, it suggests a risk from the gap to the best of them. */
"use strict";

(() => {
  const STORAGE_KEY = "memo-solver:page:v2"; // v1 saves lack the rolls a review needs: unread
  const FACES = 6;
  const NUMBER_WORDS = ["no", "one", "two", "three", "four", "five", "six"];
  const ORDINALS = ["1st", "2nd", "3rd", "4th", "5th", "6th"];
  const ADVICE_CACHE_SIZE = 200;
  /** Statuses of POST /v1/rules after which a pasted rule set is used inline instead: the
   * operator token is required (401, 403) or the registration quota is reached (429). */
  const INLINE_INSTEAD = new Set([401, 403, 429]);
  const TYPING_DELAY_MS = 250;
  /** The suggested risk: the points behind the best of the others (ahead: negative) over
   * this, clamped to the dial's ends and rounded to its step: a rule of thumb (50 points
   * behind: 0.05), the player's to take or leave. */
  const GAP_PER_RISK = 1000;
  const RISK_END = 0.1;
  const RISK_STEP = 0.01;

  const $ = (selector) => document.querySelector(selector);
  const el = {
    app: $("#app"),
    rules: $("#rules"),
    rulesDescription: $("#rules-description"),
    rulesNote: $("#rules-note"),
    rulesFile: $("#rules-file"),
    register: $("#register"),
    registerStatus: $("#register-status"),
    registerError: $("#register-error"),
    modeRadios: document.querySelectorAll('input[name="mode"]'),
    playBar: $("#play-bar"),
    playStatus: $("#play-status"),
    undo: $("#undo"),
    newGame: $("#new-game"),
    turn: $("#turn"),
    rollField: $("#roll-field"),
    rollText: $("#roll-text"),
    bankField: $("#bank-field"),
    saved: $("#saved"),
    rollsLeft: $("#rolls-left"),
    rollsLeftHint: $("#rolls-left-hint"),
    bankMessage: $("#bank-message"),
    bank: $("#bank"),
    diceHint: $("#dice-hint"),
    dice: $("#dice"),
    quick: $("#quick"),
    doBest: $("#do-best"),
    pad: document.querySelectorAll(".pad-button"),
    clearDice: $("#clear-dice"),
    advice: $("#advice"),
    status: $("#status"),
    error: $("#error"),
    solveOffer: $("#solve-offer"),
    solveOfferText: $("#solve-offer-text"),
    solveStart: $("#solve-start"),
    best: $("#best"),
    outlook: $("#outlook"),
    actionsWrap: $("#actions-wrap"),
    actionsBody: $("#actions tbody"),
    review: $("#review"),
    reviewStatus: $("#review-status"),
    reviewError: $("#review-error"),
    reviewBody: $("#review-body"),
    reviewNewGame: $("#review-new-game"),
    scorecard: $("#scorecard"),
    scorecardHint: $("#scorecard-hint"),
    boxes: $("#boxes"),
    extraField: $("#extra-bonus-field"),
    extraLabel: $('label[for="extra-bonuses"]'),
    extra: $("#extra-bonuses"),
    extraHint: $("#extra-bonuses-hint"),
    totals: $("#totals"),
    target: $("#target"),
    others: $("#others"),
    targetMessage: $("#target-message"),
    chanceHead: $("#chance-head"),
    risk: $("#risk"),
    riskValue: $("#risk-value"),
    riskHead: $("#risk-head"),
    riskSuggestion: $("#risk-suggestion"),
    riskSuggestionText: $("#risk-suggestion-text"),
    riskApply: $("#risk-apply"),
  };

  // Figures the browser tests read: first render and tap-to-advice times, in ms.
  const timings = { ready: null, advice: [] };
  window.memoTimings = timings;

  /** @type {Map<string, object>} */
  let ruleSets = new Map();
  let state = loadState();
  let lastAdvice = null; // {key, request, data}
  let lastInputAt = null;
  let requestSeq = 0;
  let inFlight = null;
  let retryTimer = null;
  let typingTimer = null;
  let pendingTimer = null;
  let computingSince = null;
  let offered = null; // the whole-game solve the service offers for the position on show
  let solving = null; // {name, fingerprint, total, from, since}: one the player started
  const adviceCache = new Map();
  const turnStartValues = new Map(); // scorecard -> its value before a turn's first roll

  // --- state -------------------------------------------------------------------------------

  function freshAdvise(rules) {
    // saved, rollsLeft: as typed, under saved rolls ("" for rollsLeft: the turn's first roll)
    return { rules, boxes: {}, extraBonuses: 0, roll: 1, dice: [], saved: "", rollsLeft: "" };
  }

  function freshPlay(rules) {
    return {
      rules,
      boxes: {}, // name -> points, for the filled boxes
      bonus: 0, // bonus points banked (upper bonus, extra Yahtzees)
      roll: 1,
      saved: 0, // under saved rolls, the bank the turn in play started with
      dice: [],
      turns: [], // the turns played, as POST /v1/review reads them: {rolls, keeps, box}
      turn: { rolls: [], keeps: [] }, // the turn in play
      lost: 0, // the advice's losses of the moves chosen, summed as the game goes
      over: false,
      review: null, // POST /v1/review's answer, once the game is over
    };
  }

  /** The moves chosen so far: a keep after each roll but a turn's last, and a box. */
  function decisionsMade(play) {
    return play.turns.reduce((n, t) => n + t.keeps.length + 1, 0) + play.turn.keeps.length;
  }

  /** In play, the dice kept from the turn's last roll: every roll after a keep holds them. */
  function heldDice() {
    return state.mode === "play" ? state.play.turn.keeps.at(-1) || [] : [];
  }

  function reviewing() {
    return state.mode === "play" && state.play.over;
  }

  function loadState() {
    let saved = null;
    try {
      saved = JSON.parse(localStorage.getItem(STORAGE_KEY) || "null");
    } catch (_) {
      saved = null;
    }
    const base = {
      mode: "advise",
      target: { score: "", others: "" }, // play to reach: a final score, or the others'
      risk: 0, // the risk dial: 0 the best average, above it bold, below it safe
      advise: freshAdvise("yahtzee"),
      play: freshPlay("yahtzee"),
      undo: [],
      inline: {}, // name -> {file, listed}: rule sets this page sends inline
    };
    if (!saved || typeof saved !== "object") return base;
    return {
      mode: saved.mode === "play" ? "play" : "advise",
      inline: saved.inline && typeof saved.inline === "object" ? saved.inline : {},
      target: { ...base.target, ...(saved.target || {}) },
      risk: Number.isFinite(saved.risk) ? saved.risk : 0,
      advise: { ...base.advise, ...(saved.advise || {}) },
      play: { ...base.play, ...(saved.play || {}) },
      undo: Array.isArray(saved.undo) ? saved.undo.slice(-100) : [],
    };
  }

  function saveState() {
    try {
      localStorage.setItem(STORAGE_KEY, JSON.stringify(state));
    } catch (_) {
      // Private browsing or a full quota: the page still works, it just forgets on reload.
    }
  }

  /** The part of the state the page is showing: the free position or the game in play. */
  function current() {
    return state.mode === "play" ? state.play : state.advise;
  }

  /** What a request's `rules` is: the name, or the file itself for a rule set used inline. */
  function rulesSent(name) {
    const inline = state.inline[name];
    return inline ? inline.file : name;
  }

  function rulesInfo(name) {
    const rules = ruleSets.get(name);
    if (!rules) return null;
    // Everything about the rules comes from GET /v1/rules: the page keeps no copy.
    const yahtzeeBox = rules.yahtzee_box;
    return {
      ...rules,
      upperBonus: rules.upper_bonus,
      threshold: rules.upper_threshold,
      yahtzeeBonus: rules.yahtzee_bonus,
      yahtzeeBox,
      // What the all-alike box holds once scored with a roll that fits it (Yahtzee's 50).
      alikePoints: yahtzeeBox === null ? null : Math.max(...rules.possible_points[yahtzeeBox]),
      possiblePoints: rules.possible_points,
      rolls: rules.rerolls + 1,
      savedRolls: rules.saved_rolls === true,
      maxSaved: rules.max_saved ?? null, // with saved rolls: the most a bank carries (null: all)
      forced: rules.order === "forced",
      label: (box) => rules.labels[box] ?? box,
      isUpper: (box) => rules.upper_boxes.includes(box),
    };
  }

  /** Under saved rolls, the bank of the position on show: `saved`, what its turn started
   * with, and `rollsLeft`, what may still be rolled after the dice on show (the bank and the
   * turn's rerolls alike); {error} for a bad entry. Playing along they follow the game (each
   * roll after the first takes one); else they are typed, and no count of rolls left typed
   * is the turn's first roll. The service checks them against the scorecard. */
  function bankOf(view, info) {
    if (state.mode === "play") {
      const saved = view.saved || 0;
      return { saved, rollsLeft: saved + info.rerolls - (view.roll - 1) };
    }
    const saved = parsePoints(view.saved);
    if (!Number.isInteger(saved) || saved < 0) {
      return { error: "Rolls saved from earlier turns: a whole number, 0 or more." };
    }
    const typed = String(view.rollsLeft ?? "").trim();
    const rollsLeft = typed === "" ? saved + info.rerolls : parsePoints(typed);
    if (!Number.isInteger(rollsLeft) || rollsLeft < 0) {
      return { error: "Rolls left: a whole number, 0 or more (or empty for the turn's first roll)." };
    }
    return { saved, rollsLeft };
  }

  /** What scoring with `rollsLeft` left carries to the next turn: all of it, up to the cap. */
  function carriedOver(rollsLeft, info) {
    return info.maxSaved === null ? rollsLeft : Math.min(rollsLeft, info.maxSaved);
  }

  /** A count of rolls in words, as the advice says them: "no rolls", "1 roll", "4 rolls". */
  function rollsWords(count) {
    if (count === 0) return "no rolls";
    return count === 1 ? "1 roll" : `${count} rolls`;
  }

  /** "die" or "six dice", after "the" or "your": a rule set rolls 1 to 6 dice. */
  function diceWords(count) {
    return count === 1 ? "die" : `${NUMBER_WORDS[count]} dice`;
  }

  /** Filled boxes with their points, whichever mode: [{name, points}] in scorecard order. */
  function filledBoxes(view, info) {
    const result = [];
    for (const name of info.boxes) {
      if (state.mode === "play") {
        if (name in view.boxes) result.push({ name, points: view.boxes[name] });
      } else {
        const box = view.boxes[name];
        if (box && box.filled) result.push({ name, points: parsePoints(box.points) });
      }
    }
    return result;
  }

  /** A whole number as typed, 0 when empty, else NaN. A minus sign is read, so that each
   * field can say in its own words that its number cannot be negative. */
  function parsePoints(text) {
    const trimmed = String(text ?? "").trim();
    if (trimmed === "") return 0;
    return /^-?\d+$/.test(trimmed) ? Number(trimmed) : NaN;
  }

  /** A box's possible points in words: "a multiple of 2 from 0 to 10", "0 or 25",
   * "0 or 5 to 30", "from 5 to 30". */
  function describePoints(allowed) {
    const step = allowed[1] - allowed[0];
    if (step > 1 && allowed.length > 2 && allowed.every((points, i) => points === i * step)) {
      return `a multiple of ${step} from 0 to ${allowed.at(-1)}`;
    }
    const parts = [];
    let start = 0;
    for (let end = 1; end <= allowed.length; end += 1) {
      if (end === allowed.length || allowed[end] !== allowed[end - 1] + 1) {
        const run = allowed.slice(start, end);
        parts.push(...(run.length >= 3 ? [`${run[0]} to ${run.at(-1)}`] : run));
        start = end;
      }
    }
    if (parts.length === 1) return allowed.length > 1 ? `from ${parts[0]}` : String(parts[0]);
    return `${parts.slice(0, -1).join(", ")} or ${parts.at(-1)}`;
  }

  /** What is wrong with a filled box's points, checked against what the rule set lets a game
   * put in it (GET /v1/rules); "" when nothing is. */
  function pointsProblem(name, points, info) {
    if (!Number.isInteger(points)) {
      return `${info.label(name)}: enter the points as a whole number (or leave it empty for 0).`;
    }
    if (points < 0) return `${info.label(name)}: the points cannot be negative.`;
    const allowed = info.possiblePoints[name];
    return allowed.includes(points) ? "" : `${info.label(name)}: the points must be ${describePoints(allowed)}.`;
  }

  /**
   * The scorecard as the API and the totals need it, with `problems` (input id -> message,
   * shown beside that input) and `error` (the first of them) for bad entries.
   */
  function scorecardSummary(view, info) {
    const filled = filledBoxes(view, info);
    const problems = new Map();
    for (const { name, points } of filled) {
      const problem = pointsProblem(name, points, info);
      if (problem) problems.set(`box-${name}-points`, problem);
    }
    // A wrong lower box leaves the upper total known: only a wrong upper box hides it.
    const upperKnown = !filled.some(
      (b) => info.isUpper(b.name) && problems.has(`box-${b.name}-points`),
    );
    const upper = filled.filter((b) => info.isUpper(b.name)).reduce((s, b) => s + b.points, 0);
    const boxPoints = filled.reduce((s, b) => s + b.points, 0);
    const yahtzeeBonus =
      info.yahtzeeBox !== null &&
      filled.some((b) => b.name === info.yahtzeeBox && b.points === info.alikePoints);
    // Extra Yahtzees earn their bonus only after 50 in the Yahtzee box, and each one fills
    // another box: the page takes the count only then, and at most that many.
    const extrasCount = !!info.yahtzeeBonus && yahtzeeBonus && state.mode !== "play";
    let extras = 0;
    if (extrasCount) {
      extras = parsePoints(view.extraBonuses);
      const most = filled.length - 1;
      if (!Number.isInteger(extras) || extras < 0 || extras > most) {
        problems.set(
          "extra-bonuses",
          `Extra ${info.label(info.yahtzeeBox)}s: enter a whole number, at most ${most} ` +
            `(one for each box filled besides ${info.label(info.yahtzeeBox)}).`,
        );
      }
    }
    let bonusPoints;
    if (state.mode === "play") {
      bonusPoints = view.bonus || 0;
    } else {
      const upperBonus = info.upperBonus && upper >= info.threshold ? info.upperBonus : 0;
      bonusPoints = upperBonus + extras * info.yahtzeeBonus;
    }
    // With a bad entry the totals are unknown ("?"), and nothing is asked of the service.
    return {
      filled: filled.map((b) => b.name),
      upper,
      upperKnown,
      yahtzeeBonus,
      extrasCount,
      boxPoints,
      bonusPoints,
      banked: boxPoints + bonusPoints,
      allFilled: filled.length === info.boxes.length,
      problems,
      error: problems.values().next().value || "",
    };
  }

  // --- rendering -----------------------------------------------------------------------------

  const PIPS = {
    1: [[50, 50]],
    2: [[72, 28], [28, 72]],
    3: [[72, 28], [50, 50], [28, 72]],
    4: [[28, 28], [72, 28], [28, 72], [72, 72]],
    5: [[28, 28], [72, 28], [50, 50], [28, 72], [72, 72]],
    6: [[28, 28], [72, 28], [28, 50], [72, 50], [28, 72], [72, 72]],
  };

  function dieSvg(face) {
    const pips = PIPS[face].map(([x, y]) => `<circle cx="${x}" cy="${y}" r="9"/>`).join("");
    return (
      `<svg viewBox="0 0 100 100" aria-hidden="true" focusable="false">` +
      `<rect x="4" y="4" width="92" height="92" rx="16" class="die-body"/>` +
      `<g class="pips">${pips}</g></svg>`
    );
  }

  function escapeHtml(text) {
    return String(text).replace(
      /[&<>"']/g,
      (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c],
    );
  }

  function fmt(x) {
    return Number(x).toFixed(3);
  }

  /** A move's expected points lost (or, as `kind` "risk-loss", its certainty-equivalent
   * points lost at a risk), as a table cell: "0" for a best move (equal ones differ in the
   * last bit), marked as no mistake; else "−0.997". */
  function lossCell(loss, kind = "loss") {
    const none = loss < 5e-10;
    return `<td class="num ${kind}${none ? " none" : ""}">${none ? "0" : `−${fmt(loss)}`}</td>`;
  }

  /** What a rule set is, in a line: its description, and for a registered one (which may
   * have none) its shape too. */
  function describeRules(info) {
    if (info.built_in) return info.description;
    const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;
    const how = state.inline[info.name] ? "Pasted, used by this page alone" : "Registered";
    const shape =
      `${how}: ${count(info.dice, "die", "dice")}, ${count(info.boxes.length, "box", "boxes")}` +
      `${info.forced ? " filled in scorecard order" : ""}, ${count(info.rolls, "roll", "rolls")} a turn` +
      `${info.savedRolls ? `, unused rolls saved to later turns${info.maxSaved === null ? "" : ` (at most ${info.maxSaved})`}` : ""}.`;
    return info.description ? `${shape} ${info.description}` : shape;
  }

  /** The built-in rule sets, then the registered ones in a group of their own. */
  function renderRulesSelect() {
    const view = current();
    el.rules.innerHTML = "";
    const groups = [
      ["Built in", [...ruleSets.values()].filter((r) => r.built_in)],
      ["Registered", [...ruleSets.values()].filter((r) => !r.built_in && !state.inline[r.name])],
      ["Pasted", [...ruleSets.values()].filter((r) => state.inline[r.name])],
    ];
    for (const [name, members] of groups) {
      if (!members.length) continue;
      const group = document.createElement("optgroup");
      group.label = name;
      for (const rules of members) {
        const option = document.createElement("option");
        option.value = rules.name;
        option.textContent = rules.name;
        group.append(option);
      }
      el.rules.append(group);
    }
    el.rules.value = view.rules;
    const info = rulesInfo(view.rules);
    el.rulesDescription.textContent = info ? describeRules(info) : "";
    const locked = state.mode === "play" && decisionsMade(state.play) > 0 && !state.play.over;
    el.rules.disabled = locked;
    if (locked) {
      el.rulesDescription.textContent += " (start a new game to change the rule set)";
    }
  }

  function renderMode() {
    for (const radio of el.modeRadios) radio.checked = radio.value === state.mode;
    const play = state.mode === "play";
    el.playBar.hidden = !play;
    el.rollText.hidden = !play;
    el.app.dataset.mode = state.mode;
    el.scorecardHint.textContent = play
      ? "The game's scorecard: each box fills as you choose where to score."
      : "Tick the boxes already filled and enter the points scored in them.";
  }

  /** Rebuild the scorecard's rows: on a new rule set, mode, game or choice (never while typing). */
  function renderBoxes() {
    const view = current();
    const info = rulesInfo(view.rules);
    el.boxes.innerHTML = "";
    if (!info) return;
    const list = document.createElement(state.mode === "play" ? "ul" : "div");
    list.className = "box-list";
    const next = nextBox(view, info);
    for (const name of info.boxes) {
      const id = `box-${name}`;
      const text = escapeHtml(info.label(name));
      const row = document.createElement(state.mode === "play" ? "li" : "div");
      row.className = "box-row";
      row.dataset.box = name;
      if (info.isUpper(name)) row.classList.add("upper");
      if (state.mode === "play") {
        const filled = name in view.boxes;
        const open = name === next ? "next" : "open";
        row.classList.toggle("filled", filled);
        row.classList.toggle("next", name === next);
        row.innerHTML =
          `<span class="box-name">${text}</span>` +
          `<span class="box-points">${filled ? view.boxes[name] : `<span class="open">${open}</span>`}</span>`;
      } else {
        const box = view.boxes[name] || { filled: false, points: "" };
        row.classList.toggle("filled", !!box.filled);
        row.innerHTML =
          `<input type="checkbox" id="${id}" class="box-check" ${box.filled ? "checked" : ""} ` +
          `aria-describedby="${id}-points-message">` +
          `<label for="${id}" class="box-name">${text}<span class="box-tag"></span></label>` +
          `<label for="${id}-points" class="visually-hidden">Points in ${text}</label>` +
          `<input type="number" id="${id}-points" class="box-points-input" inputmode="numeric" ` +
          `${inputRange(info.possiblePoints[name])} placeholder="–" value="${escapeHtml(box.points ?? "")}" ` +
          `aria-describedby="${id}-points-message">` +
          `<p id="${id}-points-message" class="field-message" data-for="${id}-points"></p>`;
      }
      list.append(row);
    }
    el.boxes.append(list);
    if (info.yahtzeeBonus && state.mode !== "play") {
      el.extraField.hidden = false;
      el.extraLabel.textContent = `Extra ${info.label(info.yahtzeeBox)}s so far (+${info.yahtzeeBonus} each)`;
      el.extra.value = String(view.extraBonuses ?? 0);
      el.extra.disabled = false; // renderTotals closes it while the count does not count
    } else {
      el.extraField.hidden = true;
    }
    markAdvisedBox();
  }

  /** In forced order, the box a game scores next (the first open one); else null. */
  function nextBox(view, info) {
    if (!info.forced) return null;
    const filled = new Set(filledBoxes(view, info).map((b) => b.name));
    return info.boxes.find((name) => !filled.has(name)) ?? null;
  }

  /** In forced order only the next box can be ticked (and the last filled one unticked), so
   * the filled boxes stay the first ones of the scorecard, as in every game of these rules;
   * the next box is marked. Updated in place: the rows are not rebuilt while typing. */
  function renderFillOrder(view, info) {
    if (state.mode === "play" || !info.forced) return;
    const filled = info.boxes.map((name) => !!(view.boxes[name] && view.boxes[name].filled));
    const next = filled.indexOf(false);
    const last = filled.lastIndexOf(true);
    for (const row of el.boxes.querySelectorAll(".box-row")) {
      const at = info.boxes.indexOf(row.dataset.box);
      row.querySelector(".box-check").disabled = at !== next && at !== last;
      row.querySelector(".box-points-input").disabled = !filled[at] && at !== next;
      row.classList.toggle("next", at === next);
      row.querySelector(".box-tag").textContent = at === next ? "next" : "";
    }
  }

  /** min, max and step of a box's number input: the spinner steps through its possible
   * points where they are evenly spaced (the upper boxes), else one by one. */
  function inputRange(allowed) {
    const gcd = (a, b) => (b ? gcd(b, a % b) : a);
    const step = allowed.reduce((g, points) => gcd(g, points - allowed[0]), 0) || 1;
    return `min="${allowed[0]}" max="${allowed.at(-1)}" step="${step}"`;
  }

  /** Each bad entry's message beside its input (and the input marked invalid); the first
   * also goes to the advice panel, which it stops. */
  function renderEntryMessages(summary) {
    for (const message of el.scorecard.querySelectorAll(".field-message")) {
      const text = summary.problems.get(message.dataset.for) || "";
      message.textContent = text;
      const input = document.getElementById(message.dataset.for);
      if (text) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
    }
  }

  /** The extra-Yahtzee count is open only while it counts: after 50 (the all-alike box's
   * points) in the Yahtzee box. While closed it shows 0 (what it adds) and keeps what was
   * typed for when it opens again. */
  function renderExtraBonuses(summary, info) {
    if (el.extraField.hidden) return;
    const open = summary.extrasCount;
    if (el.extra.disabled === open) el.extra.value = open ? String(current().extraBonuses ?? 0) : "0";
    el.extra.disabled = !open;
    el.extraHint.textContent = open
      ? ""
      : `Counts once ${info.label(info.yahtzeeBox)} holds ${info.alikePoints}.`;
  }

  function renderTotals() {
    const view = current();
    const info = rulesInfo(view.rules);
    if (!info) return;
    const summary = scorecardSummary(view, info);
    renderEntryMessages(summary);
    renderExtraBonuses(summary, info);
    renderFillOrder(view, info);
    const rows = [];
    if (info.upper_boxes.length) {
      let upperNote = "";
      if (info.upperBonus && summary.upperKnown) {
        upperNote =
          summary.upper >= info.threshold
            ? ` (bonus +${info.upperBonus} reached)`
            : ` of ${info.threshold} for the +${info.upperBonus} bonus`;
      }
      rows.push(["Upper total", `<span id="upper-total">${summary.upperKnown ? summary.upper : "?"}</span>${upperNote}`]);
    }
    if (info.yahtzeeBonus) {
      rows.push([
        `${info.label(info.yahtzeeBox)} bonus`,
        summary.yahtzeeBonus ? `on: another one earns +${info.yahtzeeBonus}` : "off",
      ]);
    }
    if (summary.bonusPoints) rows.push(["Bonus points banked", String(summary.bonusPoints)]);
    rows.push([
      "Points banked",
      `<strong id="banked">${summary.error ? "?" : summary.banked}</strong>`,
    ]);
    el.totals.innerHTML = rows.map(([k, v]) => `<div><dt>${k}</dt><dd>${v}</dd></div>`).join("");
  }

  /** One radio per roll of the rule set's turn (rebuilt only when that count changes, so the
   * keyboard's place in the group stays), or the turn's place in words when playing along. */
  function renderRoll() {
    const view = current();
    const info = rulesInfo(view.rules);
    const rolls = info ? info.rolls : 0;
    let radios = el.rollField.querySelectorAll('input[name="roll"]');
    if (radios.length !== rolls) {
      for (const option of el.rollField.querySelectorAll("label")) option.remove();
      for (let roll = 1; roll <= rolls; roll += 1) {
        const option = document.createElement("label");
        option.innerHTML = `<input type="radio" name="roll" value="${roll}"> <span>${ORDINALS[roll - 1]} roll</span>`;
        el.rollField.append(option);
      }
      radios = el.rollField.querySelectorAll('input[name="roll"]');
    }
    for (const radio of radios) radio.checked = Number(radio.value) === view.roll;
    const saved = !!info && info.savedRolls;
    el.rollField.hidden = state.mode === "play" || rolls < 2 || saved;
    if (state.mode === "play") {
      const turns = info ? info.boxes.length : 0;
      const turn = Object.keys(view.boxes).length + 1;
      const inTurn = saved ? (view.saved || 0) + rolls : rolls; // the bank's rolls too
      el.rollText.textContent = view.over
        ? "The game is over."
        : `Turn ${Math.min(turn, turns)} of ${turns} · roll ${view.roll} of ${inTurn}`;
    }
    renderBank(info);
  }

  /** Under saved rolls, the bank: playing along, the rolls left after this roll and the bank
   * the turn started with (what the last turn carried); else the two counts to type. */
  function renderBank(info) {
    const view = current();
    const saved = !!info && info.savedRolls;
    const play = state.mode === "play";
    el.bankField.hidden = !saved || play;
    el.bank.hidden = !saved || !play || view.over;
    if (!saved) return;
    const bank = bankOf(view, info);
    if (play) {
      const cap = info.maxSaved === null ? "" : `, at most ${info.maxSaved}`;
      el.bank.innerHTML =
        `Rolls left after this roll: <strong id="rolls-left-now">${bank.rollsLeft}</strong> ` +
        `<span class="muted">(<span id="bank-carried">${bank.saved}</span> carried into this turn ` +
        `and ${info.rerolls} of its own; what is left when you score carries to the next turn${cap})</span>`;
      return;
    }
    // Typed values stay as typed; only the other field follows (a rule set picked, a reload).
    if (document.activeElement !== el.saved) el.saved.value = view.saved ?? "";
    if (document.activeElement !== el.rollsLeft) el.rollsLeft.value = view.rollsLeft ?? "";
    const first = (bank.error ? 0 : bank.saved) + info.rerolls;
    el.rollsLeft.placeholder = String(first);
    el.rollsLeftHint.textContent =
      `Empty: the turn's first roll, after which ${rollsWords(first)} ${first === 1 ? "is" : "are"} left ` +
      `(those saved and ${info.rerolls} of this turn).`;
    el.bankMessage.textContent = bank.error || "";
    for (const input of [el.saved, el.rollsLeft]) {
      if (bank.error) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
    }
  }

  /** A position kept from another rule set, made to fit this one: no more dice than it
   * rolls (the highest go), no later roll than its turn has. */
  function fitToRules(view) {
    const info = rulesInfo(view.rules);
    if (!info) return;
    view.dice = view.dice.slice(0, info.dice);
    view.roll = Math.min(view.roll, info.rolls);
  }

  /** A scorecard kept from another rule set keeps only the entries this one could hold (a
   * box it has, points a game can put there, in scorecard order the boxes before the first
   * open one), so that no entry is wrong the moment the rule set changes. Returns the
   * entries cleared, as "Full House 25", for the player to see. */
  function fitEntries(view) {
    const info = rulesInfo(view.rules);
    if (!info) return [];
    const kept = {};
    const cleared = [];
    let closed = false; // in scorecard order, past an open box
    for (const name of info.boxes) {
      const box = view.boxes[name];
      if (!box || !box.filled) {
        closed = info.forced;
        continue;
      }
      if (!closed && !pointsProblem(name, parsePoints(box.points), info)) {
        kept[name] = box;
      } else {
        cleared.push(`${info.label(name)} ${String(box.points ?? "").trim() || 0}`);
        closed = info.forced;
      }
    }
    view.boxes = kept;
    return cleared;
  }

  function keptMask(dice, keep) {
    const left = [...keep];
    return dice.map((face) => {
      const at = left.indexOf(face);
      if (at < 0) return false;
      left.splice(at, 1);
      return true;
    });
  }

  function contains(dice, keep) {
    return keptMask(dice, keep).filter(Boolean).length === keep.length;
  }

  function renderDice() {
    const view = current();
    const info = rulesInfo(view.rules);
    const count = info ? info.dice : 0;
    if (info) {
      el.diceHint.textContent =
        `Tap the ${diceWords(count)} you rolled (or type 1–6); tap a die above to take it back.`;
    }
    const focused = el.dice.contains(document.activeElement) ? document.activeElement : null;
    const focusIndex = focused ? Number(focused.dataset.index) : null;
    const dice = view.dice;
    let kept = dice.map(() => false);
    const best = shownBestAction();
    if (best && best.kind === "keep") kept = keptMask(dice, best.keep);
    const parts = [];
    for (let i = 0; i < count; i += 1) {
      if (i < dice.length) {
        const face = dice[i];
        const keep = kept[i];
        const name = `Die ${i + 1}: ${face}${keep ? ", keep it" : ""}. Activate to take it back.`;
        parts.push(
          `<button type="button" class="die${keep ? " kept" : ""}" data-index="${i}" data-face="${face}" ` +
            `data-kept="${keep ? "yes" : "no"}" aria-label="${name}">${dieSvg(face)}` +
            `<span class="die-tag" aria-hidden="true">${keep ? "keep" : "&nbsp;"}</span></button>`,
        );
      } else {
        parts.push(`<span class="die empty" aria-hidden="true"><span class="die-slot"></span><span class="die-tag">&nbsp;</span></span>`);
      }
    }
    el.dice.innerHTML = parts.join("");
    if (focusIndex !== null) {
      // Rebuilding the dice must not throw the keyboard user's focus back to the page.
      const buttons = el.dice.querySelectorAll("button.die");
      (buttons[Math.min(focusIndex, buttons.length - 1)] || el.pad[0]).focus();
    }
    const full = dice.length >= count;
    for (const button of el.pad) button.setAttribute("aria-disabled", full ? "true" : "false");
  }

  function renderPad() {
    for (const button of el.pad) button.innerHTML = dieSvg(Number(button.dataset.face));
  }

  function renderPlayBar() {
    if (state.mode !== "play") return;
    const play = state.play;
    const n = decisionsMade(play);
    el.playStatus.textContent =
      n === 0
        ? "A new game: roll, enter your dice, and choose a move."
        : `${n} decision${n === 1 ? "" : "s"} so far, ${fmt(play.lost)} points lost to the best moves.`;
    el.undo.disabled = state.undo.length === 0;
  }

  function renderAll() {
    renderMode();
    renderRulesSelect();
    renderPlayBar();
    renderBoxes();
    renderTotals();
    renderRoll();
    renderDice();
    renderReview();
  }

  // --- advice -----------------------------------------------------------------------------

  function shownBestAction() {
    if (!lastAdvice || lastAdvice.key !== requestKey()) return null;
    return lastAdvice.data.actions[0] || null;
  }

  function markAdvisedBox() {
    const best = shownBestAction();
    for (const row of el.boxes.querySelectorAll(".box-row")) {
      const advised = !!best && best.kind === "score" && best.category === row.dataset.box;
      row.classList.toggle("advised", advised);
    }
  }

  /** The best of the other players' final scores; null when none is given, {error} when
   * one is bad. */
  function othersBest() {
    const others = String(state.target.others || "").trim();
    if (!others) return null;
    const scores = others.split(/[\s,;]+/).filter(Boolean).map(parsePoints);
    if (scores.some((x) => !Number.isInteger(x) || x < 0)) {
      return { error: "The others' final scores: whole numbers, separated by commas." };
    }
    return Math.max(...scores);
  }

  /** The final score to reach: the best of the others' + 1 where any are given, else the
   * target typed; null when neither is (the best average), {error} when one is bad. */
  function targetScore() {
    const best = othersBest();
    if (best !== null) return best.error ? best : best + 1;
    const typed = String(state.target.score || "").trim();
    if (!typed) return null;
    const score = parsePoints(typed);
    return Number.isInteger(score) && score >= 0
      ? score
      : { error: "The target: a whole final score." };
  }

  /** The request the page's inputs make now, or {error} when they cannot make one. */
  function buildRequest() {
    const view = current();
    const info = rulesInfo(view.rules);
    if (!info) return { error: null };
    if (reviewing()) return { error: null, over: true };
    const summary = scorecardSummary(view, info);
    if (summary.error) return { error: summary.error };
    const target = targetScore();
    if (target && target.error) return { error: target.error };
    const request = {
      rules: rulesSent(view.rules),
      state: {
        filled: summary.filled,
        upper: summary.upper,
        yahtzee_bonus: summary.yahtzeeBonus,
      },
    };
    const withDice = view.dice.length === info.dice && !summary.allFilled;
    if (info.savedRolls) {
      const bank = bankOf(view, info);
      if (bank.error) return { error: bank.error };
      // The bank the turn started with, and once rolled the rolls left (which count it):
      // the service checks each against the scorecard and names the one that cannot be.
      request.state.saved = bank.saved;
      if (withDice) request.state.rolls_left = bank.rollsLeft;
    } else if (withDice) {
      request.state.rerolls_left = info.rerolls - (view.roll - 1);
    }
    if (withDice) request.state.dice = [...view.dice].sort((a, b) => a - b);
    if (state.risk !== 0) request.risk = state.risk;
    else if (target !== null) request.need = target - summary.banked;
    return { request, summary, withDice, target };
  }

  function requestKey() {
    const built = buildRequest();
    return built.request ? JSON.stringify(built.request) : null;
  }

  function clearQuick() {
    el.quick.textContent = "";
    el.doBest.hidden = true;
  }

  function clearAdvice() {
    lastAdvice = null;
    renderSuggestion(null);
    clearQuick();
    el.best.innerHTML = "";
    el.outlook.textContent = "";
    el.actionsBody.innerHTML = "";
    el.actionsWrap.hidden = true;
    renderDice();
    markAdvisedBox();
  }

  function clearReview() {
    el.reviewBody.innerHTML = "";
  }

  // Where the answers and the messages go: the advice during a game, the review after it.
  const panels = {
    advice: {
      section: el.advice,
      status: el.status,
      error: el.error,
      clear: clearAdvice,
      computing: "this position",
      refused: "this position",
    },
    review: {
      section: el.review,
      status: el.reviewStatus,
      error: el.reviewError,
      clear: clearReview,
      computing: "the positions of this game",
      refused: "this game",
    },
  };

  function panel() {
    return reviewing() ? panels.review : panels.advice;
  }

  function setPanelState(value) {
    const { section } = panel();
    section.dataset.state = value;
    section.setAttribute("aria-busy", value === "loading" || value === "computing" ? "true" : "false");
  }

  function showError(message) {
    panel().error.textContent = message || "";
  }

  function showStatus(message) {
    panel().status.textContent = message || "";
  }

  /** A slow or cold answer: the status says why, and so does the line under the dice. */
  function showWaiting(line, status) {
    if (!reviewing()) el.quick.textContent = line;
    showStatus(status);
  }

  function retryAfterSeconds(header) {
    if (!header) return 2;
    const seconds = Number(header);
    if (Number.isFinite(seconds)) return Math.min(60, Math.max(1, seconds));
    const date = Date.parse(header);
    if (!Number.isNaN(date)) return Math.min(60, Math.max(1, (date - Date.now()) / 1000));
    return 2;
  }

  /** Ask for the advice on the page's position now, or for the review of a finished game
   * (cancelling any older question). */
  function updateAdvice() {
    clearTimeout(retryTimer);
    clearTimeout(typingTimer);
    clearTimeout(pendingTimer);
    if (inFlight) inFlight.abort();
    inFlight = null;
    requestSeq += 1;
    hideOffer();
    const built = buildRequest();
    renderTotals();
    if (built.over) {
      updateReview();
      return;
    }
    if (!built.request) {
      computingSince = null;
      showStatus("");
      showError(built.error || "");
      clearAdvice();
      setPanelState(built.error ? "error" : "idle");
      return;
    }
    showError("");
    if (!built.withDice && !built.summary.allFilled) {
      // Nothing to ask until all the dice are in: a half-entered scorecard is not worth a
      // (possibly cold, long) computation on the service.
      computingSince = null;
      showStatus("");
      renderWaiting(built);
      return;
    }
    const key = JSON.stringify(built.request);
    if (lastAdvice && lastAdvice.key === key) {
      renderAdvice(lastAdvice.data, built);
      return;
    }
    const cached = adviceCache.get(key);
    if (cached) {
      renderAdvice(cached, built);
      return;
    }
    ask("/v1/advice", key, (data) => {
      rememberAdvice(key, data);
      renderAdvice(data, built);
    });
  }

  /** The game is over: its review, asked of POST /v1/review and kept with the game. It
   * grades against the strategy the dial plays (off 0, its risk's; at 0 the best average),
   * so a review kept at another risk than the dial's is asked anew. */
  function updateReview() {
    const play = state.play;
    const risk = state.risk === 0 ? null : state.risk;
    showError("");
    if (play.review && (play.review.risk ?? null) === risk) {
      computingSince = null;
      showStatus("");
      renderReview();
      setPanelState("ready");
      return;
    }
    const body = { rules: rulesSent(play.rules), game: { rules: play.rules, turns: play.turns } };
    if (risk !== null) body.risk = risk;
    ask("/v1/review", JSON.stringify(body), (data) => {
      play.review = data;
      saveState();
      renderReview();
      setPanelState("ready");
    });
  }

  /**
   * POST `body` (JSON text) to `path` for the panel on show and hand a 2xx answer to
   * `onAnswer`; the next updateAdvice cancels it. A 503 says the solver is computing and
   * asks again by itself after Retry-After; a refusal shows the service's message.
   */
  function ask(path, body, onAnswer) {
    const seq = requestSeq;
    setPanelState(computingSince ? "computing" : "loading");
    const controller = new AbortController();
    inFlight = controller;
    if (!computingSince) {
      // A warm answer takes a few ms; say something only when this one is slower.
      pendingTimer = setTimeout(() => {
        if (seq !== requestSeq || inFlight !== controller) return;
        showWaiting(
          "Asking the solver…",
          "Asking the solver… (a position it has not seen before can take a while)",
        );
      }, 400);
    }
    fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body,
      signal: controller.signal,
    })
      .then(async (response) => {
        if (seq !== requestSeq) return;
        let answer = null;
        try {
          answer = await response.json();
        } catch (_) {
          answer = null;
        }
        if (seq !== requestSeq) return;
        inFlight = null;
        clearTimeout(pendingTimer);
        if (response.status === 503) {
          const wait = retryAfterSeconds(response.headers.get("Retry-After"));
          showComputing(wait, answer);
          retryTimer = setTimeout(updateAdvice, wait * 1000);
          return;
        }
        computingSince = null;
        showStatus("");
        if (!response.ok) {
          const detail = answer && answer.error;
          if (detail && detail.solve && !reviewing()) {
            offerSolve(detail.solve);
            return;
          }
          panel().clear();
          setPanelState("error");
          showError(
            detail
              ? `The service refused ${panel().refused}: ${detail.message} (${detail.field}).`
              : `The service answered ${response.status} ${response.statusText}.`,
          );
          return;
        }
        onAnswer(answer);
      })
      .catch((error) => {
        if (error.name === "AbortError" || seq !== requestSeq) return;
        inFlight = null;
        clearTimeout(pendingTimer);
        panel().clear();
        setPanelState("error");
        showStatus("");
        showError("Cannot reach the solver service. Retrying in 3 seconds…");
        retryTimer = setTimeout(updateAdvice, 3000);
      });
  }

  // --- a whole game solved in the background ----------------------------------------------

  function hideOffer() {
    offered = null;
    el.solveOffer.hidden = true;
  }

  /** The service has not solved this game and may solve it for this player: say what the
   * first answer costs and let the player start it. One the player started already is
   * started again at once (the server restarted, or another of its processes answered),
   * unless it was started moments ago: then it stopped, and the player decides again. */
  function offerSolve(offer) {
    if (solving && solving.fingerprint === offer.fingerprint && Date.now() - solving.since > 10000) {
      startSolve(offer);
      return;
    }
    panel().clear();
    setPanelState("offer");
    el.quick.textContent = `This server has not solved ${offer.rules} yet: see below.`;
    offered = offer;
    const done = offer.blocks_done > 0 ? `, ${offer.blocks_done.toLocaleString("en")} of them solved already` : "";
    el.solveOfferText.textContent =
      `This server has not solved ${offer.rules} yet. Its first answer needs the whole game ` +
      `solved: ${offer.turn_starts.toLocaleString("en")} positions at the start of a turn ` +
      `in ${offer.blocks_total.toLocaleString("en")} blocks${done}, about ` +
      `${cpuTime(offer.cpu_s)} on one of its cores and ${storeSize(offer.store_bytes)} in its ` +
      `store. The server can solve it in the background; this page shows how far it is and ` +
      `answers as soon as the solve reaches this position.`;
    el.solveOffer.hidden = false;
  }

  /** What a whole game's blocks take in the store, in words ("7.4 GB"). */
  function storeSize(bytes) {
    const [unit, size] = [["GB", 1e9], ["MB", 1e6], ["kB", 1e3]].find(([, u]) => bytes >= u) || ["bytes", 1];
    return `${(bytes / size).toFixed(size === 1 ? 0 : 1)} ${unit}`;
  }

  /** The service's estimate of a whole solve's CPU time, in words ("53 CPU minutes"). */
  function cpuTime(seconds) {
    const [unit, size] = [["hours", 3600], ["minutes", 60]].find(([, u]) => seconds >= 2 * u) || ["seconds", 1];
    const count = Math.max(1, Math.round(seconds / size));
    return `${count} CPU ${count === 1 ? unit.slice(0, -1) : unit}`;
  }

  function startSolve(offer) {
    const seq = requestSeq;
    const name = current().rules;
    el.solveStart.disabled = true;
    fetch("/v1/solve", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ rules: rulesSent(name) }),
    })
      .then(async (response) => {
        el.solveStart.disabled = false;
        const answer = await response.json().catch(() => null);
        if (seq !== requestSeq) return;
        if (!response.ok) {
          hideOffer();
          setPanelState("error");
          const detail = answer && answer.error;
          showError(detail ? detail.message : `The service answered ${response.status}.`);
          return;
        }
        solving = {
          name,
          fingerprint: offer.fingerprint,
          total: answer.blocks_total,
          from: answer.blocks_done,
          since: Date.now(),
        };
        updateAdvice();
      })
      .catch(() => {
        el.solveStart.disabled = false;
        if (seq !== requestSeq) return;
        showError("Cannot reach the solver service. Try again in a moment.");
      });
  }

  /** How far the background solve is, from the public coverage of its game. */
  function showSolveProgress(waitSeconds) {
    const seq = requestSeq;
    const started = solving;
    fetch(`/v1/rules/${started.fingerprint}/coverage`, { headers: { Accept: "application/json" } })
      .then((response) => (response.ok ? response.json() : null))
      .then((coverage) => {
        if (!coverage || seq !== requestSeq || solving !== started) return;
        const done = coverage.blocks_done;
        const total = coverage.blocks_total;
        const seconds = (Date.now() - started.since) / 1000;
        const rate = (done - started.from) / Math.max(seconds, 1);
        const left =
          rate > 0 && done < total ? ` About ${Math.max(1, Math.round((total - done) / rate / 60))} min left at most.` : "";
        showWaiting(
          `Solving ${started.name}: ${Math.floor((100 * done) / total)}%…`,
          `The server is solving ${started.name} in the background: ${done.toLocaleString("en")} of ` +
            `${total.toLocaleString("en")} blocks (${Math.floor((100 * done) / total)}%).${left} ` +
            `This position is answered as soon as the solve reaches it; this page asks again ` +
            `by itself in ${Math.round(waitSeconds)} s.`,
        );
      })
      .catch(() => {});
  }

  function rememberAdvice(key, data) {
    adviceCache.set(key, data);
    if (adviceCache.size > ADVICE_CACHE_SIZE) adviceCache.delete(adviceCache.keys().next().value);
  }

  function showComputing(waitSeconds, body) {
    if (!computingSince) computingSince = Date.now();
    const elapsed = Math.round((Date.now() - computingSince) / 1000);
    const detail = body && body.error && body.error.field !== "state" ? ` (${body.error.message})` : "";
    const { clear, computing } = panel();
    clear();
    setPanelState("computing");
    if (solving && solving.name === current().rules && !reviewing()) {
      showSolveProgress(waitSeconds);
      return;
    }
    showWaiting(
      `The solver is computing ${computing}…`,
      `The solver is computing ${computing} for the first time${detail}. ` +
        `This page asks again by itself in ${Math.round(waitSeconds)} s` +
        (elapsed > 0 ? ` (${elapsed} s so far).` : "."),
    );
  }

  /** A turn start: the scorecard, and under saved rolls its bank (an advice's
   * turn_start_value, with dice, is the bank's that leaves its rolls: none past the turn's). */
  function scorecardKey(request) {
    const { filled, upper, yahtzee_bonus: bonus, saved, rolls_left: left } = request.state;
    const rerolls = rulesInfo(current().rules).rerolls;
    const bank = saved ?? (left === undefined ? null : Math.max(0, left - rerolls));
    return JSON.stringify([request.rules, filled, upper, bonus, bank]);
  }

  /** The dice are not all in yet: say what to do, and what the scorecard is worth if known. */
  function renderWaiting(built) {
    lastAdvice = null;
    clearQuick();
    setPanelState("idle");
    const view = current();
    const count = rulesInfo(view.rules).dice;
    const missing = count - view.dice.length;
    const hint =
      state.mode === "play" && view.roll > 1
        ? `Roll the ${missing} ${missing === 1 ? "die" : "dice"} you did not keep and enter what they show.`
        : `Enter your ${diceWords(count)} to see the best move${missing < count ? ` (${missing} more)` : ""}.`;
    el.best.innerHTML = `<p class="best-move muted">${hint}</p>`;
    const start = turnStartValues.get(scorecardKey(built.request));
    const banked = built.summary.banked;
    renderSuggestion(start === undefined ? null : banked + start);
    el.outlook.innerHTML =
      start === undefined
        ? ""
        : `Expected final score at the start of this turn: <strong class="final">${fmt(banked + start)}</strong> ` +
          `<span class="muted">(${banked} banked + <span class="raw">${fmt(start)}</span> to come)</span>`;
    el.actionsBody.innerHTML = "";
    el.actionsWrap.hidden = true;
    renderDice();
    markAdvisedBox();
  }

  function renderAdvice(data, built) {
    const { summary } = built;
    const key = JSON.stringify(built.request);
    lastAdvice = { key, data, request: built.request };
    turnStartValues.set(scorecardKey(built.request), data.turn_start_value);
    setPanelState("ready");
    const banked = summary.banked;
    el.chanceHead.hidden = true;
    el.riskHead.hidden = true;
    renderSuggestion(null);
    if (data.game_over) {
      el.best.innerHTML = `<p class="best-move">The game is over: every box is filled.</p>`;
      clearQuick();
      el.outlook.innerHTML = `Final score: <strong>${banked}</strong>.`;
      el.actionsBody.innerHTML = "";
      el.actionsWrap.hidden = true;
    } else {
      const best = data.actions[0];
      const play = state.mode === "play";
      const withNeed = data.need !== undefined;
      const withRisk = data.certainty_equivalent !== undefined;
      el.chanceHead.hidden = !withNeed;
      el.riskHead.hidden = !withRisk;
      el.best.innerHTML =
        `<p class="best-label">Best move</p>` +
        `<p class="best-move" id="best-move" data-kind="${best.kind}">${escapeHtml(best.words)}</p>`;
      el.quick.innerHTML = `Best move: <strong>${escapeHtml(best.words)}</strong>`;
      el.doBest.hidden = !play;
      el.doBest.setAttribute("aria-label", `Do this: ${best.words}`);
      el.outlook.innerHTML =
        `Expected final score of the game: <strong class="final">${fmt(banked + data.value)}</strong> ` +
        `<span class="muted">= ${banked} banked + <span class="raw" id="best-value">${fmt(data.value)}</span> to come</span>`;
      if (withNeed) el.outlook.innerHTML += reachText(data, built);
      if (withRisk) el.outlook.innerHTML += riskText(data, banked);
      renderSuggestion(banked + data.value);
      el.actionsBody.innerHTML = data.actions
        .map((action, i) => {
          const words = escapeHtml(action.words);
          const move = play
            ? `<button type="button" class="choose link" data-index="${i}">${words}</button>`
            : words;
          return (
            `<tr class="${i === 0 ? "best-row" : ""}" data-kind="${action.kind}" data-value="${action.value}">` +
            `<th scope="row" class="move">${move}</th>` +
            `<td class="num">${fmt(banked + action.value)}</td>` +
            (withRisk ? `<td class="num risk">${fmt(banked + action.certainty_equivalent)}</td>` : "") +
            `<td class="num raw">${fmt(action.value)}</td>` +
            lossCell(action.loss) +
            (withNeed ? `<td class="num chance">${percent(action.probability)}</td>` : "") +
            `</tr>`
          );
        })
        .join("");
      el.actionsWrap.hidden = false;
    }
    renderDice();
    markAdvisedBox();
    if (lastInputAt !== null) {
      timings.advice.push(performance.now() - lastInputAt);
      lastInputAt = null;
    }
  }

  function percent(p) {
    return `${(100 * p).toFixed(1)}%`;
  }

  /** The mean's own best move, where the objective asks for another: a line, or nothing. */
  function meanInstead(data) {
    const meanBest = data.actions.reduce((a, b) => (b.loss < a.loss ? b : a));
    return meanBest !== data.actions[0]
      ? `<br><span class="muted">For the best average instead: ${escapeHtml(meanBest.words)}</span>`
      : "";
  }

  /** Play to reach: the chance of the target, and the mean's own best move where the
   * target asks for another one. */
  function reachText(data, built) {
    const need = built.request.need;
    const other = meanInstead(data);
    return (
      `<br>Chance of reaching <strong>${built.target}</strong>: ` +
      `<strong class="reach" id="reach">${percent(data.probability)}</strong> ` +
      `<span class="muted">(${need > 0 ? `${need} more points needed` : "reached already"})</span>` +
      other
    );
  }

  /** Playing at a risk: the certainty equivalent of the final score (the points banked add
   * to it as to the mean), and the mean's own best move where the risk asks for another. */
  function riskText(data, banked) {
    const other = meanInstead(data);
    return (
      `<br>Certainty equivalent at risk ${data.risk}: ` +
      `<strong class="certain" id="certain">${fmt(banked + data.certainty_equivalent)}</strong>` +
      other
    );
  }

  /** The dial as it stands: its value in words, and whether a target overrules it. */
  function renderRisk() {
    const risk = state.risk;
    const words = risk === 0 ? "off: the best average" : `${risk} (${risk > 0 ? "bold" : "safe"})`;
    el.risk.value = String(risk);
    el.risk.setAttribute("aria-valuetext", words);
    el.riskValue.textContent = risk === 0 ? "0" : risk > 0 ? `+${risk}` : String(risk);
  }

  /** The risk the gap suggests: behind (a positive gap) bold, ahead safe, 0 at no gap, and
   * never less bold for a wider gap behind. */
  function suggestedRisk(gap) {
    const risk = Math.min(RISK_END, Math.max(-RISK_END, gap / GAP_PER_RISK));
    return Number((Math.round(risk / RISK_STEP) * RISK_STEP).toFixed(2)) + 0; // + 0: no -0
  }

  /** Given the others' scores and the expected final score on show, the risk their gap
   * suggests, with a button to set the dial to it (hidden where it is set already). */
  function renderSuggestion(expectedFinal) {
    const best = othersBest();
    if (expectedFinal === null || best === null || best.error) {
      el.riskSuggestion.hidden = true;
      return;
    }
    const gap = best - expectedFinal;
    const risk = suggestedRisk(gap);
    const where =
      Math.abs(gap) < 0.0005
        ? "level with the best of the others"
        : `${fmt(Math.abs(gap))} points ${gap > 0 ? "behind" : "ahead of"} the best of the others`;
    el.riskSuggestion.hidden = false;
    el.riskSuggestion.dataset.risk = String(risk);
    el.riskSuggestionText.textContent = `Expected ${where}: a risk of ${risk > 0 ? "+" : ""}${risk} suggested.`;
    el.riskApply.hidden = risk === state.risk;
    el.riskApply.textContent = `Use ${risk > 0 ? "+" : ""}${risk}`;
  }

  function setRisk(risk) {
    state.risk = risk;
    saveState();
    renderRisk();
    markInput();
    clearTimeout(typingTimer);
    typingTimer = setTimeout(updateAdvice, TYPING_DELAY_MS);
  }

  // --- play along ---------------------------------------------------------------------------

  function snapshot() {
    state.undo.push(JSON.stringify(state.play));
    if (state.undo.length > 100) state.undo.shift();
  }

  function choose(index) {
    if (!lastAdvice || lastAdvice.key !== requestKey()) return;
    const data = lastAdvice.data;
    const action = data.actions[index];
    if (!action) return;
    const play = state.play;
    snapshot();
    play.turn.rolls.push([...play.dice]);
    play.lost += action.loss;
    const info = rulesInfo(play.rules);
    let message;
    if (action.kind === "keep") {
      play.turn.keeps.push([...action.keep]);
      play.roll += 1;
      play.dice = [...action.keep];
      const rerolled = info.dice - action.keep.length;
      message =
        rerolled === 0
          ? `Kept every die: roll ${play.roll}.`
          : `Kept ${action.keep.join(" ") || "nothing"}: roll ${rerolled} ${rerolled === 1 ? "die" : "dice"} and enter ${rerolled === 1 ? "it" : "them"}.`;
    } else {
      const carried = info.savedRolls ? carriedOver(bankOf(play, info).rollsLeft, info) : null;
      play.turns.push({ ...play.turn, box: action.category });
      play.turn = { rolls: [], keeps: [] };
      play.boxes[action.category] = action.points;
      play.bonus = (play.bonus || 0) + (action.bonus || 0);
      play.roll = 1;
      play.dice = [];
      play.over = Object.keys(play.boxes).length === info.boxes.length;
      const carry = carried === null || play.over ? "" : ` and carried ${rollsWords(carried)} to the next turn`;
      if (carried !== null) play.saved = carried;
      message = `Scored ${action.points} in ${info.label(action.category)}${action.bonus ? ` (+${action.bonus} bonus)` : ""}${carry}.`;
    }
    saveState();
    renderAll();
    updateAdvice();
    showStatus(message);
    if (play.over) el.review.focus();
    else el.pad[0].focus();
  }

  function undo() {
    if (!state.undo.length) return;
    state.play = JSON.parse(state.undo.pop());
    saveState();
    lastAdvice = null;
    renderAll();
    updateAdvice();
    showStatus("The last choice is undone.");
  }

  function newGame() {
    const rules = el.rules.value || state.play.rules;
    if (decisionsMade(state.play)) snapshot();
    state.play = freshPlay(rules);
    saveState();
    lastAdvice = null;
    renderAll();
    updateAdvice();
    showStatus(`A new game of ${rules}.`);
    el.turn.focus();
  }

  /** The review of a finished game: POST /v1/review's answer as it is, nothing recomputed. */
  function renderReview() {
    const show = reviewing();
    el.review.hidden = !show;
    el.turn.hidden = show;
    el.advice.hidden = show;
    const review = state.play.review;
    if (!show || !review) {
      clearReview();
      return;
    }
    const signed = (x) => `${x < 0 ? "−" : "+"}${fmt(Math.abs(x))}`;
    const decisions = review.decisions;
    const worst = review.worst_mistakes;
    const worstHtml = worst.length
      ? `<ol class="worst">${worst.map((m) => `<li>${escapeHtml(m.words)}</li>`).join("")}</ol>`
      : `<p class="perfect">Every decision was a best move: no points lost.</p>`;
    // At a risk the best moves are its strategy's, and what a move costs is certainty
    // equivalent (points for sure), beside the expected points it costs.
    const atRisk = review.risk !== null && review.risk !== undefined;
    const dial = atRisk ? `${review.risk > 0 ? "+" : ""}${review.risk}` : "";
    const riskHtml = atRisk
      ? `<p class="graded" id="graded-at">Graded at risk ${dial} (${review.risk > 0 ? "bold" : "safe"}), ` +
        `as the dial was set: the best moves are that risk's.</p>`
      : "";
    const riskTotals = atRisk
      ? `<div><dt>Certainty equivalent at risk ${dial}, perfect play</dt><dd id="certain-score">` +
        `${fmt(review.certainty_equivalent)}</dd></div>` +
        `<div><dt>Certainty-equivalent points lost</dt><dd><strong id="risk-lost">` +
        `${fmt(review.total_risk_loss)}</strong></dd></div>`
      : "";
    const riskHead = atRisk ? `<th scope="col" class="num">At risk ${dial}</th>` : "";
    // Each decision of a turn follows one of its rolls (a keep after each but the last, then
    // the box): its roll is its place in the turn, however many rolls a bank gave the turn.
    let roll = 0;
    const rows = decisions
      .map((d, i) => {
        roll = i > 0 && decisions[i - 1].turn === d.turn ? roll + 1 : 1;
        return (
          `<tr><td class="num">${i + 1}</td><td>T${d.turn} R${roll}</td>` +
          `<td>${d.dice.join(" ")}</td><td>${escapeHtml(d.chosen.words)}</td>` +
          `${lossCell(d.loss)}${atRisk ? lossCell(d.risk_loss, "risk-loss") : ""}</tr>`
        );
      })
      .join("");
    el.reviewBody.innerHTML =
      `<p class="final-score">Final score: <strong id="final-score">${review.final_score}</strong></p>` +
      riskHtml +
      `<dl class="totals review-totals">` +
      `<div><dt>Expected with perfect play</dt><dd id="expected-score">${fmt(review.expected_score)}</dd></div>` +
      `<div><dt>Points lost to the best moves</dt><dd><strong id="points-lost">${fmt(review.total_loss)}</strong> ` +
      `in ${decisions.length} decisions</dd></div>` +
      `<div><dt>Skill</dt><dd id="skill">${signed(review.skill)}</dd></div>` +
      `<div><dt>Dice luck</dt><dd id="luck">${signed(review.luck)}</dd></div>` +
      riskTotals +
      `</dl>` +
      `<p class="hint">Final score = expected with perfect play + skill + dice luck.</p>` +
      `<h3>The worst three decisions</h3>${worstHtml}` +
      `<details open><summary>Points lost per decision (all ${decisions.length})</summary>` +
      // A region the keyboard can scroll: at a risk its extra column may overflow a phone.
      `<div class="table-wrap" tabindex="0" role="region" aria-label="Every decision of the game">` +
      `<table class="decisions"><caption class="visually-hidden">Every decision of the game</caption>` +
      `<thead><tr><th scope="col" class="num">#</th><th scope="col">When</th><th scope="col">Dice</th>` +
      `<th scope="col">Your move</th><th scope="col" class="num">Loss</th>${riskHead}</tr></thead>` +
      `<tbody>${rows}</tbody></table></div></details>`;
  }

  // --- input --------------------------------------------------------------------------------

  function markInput() {
    lastInputAt = performance.now();
  }

  function addDie(face) {
    const view = current();
    const info = rulesInfo(view.rules);
    if (!info || view.dice.length >= info.dice || (state.mode === "play" && view.over)) return;
    markInput();
    view.dice = [...view.dice, face].sort((a, b) => a - b);
    saveState();
    renderDice();
    updateAdvice();
  }

  function removeDie(index) {
    const view = current();
    if (index < 0 || index >= view.dice.length) return;
    const dice = view.dice.filter((_, i) => i !== index);
    if (!contains(dice, heldDice())) {
      showStatus("The dice kept from the last roll stay: undo the last choice to change them.");
      return;
    }
    markInput();
    view.dice = dice;
    saveState();
    renderDice();
    updateAdvice();
  }

  function bind() {
    el.rules.addEventListener("change", () => pickRules(el.rules.value));
    el.solveStart.addEventListener("click", () => {
      if (offered) startSolve(offered);
    });
    for (const radio of el.modeRadios) {
      radio.addEventListener("change", () => {
        if (!radio.checked) return;
        const picked = current().rules;
        state.mode = radio.value;
        // The rule set picked stays picked in the other mode, unless a game there is under way.
        const keep =
          current().rules !== picked && (state.mode === "advise" || !decisionsMade(state.play));
        el.rulesNote.textContent = keep ? useRules(picked) : "";
        saveState();
        lastAdvice = null;
        showStatus("");
        renderAll();
        updateAdvice();
      });
    }
    el.rollField.addEventListener("change", (event) => {
      const radio = event.target;
      if (radio.name !== "roll" || !radio.checked || state.mode === "play") return;
      markInput();
      state.advise.roll = Number(radio.value);
      saveState();
      updateAdvice();
    });
    for (const button of el.pad) {
      button.addEventListener("click", () => addDie(Number(button.dataset.face)));
    }
    el.dice.addEventListener("click", (event) => {
      const die = event.target.closest("button.die");
      if (!die) return;
      const index = Number(die.dataset.index);
      removeDie(index);
      // Keep the keyboard where it was: on the next die, or on the pad when none is left.
      const dice = el.dice.querySelectorAll("button.die");
      (dice[Math.min(index, dice.length - 1)] || el.pad[0]).focus();
    });
    el.clearDice.addEventListener("click", () => {
      markInput();
      current().dice = [...heldDice()];
      saveState();
      renderDice();
      updateAdvice();
    });
    document.addEventListener("keydown", (event) => {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const target = event.target;
      if (target.closest && target.closest("input, select, textarea")) return;
      if (/^[1-6]$/.test(event.key)) {
        event.preventDefault();
        addDie(Number(event.key));
      } else if (event.key === "Backspace" && current().dice.length) {
        event.preventDefault();
        removeDie(current().dice.length - 1);
      }
    });
    el.boxes.addEventListener("change", (event) => {
      if (state.mode === "play") return;
      const row = event.target.closest(".box-row");
      if (!row) return;
      const name = row.dataset.box;
      const box = state.advise.boxes[name] || { filled: false, points: "" };
      if (event.target.classList.contains("box-check")) {
        box.filled = event.target.checked;
        if (!box.filled) {
          box.points = "";
          row.querySelector(".box-points-input").value = "";
        }
      }
      state.advise.boxes[name] = box;
      row.classList.toggle("filled", box.filled);
      markInput();
      saveState();
      updateAdvice();
    });
    el.boxes.addEventListener("input", (event) => {
      if (state.mode === "play" || !event.target.classList.contains("box-points-input")) return;
      const row = event.target.closest(".box-row");
      const name = row.dataset.box;
      const box = state.advise.boxes[name] || { filled: false, points: "" };
      box.points = event.target.value;
      if (box.points !== "" && !box.filled) {
        box.filled = true;
        row.querySelector(".box-check").checked = true;
        row.classList.add("filled");
      }
      state.advise.boxes[name] = box;
      saveState();
      renderTotals();
      markInput();
      clearTimeout(typingTimer);
      typingTimer = setTimeout(updateAdvice, TYPING_DELAY_MS);
    });
    for (const input of [el.target, el.others]) {
      input.addEventListener("input", () => {
        state.target = { score: el.target.value, others: el.others.value };
        saveState();
        const target = targetScore();
        el.targetMessage.textContent = (target && target.error) || "";
        clearTimeout(typingTimer);
        typingTimer = setTimeout(updateAdvice, TYPING_DELAY_MS);
      });
    }
    el.risk.addEventListener("input", () => setRisk(Number(el.risk.value)));
    el.riskApply.addEventListener("click", () => setRisk(Number(el.riskSuggestion.dataset.risk)));
    for (const [input, key] of [[el.saved, "saved"], [el.rollsLeft, "rollsLeft"]]) {
      input.addEventListener("input", () => {
        if (state.mode === "play") return;
        state.advise[key] = input.value;
        saveState();
        renderBank(rulesInfo(state.advise.rules));
        markInput();
        clearTimeout(typingTimer);
        typingTimer = setTimeout(updateAdvice, TYPING_DELAY_MS);
      });
    }
    el.extra.addEventListener("input", () => {
      state.advise.extraBonuses = el.extra.value;
      saveState();
      updateAdvice();
    });
    el.advice.addEventListener("click", (event) => {
      const button = event.target.closest("button.choose");
      if (button) choose(Number(button.dataset.index));
    });
    el.doBest.addEventListener("click", () => choose(0));
    el.undo.addEventListener("click", undo);
    el.newGame.addEventListener("click", newGame);
    el.reviewNewGame.addEventListener("click", newGame);
    el.register.addEventListener("click", registerRules);
  }

  /** Show the rule set `name`. */
  function pickRules(name) {
    el.rulesNote.textContent = useRules(name);
    markInput();
    saveState();
    lastAdvice = null;
    renderAll();
    updateAdvice();
  }

  /** Take the rule set `name` in the mode on show: a new game of it when playing along, else
   * the same position under its rules, less the entries these cannot hold. Returns the note
   * for under the picker: the entries cleared, if any. */
  function useRules(name) {
    if (state.mode === "play") {
      state.play = freshPlay(name);
      state.undo = [];
      return "";
    }
    state.advise.rules = name;
    fitToRules(state.advise);
    const cleared = fitEntries(state.advise);
    return cleared.length ? `Cleared what ${name} cannot hold: ${cleared.join(", ")}.` : "";
  }

  /** The URL of the next page that a Link header names (on this page's origin), or null. */
  function nextPage(link) {
    const match = /<([^>]*)>\s*;\s*rel="?next"?/.exec(link || "");
    if (!match) return null;
    const url = new URL(match[1], location.href);
    return url.pathname + url.search;
  }

  /** Every rule set GET /v1/rules lists, built-ins first, following its pages to the end,
   * then those this page uses inline (unless a registration took the name since). */
  async function fetchRuleSets() {
    const found = new Map();
    for (let url = "/v1/rules"; url; ) {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      for (const rules of await response.json()) found.set(rules.name, rules);
      url = nextPage(response.headers.get("Link"));
    }
    for (const [name, inline] of Object.entries(state.inline)) {
      if (found.has(name)) delete state.inline[name];
      else found.set(name, inline.listed);
    }
    return found;
  }

  /** POST a pasted rule-set file; the answer's status, JSON (or null) and its error. */
  async function postRules(path) {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: el.rulesFile.value,
    });
    let answer = null;
    try {
      answer = await response.json();
    } catch (_) {
      answer = null;
    }
    return { response, answer, detail: answer && answer.error };
  }

  /** Show the service's refusal of the pasted file. */
  function refused({ response, detail }) {
    el.registerStatus.textContent = "";
    el.rulesFile.setAttribute("aria-invalid", "true");
    el.registerError.textContent = detail
      ? `The service refused this rule set: ${detail.message} (${detail.field}).`
      : `The service answered ${response.status} ${response.statusText}.`;
  }

  /** Register the pasted rule-set file (POST /v1/rules), then offer and pick it; where the
   * service takes no registration from this page (INLINE_INSTEAD), use it inline and say so;
   * a refusal shows the service's message and the field it names. */
  async function registerRules() {
    el.register.disabled = true;
    el.registerError.textContent = "";
    el.rulesFile.removeAttribute("aria-invalid");
    el.registerStatus.textContent = "Adding the rule set…";
    try {
      const registered = await postRules("/v1/rules");
      let name = null;
      let how = "";
      if (registered.response.ok) {
        name = registered.answer.name;
        how = registered.answer.created ? "" : " (registered before, with the same rules)";
      } else if (INLINE_INSTEAD.has(registered.response.status)) {
        const read = await postRules("/v1/rules/preview");
        if (!read.response.ok) return refused(read);
        name = read.answer.name;
        if (ruleSets.has(name) && !state.inline[name]) {
          const detail = { field: "name", message: `${name} is offered already; choose another name` };
          return refused({ response: read.response, detail });
        }
        state.inline[name] = { file: JSON.parse(el.rulesFile.value), listed: read.answer };
        how =
          registered.response.status === 429
            ? " for this page alone (the service holds all the rule sets it takes; this page sends it with each question)"
            : " for this page alone (only the service's operator may add rule sets for everyone; this page sends it with each question)";
      } else {
        return refused(registered);
      }
      ruleSets = await fetchRuleSets();
      if (state.mode === "play" && decisionsMade(state.play) > 0 && !state.play.over) {
        saveState();
        renderRulesSelect();
        el.registerStatus.textContent = `Added ${name}${how}: start a new game to play it.`;
      } else {
        pickRules(name);
        el.registerStatus.textContent = `Added ${name}${how}, and picked it.`;
      }
    } catch (error) {
      el.registerStatus.textContent = "";
      el.registerError.textContent = `Cannot reach the solver service (${error.message}).`;
    } finally {
      el.register.disabled = false;
    }
  }

  async function loadRules() {
    showStatus("Loading the rule sets…");
    for (let attempt = 0; ; attempt += 1) {
      try {
        ruleSets = await fetchRuleSets();
        showError("");
        showStatus("");
        return;
      } catch (error) {
        showError(`Cannot load the rule sets (${error.message}). Retrying…`);
        await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 500 * 2 ** attempt)));
      }
    }
  }

  async function start() {
    renderPad();
    bind();
    await loadRules();
    const first = ruleSets.keys().next().value;
    if (!ruleSets.has(state.advise.rules)) state.advise = freshAdvise(first);
    if (!ruleSets.has(state.play.rules)) state.play = freshPlay(first);
    fitToRules(state.advise);
    el.target.value = state.target.score;
    el.others.value = state.target.others;
    renderRisk();
    renderAll();
    el.app.dataset.ready = "yes";
    timings.ready = performance.now();
    performance.mark("memo:ready");
    updateAdvice();
  }

  start();
})();
