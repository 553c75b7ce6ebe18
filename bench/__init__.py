"""The benchmarks, by subject, each run as a module from the repository root (``python -m bench.<folder>.<name>``):
``pool/`` the sandbox pool and its backends, ``math_grading/`` and ``code_grading/`` the verifiers, ``service/`` the
fronts, fairness and load, ``training/`` the trainer and the alarm, ``tools/`` comparing refs and long fuzz runs.
Each prints its figures against a baseline measured in the same run; the figures kept are in ``results/``."""
