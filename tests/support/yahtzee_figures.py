"""Official Yahtzee's exact final-score distribution under our strategy (ties broken towards
keeping more dice), to ten digits.

The whole-game test in ``test_stats.py`` computes them (about 35 CPU s), and
the 20,000 simulated games of ``test_simulate.py`` must land within four standard errors of
them, so the suite checks the simulation against figures that a test pins.
"""

STD = 59.607586386
MEDIAN = 248
P_UPPER_BONUS = 0.6812220109
P_YAHTZEE = 0.3373710889
"""50 scored in the Yahtzee box."""
P_EXTRA_BONUS = 0.0824504349
"""At least one +100."""
P_ANY_YAHTZEE = 0.3673304443
"""At least one turn ending with five of a kind, whichever box took it."""
