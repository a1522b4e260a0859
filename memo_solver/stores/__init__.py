"""The stores the engine's memo lives in: in memory, an SQLite file, a shared Redis;
and copying blocks between them. They know the core's protocols, never a game."""
