"""Answers to a player at one position: every move ranked by the mean or by a need, against an
opponent, a whole game reviewed."""
