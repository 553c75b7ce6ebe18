"""The service behind both fronts (gRPC: verifiers/fronts/server.py, HTTP: verifiers/http): transport-free.

- ``core``: ``VerifierService``: verify and register, with the cache, bounds, fairness and metrics;
- ``bounds``: per-request bounds (items, bytes, deadline); ``fair``: callers take turns (``FairGate``);
  ``callers``: who is calling; ``admin_token``: where the admin token comes from;
- ``registry``: the verifiers registered at run time; ``store`` (SQLite) and ``store_postgres`` keep them;
- ``cache``: verdicts of identical items; ``metrics``: counters and latencies for ``/metrics``.

Its limits are one ``ServiceLimits`` object (verifiers/shapes/limits.py, beside the shapes: the kinds' pools read
it too).
"""
