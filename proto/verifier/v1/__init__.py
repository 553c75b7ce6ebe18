"""Version 1 of the verifier API: ``verifier.proto`` and the stubs generated from it (``make proto``).

- ``verifier_pb2``: the messages; ``verifier_pb2_grpc``: ``VerifierServiceStub`` and the servicer base.
"""
