"""What a solved game says over whole games: the policy, the exact score distribution, statistics,
simulation, table export."""
