"""Prometheus metrics of the HTTP service: requests, latency, and what the engines did.

One process (``serve``): one registry, and the engine figures read from the engines'
counters at scrape time, so the hot path only bumps plain integers.

Several processes (``serve --workers N``): a scrape reaches one of them, and must count
them all. prometheus_client's multiprocess mode does that: with ``PROMETHEUS_MULTIPROC_DIR``
set before it is imported (the parent sets it to a folder of its own run, see
:mod:`.processes`), every process writes its values to memory-mapped files there, and the
one scraped merges them (:class:`MultiProcessCollector`): requests, latency and computations
summed over the processes, living or not. The engine figures cannot be read at scrape time
from another process, so each process publishes its own (:func:`publish_engines`) every
second and when scraped: blocks computed and fetched as counters (summed), and its block
cache's hit ratio and size as gauges labelled with its ``pid`` (each process keeps its own
cache; a process that stops takes its series with it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

import anyio
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

from memo_solver.core.engine import Engine

MULTIPROCESS = "PROMETHEUS_MULTIPROC_DIR" in os.environ
"""Whether this process is one of several (prometheus_client read the same variable when
it was imported, to choose where its values live)."""
PUBLISH_EVERY_S = 1.0
"""How stale another process's engine figures may be in a scrape (several processes)."""

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
COMPUTATIONS = Counter(
    "memo_solver_computations_started",
    "whole computations no memo keeps (distributions, Dice of Doom solves) started: once per "
    "question across the service's processes, whichever process its retries reach",
    registry=REGISTRY,
)

_COMPUTED = "memo_solver_blocks_computed"
_COMPUTED_HELP = "blocks computed by this service"
_FETCHED = "memo_solver_blocks_fetched"
_FETCHED_HELP = "blocks fetched from the store"
_RATIO = "memo_solver_cache_hit_ratio"
_RATIO_HELP = "share of block lookups answered by the in-process cache"
_CACHED = "memo_solver_cache_bytes"
_CACHED_HELP = "bytes of blocks in the in-process cache"


class _EngineCollector(Collector):
    """One process: the engines' figures, read when scraped."""

    def __init__(self) -> None:
        self.engines: Mapping[str, Engine] = {}

    def collect(self) -> Iterator[Metric]:
        computed = CounterMetricFamily(_COMPUTED, _COMPUTED_HELP, labels=["rules"])
        fetched = CounterMetricFamily(_FETCHED, _FETCHED_HELP, labels=["rules"])
        ratio = GaugeMetricFamily(_RATIO, _RATIO_HELP, labels=["rules"])
        cached = GaugeMetricFamily(_CACHED, _CACHED_HELP, labels=["rules"])
        for name, engine in self.engines.items():
            computed.add_metric([name], engine.counters.computed)
            fetched.add_metric([name], engine.counters.fetched)
            ratio.add_metric([name], _hit_ratio(engine))
            cached.add_metric([name], engine.memo.nbytes)
        yield from (computed, fetched, ratio, cached)


class _EnginePublisher:
    """Several processes: the engines' figures written to this process's files."""

    def __init__(self) -> None:
        self.engines: Mapping[str, Engine] = {}
        self.computed = Counter(_COMPUTED, _COMPUTED_HELP, ["rules"], registry=None)
        self.fetched = Counter(_FETCHED, _FETCHED_HELP, ["rules"], registry=None)
        self.ratio = Gauge(
            _RATIO, _RATIO_HELP, ["rules"], registry=None, multiprocess_mode="liveall"
        )
        self.cached = Gauge(
            _CACHED, _CACHED_HELP, ["rules"], registry=None, multiprocess_mode="liveall"
        )
        self.published: dict[str, tuple[int, int]] = {}

    def publish(self) -> None:
        for name, engine in self.engines.items():
            computed, fetched = engine.counters.computed, engine.counters.fetched
            was_computed, was_fetched = self.published.get(name, (0, 0))
            self.computed.labels(name).inc(computed - was_computed)
            self.fetched.labels(name).inc(fetched - was_fetched)
            self.published[name] = (computed, fetched)
            self.ratio.labels(name).set(_hit_ratio(engine))
            self.cached.labels(name).set(engine.memo.nbytes)


def _hit_ratio(engine: Engine) -> float:
    lookups = engine.memo.hits + engine.memo.misses
    return engine.memo.hits / lookups if lookups else 0.0


_ENGINES = _EngineCollector()
_PUBLISHER = _EnginePublisher() if MULTIPROCESS else None
if _PUBLISHER is None:
    REGISTRY.register(_ENGINES)


def watch_engines(engines: Mapping[str, Engine]) -> None:
    _ENGINES.engines = engines
    if _PUBLISHER is not None:
        _PUBLISHER.engines = engines


async def publish_engines() -> None:
    """Several processes: publish this process's engine figures every second, for ever
    (run in the service's task group). Returns at once with one process."""
    if _PUBLISHER is None:
        return
    while True:
        _PUBLISHER.publish()
        await anyio.sleep(PUBLISH_EVERY_S)


def process_stopped() -> None:
    """Several processes: drop this process's gauges (its cache goes with it)."""
    if MULTIPROCESS:
        mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]


def render() -> tuple[bytes, str]:
    if _PUBLISHER is None:
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    _PUBLISHER.publish()
    merged = CollectorRegistry()
    MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
    return generate_latest(merged), CONTENT_TYPE_LATEST
