"""The fronts, the top floor: the gRPC server (``server``: ``python -m verifiers.fronts.server``) and the HTTP
front (``http/``: the v1 API, OpenRLHF's and SandboxFusion's shapes), both over one ``VerifierService``.
"""
