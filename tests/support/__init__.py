"""Helpers every test tier may import (``from support.NAME import ...``).

``tests/`` is on ``sys.path`` (pytest puts the directory of the top ``conftest.py``
there, since ``tests/`` is not a package), so this package is ``support``.
"""
