"""The values: scoring, the compiled kernel, one turn, one roll, the `Game` the engine solves, the
need objective and its tables."""
