"""The HTTP service: the FastAPI app, its routes, models, fast path and metrics."""
