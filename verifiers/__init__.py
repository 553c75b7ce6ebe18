"""Grading: built-in verifiers, the registry, the gRPC server and the client library.

Importing this package imports nothing heavy; the trainer uses only ``verifiers.client``.
"""
