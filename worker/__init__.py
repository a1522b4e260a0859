"""The memo-solver worker: serves background jobs from the shared Redis memo."""
