"""The API's request and response models: what ``openapi.json`` documents.

The advice answer's models (``AdviceOut``, ``BatchOut`` and their parts) are in
:mod:`memo_solver.service.fast`, beside the writers that give their bytes directly.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StrictInt,
    WithJsonSchema,
)

from memo_solver.games.yahtzee import DEFAULT_CAP
from memo_solver.service.fast import ActionOut, ErrorDetail

MAX_BATCH = 1000
MAX_THRESHOLDS = 100

StateInput = JsonValue
"""Any JSON: the validator says what is wrong with a state in the CLI's words, at ``state``
(pydantic would name a union member, ``state.dict[str,any]``), and a batch gives a bad
state its own error entry whatever its type."""

_STATE_EXAMPLE: dict[str, JsonValue] = {
    "filled": [
        "twos",
        "threes",
        "fours",
        "fives",
        "sixes",
        "three_of_a_kind",
        "four_of_a_kind",
        "full_house",
        "small_straight",
        "large_straight",
        "chance",
    ],
    "upper": 62,
    "yahtzee_bonus": False,
    "rerolls_left": 2,
    "dice": [1, 2, 2, 2, 6],
}


RulesInput = str | dict[str, Any]
"""A built-in rule set, a registered name or a fingerprint, or a rule-set file inline."""
_RULES_HELP = (
    "a built-in rule set, a registered name or a fingerprint (GET /v1/rules), or a rule-set "
    "definition inline (README: Rule-set files)"
)


def _points(value: Any) -> Any:
    """A whole number of points, where a form sends every field: an empty one is unset."""
    if isinstance(value, bool):
        raise ValueError("should be a whole number of points, not true or false")
    if isinstance(value, str) and not value.strip():
        return None
    return value


_POINTS_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "integer"},
        {"type": "string", "pattern": r"^\s*([+-]?[0-9]+)?\s*$"},
        {"type": "null"},
    ]
}
"""What a need or a cap may be sent as: a number, a form's text of one (blank: unset), or
null."""

Need = Annotated[
    int | None,
    BeforeValidator(_points),
    WithJsonSchema(_POINTS_SCHEMA),
    Field(
        description="play to reach a target: also answer the best chance of scoring at least "
        "this many more points (bonuses included, points banked excluded), for the state and "
        "every action, best chance first (ties: the mean advice's order); null or empty: no "
        "need"
    ),
]
NeedCap = Annotated[
    int | None,
    BeforeValidator(_points),
    WithJsonSchema(_POINTS_SCHEMA),
    Field(
        description="the need table's cap: needs up to it are answered exactly; a larger "
        "need the open boxes could still reach gets 422 (1 to 2000; null or empty: "
        f"{DEFAULT_CAP})"
    ),
]


def _risk(value: Any) -> Any:
    """A risk as sent, where a form sends every field: an empty one is unset, and true or
    false is no number (the route checks the dial, naming ``risk``)."""
    if isinstance(value, bool):
        raise ValueError("should be a number, not true or false")
    if isinstance(value, str) and not value.strip():
        return None
    return value


Risk = Annotated[
    float | str | None,
    BeforeValidator(_risk),
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string"}, {"type": "null"}]}),
    Field(
        description="play at a risk theta, from -0.5 (safe) to 0.5 (bold), at most 3 decimals: "
        "also answer the certainty equivalent (the points for sure worth the rest of the "
        "game to a player maximising E[exp(theta X)], or minimising it below 0) for the state "
        "and every action, best first (ties: the mean advice's order); 0 plays for the mean; "
        "null or empty: no risk"
    ),
]


class StateRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"rules": "yahtzee", "state": _STATE_EXAMPLE}]},
    )
    rules: RulesInput = Field("yahtzee", description=_RULES_HELP)
    state: StateInput = Field(
        description="JSON state {filled, upper, yahtzee_bonus, rerolls_left, dice} (under a "
        "rule set with saved rolls {filled, upper, yahtzee_bonus, saved, rolls_left, dice}: "
        "the bank at a turn start, the rolls left with dice), or the short text form, or the "
        "reference Haskell line"
    )
    need: Need = None
    need_cap: NeedCap = None
    risk: Risk = None


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: RulesInput = Field("yahtzee", description=_RULES_HELP)
    states: list[StateInput] = Field(max_length=MAX_BATCH)
    need: Need = None
    need_cap: NeedCap = None
    risk: Risk = None


class StatsRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"rules": "yahtzee-upper", "state": "start", "thresholds": [60, 80]}]
        },
    )
    rules: RulesInput = Field("yahtzee", description=_RULES_HELP)
    state: StateInput = Field(
        "start", description="as for /v1/advice; the points counted are those still to come"
    )
    thresholds: list[StrictInt] = Field(  # a JSON number: true is no score
        default_factory=list,
        max_length=MAX_THRESHOLDS,
        description="also answer P(points >= t) for each t",
    )
    full: bool = Field(False, description="include the probability of every total")
    risk: Risk = Field(
        None,
        description="the distribution when playing at a risk theta, from -0.5 (safe) to 0.5 "
        "(bold), at most 3 decimals: the strategy maximising E[exp(theta X)] (minimising it "
        "below 0; ties: the mean strategy's order); 0 or null: optimal play for points",
    )


class ReviewRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: RulesInput | None = Field(
        None, description=f"{_RULES_HELP}; default: the game's own rules, else yahtzee"
    )
    game: dict[str, Any] = Field(
        description='{"rules"?, "turns": [{"rolls": [[5 faces], ...], "keeps": [[faces '
        'kept after each roll but the last], ...], "box": name}, ...]}'
    )
    risk: Risk = None


class PrecomputeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: RulesInput = Field(
        "yahtzee", description=f"{_RULES_HELP}, or another game such as dice-of-doom-3x3"
    )


class SolveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: RulesInput = Field("yahtzee", description=_RULES_HELP)


class ErrorOut(BaseModel):
    error: ErrorDetail


class ValueOut(BaseModel):
    rules: str
    value: float
    turn_start_value: float
    need: int | None = Field(default=None, description="with a need: the need asked")
    cap: int | None = Field(default=None, description="with a need: the need table's cap")
    probability: float | None = Field(
        default=None, description="with a need: the best chance of scoring at least it"
    )
    turn_start_probability: float | None = Field(
        default=None, description="with a need: that chance before the turn's first roll"
    )
    risk: float | None = Field(default=None, description="with a risk: the risk asked")
    certainty_equivalent: float | None = Field(
        default=None, description="with a risk: the state's certainty equivalent at it"
    )
    turn_start_certainty_equivalent: float | None = Field(
        default=None, description="with a risk: that before the turn's first roll"
    )


class StateOut(BaseModel):
    """A state as ``state_to_json`` writes it: ``rerolls_left``, or under a rule set with
    saved rolls ``saved`` and ``rolls_left`` instead (each answer has the keys of its rule
    set's states only)."""

    filled: list[str]
    upper: int
    yahtzee_bonus: bool
    saved: int | None = Field(
        default=None,
        description="with saved rolls: the bank the turn starts with (null once rolled)",
    )
    rerolls_left: int | None = Field(default=None, description="without saved rolls")
    rolls_left: int | None = Field(
        default=None, description="with saved rolls: the rolls left, bank included"
    )
    dice: list[int] | None


class StatsOut(BaseModel):
    rules: str
    state: StateOut
    from_start: bool = Field(
        description="true: the points are the final score; false: the points still to come"
    )
    mean: float
    std: float
    percentiles: dict[str, int]
    p_upper_bonus: float
    p_yahtzee: float = Field(
        description="the chance of scoring the all-alike (Yahtzee) box's points (50 in Yahtzee)"
    )
    p_extra_bonus: float = Field(
        description="the chance of at least one all-alike bonus (+100 in Yahtzee)"
    )
    p_any_yahtzee: float = Field(
        description="the chance that a turn ends with all dice alike, whichever box takes it"
    )
    box_points: dict[str, float]
    bonus_points: dict[str, float]
    survival: dict[str, float]
    probabilities: list[float] | None = Field(
        None, description="P(points == s) for s = 0, 1, ...; only with full: true"
    )
    risk: float | None = Field(default=None, description="with a risk: the risk asked")


class DecisionOut(BaseModel):
    turn: int
    step: str = Field(description="keep N (the keep after roll N) or box")
    state: str
    dice: list[int]
    rerolls_left: int | None = Field(default=None, description="without saved rolls")
    saved: int | None = Field(
        default=None, description="with saved rolls: the bank the turn started with"
    )
    rolls_left: int | None = Field(
        default=None, description="with saved rolls: the rolls left, bank included"
    )
    chosen: ActionOut
    best: ActionOut
    loss: float
    chosen_certainty_equivalent: float | None = Field(
        default=None, description="with a risk: the chosen action's certainty equivalent"
    )
    best_certainty_equivalent: float | None = Field(
        default=None, description="with a risk: that of the best action at the risk"
    )
    risk_loss: float | None = Field(
        default=None, description="with a risk: the certainty-equivalent points lost"
    )


class ScoredOut(BaseModel):
    turn: int
    box: str
    points: int
    bonus: int
    carried: int | None = Field(
        default=None, description="with saved rolls: the bank the score carries to the next turn"
    )


class MistakeOut(BaseModel):
    turn: int
    step: str
    loss: float
    risk_loss: float | None = Field(
        default=None, description="with a risk: the certainty-equivalent points lost"
    )
    words: str


class ReviewOut(BaseModel):
    rules: str
    risk: float | None = Field(default=None, description="with a risk: the risk graded at")
    certainty_equivalent: float | None = Field(
        default=None, description="with a risk: the empty scorecard's certainty equivalent"
    )
    total_risk_loss: float | None = Field(
        default=None, description="with a risk: the certainty-equivalent points lost in all"
    )
    turns_played: int
    complete: bool
    decisions: list[DecisionOut]
    boxes: list[ScoredOut]
    final_score: int | float
    banked: int
    remaining_value: float
    expected_score: float
    total_loss: float
    skill: float
    luck: float
    worst_mistakes: list[MistakeOut]


class RuleSetOut(BaseModel):
    name: str
    description: str
    built_in: bool = Field(description="false: registered with POST /v1/rules")
    dice: int
    order: Literal["free", "forced"]
    boxes: list[str]
    labels: dict[str, str] = Field(description="what the scorecard prints, per box")
    upper_boxes: list[str]
    yahtzee_box: str | None
    rerolls: int
    upper_threshold: int
    upper_bonus: int
    yahtzee_bonus: int
    joker: Literal["forced", "free", "none"]
    saved_rolls: bool = Field(
        default=False,
        description="unused rolls are saved to the following turns (listed only when true)",
    )
    max_saved: int | None = Field(
        default=None,
        description="with saved_rolls, the most rolls a bank carries (listed only when set)",
    )
    start_value: float | None = Field(description="pinned for the built-ins, else null")
    fingerprint: str
    possible_points: dict[str, list[int]] = Field(
        description="per box, every score a game can put in it, ascending (what some roll "
        "scores there, the Joker's fixed points included): what a scorecard entered by hand "
        "is checked against"
    )


class RegisteredOut(BaseModel):
    name: str
    fingerprint: str
    created: bool = Field(description="false: these rules were registered under it already")


class UnregisteredOut(BaseModel):
    name: str
    fingerprint: str
    blocks_deleted: bool = Field(
        description="false: a built-in or another registration shares the blocks"
    )


class CoverageOut(BaseModel):
    rules: str
    blocks_total: int
    blocks_done: int
    claims_held: int
    workers_alive: int
    solving: bool = Field(
        description="whether this server process solves it in the background now (POST /v1/solve)"
    )


class ReadyOut(BaseModel):
    status: Literal["ready"]
    store: str = Field(description="where the store lives (a path, or a URL without password)")
    write: Literal["accepted", "busy"] = Field(
        description="accepted: a probe write went through; busy: another process holds the "
        "SQLite store's write lock (a precompute committing), so writes wait their turn"
    )


class JobOut(BaseModel):
    job: str
    status: str
    queued: bool | None = None
    record: dict[str, str] | None = None


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (400, 401, 403, 404, 409, 413, 422, 429, 503, 507)
}
"""Every error is this JSON; 503 and 507 (the store is full) come with Retry-After; 429: a
cap of the operator's is reached (registrations, solves past the cold budget)."""
