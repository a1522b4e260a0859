"""Bit-mask helpers shared by games whose states are sets (filled boxes, owned hexes)."""

from __future__ import annotations


def submasks(mask: int) -> list[int]:
    """Every subset of a bit mask, ``mask`` itself first and 0 last."""
    subs, sub = [], mask
    while True:
        subs.append(sub)
        if sub == 0:
            return subs
        sub = (sub - 1) & mask
