"""The ``math`` verifier and answer extraction.

- ``verifier``: ``MathVerifier``: extracts on the host, grades a batch in one sandbox job;
- ``extract``: the answer of a completion (``\\boxed{}``, ``<answer>``, fallbacks), hedges refused;
- ``grader``, ``forms``, ``text``, ``equal``: the grader and its rules, which run only inside the sandbox
  (shipped as source; no sympy parse ever runs in the service process).
"""
