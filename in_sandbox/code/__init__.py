"""The code kind's side of the sandbox.

- ``harness``: assert mode's job (``harness.main``): the tests' process; ``candidate``: the candidate's
  process it forks; ``wire``: the plain data that crosses between them; ``testshape``: the tests' shapes;
- ``driver``: the toolchain job (compile once, run every stdio case); ``artifact``: the compile cache's
  sandbox half (pack a compile's output, unpack it for a later job).
"""
