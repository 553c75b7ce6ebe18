"""The ``verifier`` API, one sub-package per version.

- ``v1``: the current contract (``verifier.proto`` and its generated stubs).
"""
