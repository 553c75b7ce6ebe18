"""Running untrusted programs; imports nothing of the project.

- ``pool``: ``SandboxPool``, a warm pool of hardened sandboxes over a backend (one job at a time each);
- ``backend``: the contract every backend implements and its types (``Job``, ``Limits``, ``Result``,
  ``SandboxConfig``, ``SandboxError``, ``PoolSaturated``); ``deadline``: ``Deadline``, the one time budget;
- ``docker``, ``podman``, ``bwrap``: the backends; ``cgroups``, ``seccomp``: their hardening;
- ``image``, ``image_langs``: the offline image builds (``make setup``, ``make image-langs``);
- ``worker``, ``worker_io``, ``worker_clean``, ``framing``: what runs inside a sandbox and how it talks.
"""
