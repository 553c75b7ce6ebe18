"""Running untrusted programs; imports nothing of the project.

- ``pool``: ``SandboxPool``, a warm pool of hardened sandboxes over a backend (one job at a time each);
- ``backend``: the contract every backend implements and its types (``Job``, ``Limits``, ``Result``,
  ``SandboxConfig``, ``SandboxError``, ``PoolSaturated``); ``deadline``: ``Deadline``, the one time budget;
- ``docker``, ``podman``, ``bwrap``: the backends; ``cgroups``, ``seccomp``: their hardening;
- ``image``, ``image_langs``: the offline image builds (``make setup``, ``make image-langs``);
- ``framing``: the frame channel to a sandbox's worker (which runs inside it: in_sandbox/worker.py).
"""
