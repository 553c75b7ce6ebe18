"""Prometheus metrics of the verifier core, served as ``GET /metrics`` on the HTTP port.

The counters live in ``VerifierService`` (core.py calls ``observe_*``), not in a transport, so gRPC
and HTTP traffic (``/v1``, ``/get_reward``, ``/run_code``) are counted alike. Each service owns its own
``CollectorRegistry`` (two services in one process never collide); the pool and cache figures are read
at scrape time from the objects themselves, so they cannot drift from what the service uses.

    rlvr_verify_requests_total{verifier, outcome}   graded items (composites count their parts too)
    rlvr_verify_errors_total{status}                requests refused (INVALID_ARGUMENT, NOT_FOUND, …)
    rlvr_verify_seconds{verifier}                   grading latency per item (histogram; cache hits too)
    rlvr_verify_batch_items                         items per VerifyBatch / verify_batch call (histogram)
    rlvr_sandbox_jobs_total{result}                 sandbox jobs: ok | nonzero_exit | timeout | sandbox_error
    rlvr_sandbox_job_seconds                        wall time of a sandbox job, queueing included (histogram)
    rlvr_sandbox_pool_size / _live / _busy / _waiters   gauges, read from the pool at scrape time
    rlvr_sandbox_restarts_total                     sandboxes replaced (died, hung, asked to retire)
    rlvr_cache_hits_total / rlvr_cache_misses_total
    rlvr_run_code_total{language, status}           SandboxFusion /run_code calls (Success | Failed | SandboxError)
    rlvr_queue_depth{class}                         waiting now: HTTP requests per lane (host | sandbox) and
                                                    sandbox jobs for a slot (sandbox_job, verifiers/service/fair.py)
    rlvr_queue_wait_seconds{class}                  how long each waited (histogram)
    rlvr_cache_bytes / rlvr_cache_entries           what the verdict cache holds (its byte budget: --cache-mb)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

if TYPE_CHECKING:
    from sandbox.backend import Result

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
UNKNOWN = "unknown"  # verifier label for names that are not registered (keeps the label set bounded)


class _LiveCollector:
    """Pool and cache figures read at scrape time (the objects keep their own counts)."""

    def __init__(self, pool: Any, cache: Any):
        self.pool = pool
        self.cache = cache
        self.queues: dict[str, Callable[[], int]] = {}  # class -> its depth now

    def collect(self):
        if self.queues:
            depth = GaugeMetricFamily("rlvr_queue_depth", "work waiting now, by class", labels=["class"])
            for name, fn in self.queues.items():
                depth.add_metric([name], fn())
            yield depth
        if self.pool is not None:
            s = self.pool.stats()
            yield GaugeMetricFamily("rlvr_sandbox_pool_size", "sandboxes the pool is configured for", s["size"])
            yield GaugeMetricFamily("rlvr_sandbox_pool_live", "sandboxes up (idle or busy)", s["live"])
            yield GaugeMetricFamily("rlvr_sandbox_pool_busy", "sandboxes running a job", max(0, s["live"] - s["idle"]))
            yield GaugeMetricFamily("rlvr_sandbox_pool_waiters", "callers waiting for a free sandbox", s["waiters"])
            yield CounterMetricFamily(
                "rlvr_sandbox_restarts", "sandboxes replaced (died, hung, retired)", s["replaced"]
            )
        if self.cache is not None:
            yield CounterMetricFamily("rlvr_cache_hits", "verdicts answered from the cache", self.cache.hits)
            yield CounterMetricFamily("rlvr_cache_misses", "cache lookups that had to grade", self.cache.misses)
            yield GaugeMetricFamily("rlvr_cache_bytes", "bytes the verdict cache holds (estimate)", self.cache.bytes)
            yield GaugeMetricFamily("rlvr_cache_entries", "verdicts in the cache", len(self.cache))


class ServiceMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "rlvr_verify_requests", "graded items by verifier and outcome", ["verifier", "outcome"], registry=r
        )
        self.errors = Counter("rlvr_verify_errors", "requests refused, by gRPC status", ["status"], registry=r)
        self.latency = Histogram(
            "rlvr_verify_seconds", "grading latency per item", ["verifier"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.batch_items = Histogram(
            "rlvr_verify_batch_items", "items per batch call", buckets=BATCH_BUCKETS, registry=r
        )
        self.jobs = Counter("rlvr_sandbox_jobs", "sandbox jobs by result", ["result"], registry=r)
        self.job_seconds = Histogram(
            "rlvr_sandbox_job_seconds",
            "wall time of a sandbox job (queueing included)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.run_code = Counter(
            "rlvr_run_code", "SandboxFusion /run_code calls by language and status", ["language", "status"], registry=r
        )
        self.queue_wait = Histogram(
            "rlvr_queue_wait_seconds",
            "time work waited for a thread or a sandbox slot",
            ["class"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self._live: _LiveCollector | None = None

    def watch(self, pool: Any, cache: Any) -> None:
        """Report ``pool.stats()`` and the cache's hit counts at scrape time."""
        if self._live is None:
            self._live = _LiveCollector(pool, cache)
            self.registry.register(self._live)

    def watch_queue(self, name: str, depth: Callable[[], int]) -> None:
        """Report ``depth()`` as ``rlvr_queue_depth{class=name}`` at scrape time."""
        if self._live is None:
            self.watch(None, None)
        self._live.queues[name] = depth

    def observe_queue_wait(self, name: str, seconds: float) -> None:
        self.queue_wait.labels(name).observe(seconds)

    # -- called by the service --------------------------------------------------------------------
    def observe_verdict(self, verifier: str, outcome: str, seconds: float) -> None:
        self.requests.labels(verifier, outcome).inc()
        self.latency.labels(verifier).observe(seconds)

    def observe_error(self, status: str) -> None:
        self.errors.labels(status).inc()

    def observe_batch(self, items: int) -> None:
        self.batch_items.observe(items)

    def observe_job(self, result: Result, seconds: float) -> None:
        if result.sandbox_error:
            kind = "sandbox_error"
        elif result.timed_out:
            kind = "timeout"
        elif result.exit_code == 0:
            kind = "ok"
        else:
            kind = "nonzero_exit"
        self.jobs.labels(kind).inc()
        self.job_seconds.observe(seconds)

    def observe_run_code(self, language: str, status: str) -> None:
        self.run_code.labels(language, status).inc()

    # -- exposition ---------------------------------------------------------------------------------
    def exposition(self) -> tuple[bytes, str]:
        """(body, content type) of the Prometheus text format."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
