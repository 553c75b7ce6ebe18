"""The wire contract of the verifier service, and nothing else of the project.

- ``verifier/v1/verifier.proto``: the messages and the ``VerifierService`` RPCs;
- ``verifier/v1/verifier_pb2``, ``verifier_pb2_grpc``: the stubs generated from it (``make proto``).
"""
