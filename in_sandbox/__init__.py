"""The code that runs inside the sandbox, and only there: the room whose every module the image ships as a file.

It imports nothing from the host side (``verifiers``, ``sandbox``, ``trainer``, ``proto``): tests/project/test_layering.py
checks it. The host imports from it only what is plain text work shared by both sides (``answer``: the one
final-answer rule) and, for tests, any module as it is. The image holds the room as /opt/sandbox/in_sandbox/
(``sandbox/image/python.py``; its tag hashes these files), and bubblewrap shows this folder there read-only.

- ``worker``, ``worker_io``, ``worker_clean``: the fork server, PID 1 of each sandbox, stdlib only;
- ``math/``: the math kind's grader (``grader.main`` is its job; the warm-up imports it and grades a corpus);
- ``code/``: the code kind's assert-mode harness (``harness``, ``candidate``, ``wire``, ``testshape``) and the
  toolchain driver for compiled languages and stdio cases (``driver``, ``artifact``);
- ``answer``: the final-answer rule, read on the host (math, steps, consistency, code) and by the grader.
"""
