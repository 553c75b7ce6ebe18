"""The shapes every floor of ``verifiers`` shares (the ground floor: it imports no other floor).

- ``request``: ``Request``, one thing to grade; ``outcome``: the outcome vocabulary;
- ``base``: ``Verdict``, ``Context``, the ``Verifier`` contract and ``Builtin`` (a built-in kind's declarations);
- ``limits``: ``ServiceLimits``, the service's and the sandbox pools' limits as one object;
- ``signals``: the process signals a verdict can carry; ``errors``: usage and listen errors.
"""
