"""The server's Prometheus metrics, in a registry of its own (no process-global state).

``openjudge_serve_requests_total{route,status}``, ``openjudge_serve_samples_total{route,outcome}``
(``scored``; ``failed``: the reward is what the failure policy made of a failure, or ``null``),
``openjudge_serve_grader_errors_total{grader,kind}``, ``openjudge_serve_pending_samples`` and
``openjudge_serve_max_pending_samples``, and ``openjudge_serve_request_seconds{route}`` (a
histogram of the time from admission to answer).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "ServerMetrics"]

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class ServerMetrics:
    """The counters, gauges and histogram of one server."""

    def __init__(self, max_pending: int, pending: Callable[[], float]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._request_children: dict[tuple[str, int], Counter] = {}
        self.requests = Counter(
            "openjudge_serve_requests",
            "HTTP requests answered, by route and status",
            ["route", "status"],
            registry=self.registry,
        )
        self.samples = Counter(
            "openjudge_serve_samples",
            "Samples answered, by route and outcome (scored, or failed: the failure policy's value or null)",
            ["route", "outcome"],
            registry=self.registry,
        )
        self.grader_errors = Counter(
            "openjudge_serve_grader_errors",
            "Failed grader results, by grader and error kind",
            ["grader", "kind"],
            registry=self.registry,
        )
        Gauge(
            "openjudge_serve_pending_samples", "Samples admitted and not yet answered", registry=self.registry
        ).set_function(pending)  # read when scraped, not set per request
        Gauge(
            "openjudge_serve_max_pending_samples",
            "Samples admitted at most (then 429)",
            registry=self.registry,
        ).set(max_pending)
        self.latency = Histogram(
            "openjudge_serve_request_seconds",
            "Seconds from admission to answer, by route",
            ["route"],
            buckets=_BUCKETS,
            registry=self.registry,
        )

    def request(self, route: str, status: int) -> None:
        """Count one answered request (label children cached: this runs per request)."""
        key = (route, status)
        child = self._request_children.get(key)
        if child is None:
            child = self._request_children[key] = self.requests.labels(route, str(status))
        child.inc()

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)
