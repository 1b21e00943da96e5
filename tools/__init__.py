"""Tools of the repository, for its development: not part of the installed package (the wheel holds
``fastslow`` alone). Run them from the repository's root (``python -m tools.<name>...``); pytest has
the root on ``sys.path`` too (the root ``conftest.py`` is collected from there)."""
