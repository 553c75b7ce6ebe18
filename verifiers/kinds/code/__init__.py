"""The ``code`` verifier: a completion's program, run against the reference's tests in the sandbox.

- ``verifier``: ``CodeVerifier`` (assert mode and stdio mode), the kind the registry builds;
- ``options``: ``CodeOptions``, a request's options parsed and validated once (``CodeVerifier.check``);
- ``stdio``: stdin/stdout cases: running them (Python pool or toolchain pool) and grading their outputs;
- ``judges``: the host-side judges (``exact``, ``tokens``, ``float``) and the stdio reference's shape;
- ``languages``: the language table (tags, compile and run commands); a new language is one row there;
- ``toolchains``: the toolchain sandbox pool and the driver job that compiles once and runs every case;
- ``harness``, ``candidate``, ``wire``, ``driver``: sources that run only inside the sandbox (shipped as text).
"""
