"""The HTTP front of the service: one FastAPI app, beside the gRPC server (verifiers/fronts/server.py).

- ``api``: ``create_app(service)`` and ``HttpServer`` (uvicorn on its own thread); the routes of our own shape;
- ``v1``: ``/v1`` (protobuf's JSON names) ⇄ ``Request``/``Verdict``; ``protojson``: the JSON ⇄ protobuf messages;
- ``openrlhf``: OpenRLHF's ``/get_reward``; ``sandboxfusion``: SandboxFusion's ``/run_code`` and ``/submit``;
- ``common``: ``HttpError``, the error body, running a blocking call in the caller's lane;
- ``limits``: ``InputLimits`` (body size, item count, header and connection bounds).

A new HTTP shape is one module here with a router, included by ``api.create_app``.
"""
