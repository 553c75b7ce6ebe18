"""Building the sandbox images offline: ``python.py`` the Python image every sandbox runs (``python -m sandbox.image``),
``langs.py`` the toolchain image of the other languages (``python -m sandbox.image.langs``; its packages are the
language records', languages/<name>.py)."""
