"""Prometheus metrics of the HTTP service: requests, latency, and what the engines did.

One registry for the process; the engine figures are read from the engines' counters at
scrape time, so the hot path only bumps plain integers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from memo_solver.core.engine import Engine

REGISTRY = CollectorRegistry()
REQUESTS = Counter(
    "memo_solver_requests",
    "HTTP requests by route and status",
    ["route", "status"],
    registry=REGISTRY,
)
LATENCY = Histogram(
    "memo_solver_request_seconds",
    "HTTP request latency by route",
    ["route"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10),
    registry=REGISTRY,
)
DEADLINES = Counter(
    "memo_solver_deadline_exceeded",
    "requests answered 503 because their state was still being computed",
    registry=REGISTRY,
)


class _EngineCollector(Collector):
    def __init__(self) -> None:
        self.engines: Mapping[str, Engine] = {}

    def collect(self) -> Iterator[Metric]:
        computed = CounterMetricFamily(
            "memo_solver_blocks_computed", "blocks computed by this process", labels=["rules"]
        )
        fetched = CounterMetricFamily(
            "memo_solver_blocks_fetched", "blocks fetched from the store", labels=["rules"]
        )
        ratio = GaugeMetricFamily(
            "memo_solver_cache_hit_ratio",
            "share of block lookups answered by the in-process cache",
            labels=["rules"],
        )
        cached = GaugeMetricFamily(
            "memo_solver_cache_bytes", "bytes of blocks in the in-process cache", labels=["rules"]
        )
        for name, engine in self.engines.items():
            computed.add_metric([name], engine.counters.computed)
            fetched.add_metric([name], engine.counters.fetched)
            lookups = engine.memo.hits + engine.memo.misses
            ratio.add_metric([name], engine.memo.hits / lookups if lookups else 0.0)
            cached.add_metric([name], engine.memo.nbytes)
        yield from (computed, fetched, ratio, cached)


_ENGINES = _EngineCollector()
REGISTRY.register(_ENGINES)


def watch_engines(engines: Mapping[str, Engine]) -> None:
    _ENGINES.engines = engines


def render() -> tuple[bytes, str]:
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
