"""How the HTTP service is configured: its limits, and where the operator token comes from."""

from __future__ import annotations

from dataclasses import dataclass

ADMIN_TOKEN_ENV = "MEMO_SOLVER_ADMIN_TOKEN"
"""The operator token of the job endpoints, read on each request: unset, they are off."""


@dataclass(frozen=True)
class ApiSettings:
    deadline_s: float = 10.0
    """How long a request waits for a cold computation before 503 + Retry-After."""
    cache_bytes: int = 256 << 20
    """In-process block cache per rule set (the whole ``yahtzee`` game is 8 MiB)."""
    max_body_bytes: int = 1 << 20
    retry_after_s: int = 2
    doom_limit: int = 1_000_000
    """Positions one Dice of Doom request may solve (about 0.3 GB): every 2 x 2 and 3 x 3
    board fits; a larger board past it gets a 422 naming the limit."""
