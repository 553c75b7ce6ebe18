"""The sandbox backends, one module each (picked by name from ``BACKENDS``, table.py): ``docker.py``,
``podman.py`` (the same containers from a rootless Podman), ``bwrap.py`` (bubblewrap), and what they share:
``framing.py`` (the frame channel to the worker), ``cgroups.py`` and ``seccomp.py``. The contract is sandbox/backend.py."""
