"""Grading, in floors that are folders, each importing only the floors below it (tests/project/test_layering.py):

- ``shapes/``: what every floor shares: a request, an outcome, a verdict and the kind contract (``base``),
  the service's limits, the process signals, the errors;
- ``kinds/``: the verifier kinds (``math/``, ``code/``, ``format``, ``steps``, ``consistency``, ``composite``,
  ``python_verifier``, ``remote``, ``reward_model``) and ``table``, the one table of registrable kinds; what a
  kind runs inside the sandbox lives in the room ``in_sandbox/`` beside this package;
- ``service/``: the service behind both fronts (registry, stores, bounds, fairness, cache, metrics);
- ``fronts/``: the gRPC server (``python -m verifiers.fronts.server``) and the HTTP front (``fronts/http/``);
- the client side, the modules at this package's top: ``client`` (the RPCs; ``targets``: what it dials),
  ``cli``, ``launch`` (starts a server as another process), ``integrations/`` (TRL, verl), ``canaries/``. It
  takes only the shapes, so a trainer that imports it never loads the service.

Importing this package imports nothing heavy; the trainer uses only the client side.
"""
