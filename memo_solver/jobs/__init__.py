"""Background jobs on the shared Redis: the queue and the worker that serves it."""
