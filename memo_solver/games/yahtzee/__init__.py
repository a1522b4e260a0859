"""The Yahtzee family: dice, rule sets, states, the turn math, advice and analysis."""
