"""The math grader, run only inside the sandbox (no sympy parse ever runs in the service process).

- ``grader``: the job (``grader.main``: a batch of items as JSON on stdin, one verdict line per item);
- ``forms``, ``text``, ``equal``: its rules (answer shapes, text normalisation, equivalence).
"""
