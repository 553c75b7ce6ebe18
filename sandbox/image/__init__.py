"""Building the sandbox images offline: ``python.py`` the Python image every sandbox runs (``python -m sandbox.image``),
``langs.py`` the toolchain image of the other languages (``python -m sandbox.image.langs``), ``extras.py`` what the
toolchain image installs and trims beyond Debian's packages (Kotlin, Racket)."""
