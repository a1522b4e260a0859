"""The suite's helpers: real servers (Redis, a cluster, the service), brute forces the solver
is checked against, and the support each kind of test shares. Not tests themselves."""
