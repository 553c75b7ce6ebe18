"""The verifier kinds, on the floor above the shapes (they import only ``verifiers.shapes``, ``sandbox`` and
``in_sandbox``).

- ``table``: the one table of registrable kinds and the built-ins' registration (``build_builtin``,
  ``sandbox_warmup``);
- ``math/``, ``code/``: the two sandboxed kinds (their sandbox side is ``in_sandbox/math`` and ``in_sandbox/code``);
- ``format``, ``steps``, ``consistency``: host-side text checks; ``composite``: weighted sums of kinds;
- ``python_verifier``, ``remote``, ``reward_model``: kinds registered at run time (user code in the sandbox, an
  HTTP endpoint, a reward model).
"""
