"""The ``math`` verifier and answer extraction.

- ``verifier``: ``MathVerifier``: reads the final answer on the host (``in_sandbox/answer.py``, the one
  final-answer rule), grades a batch in one sandbox job;
- ``grader``, ``forms``, ``text``, ``equal``: the grader and its rules, which run only inside the sandbox
  (shipped as source; no sympy parse ever runs in the service process).
"""
