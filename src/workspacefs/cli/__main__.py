"""``python -m workspacefs.cli``: the ``workspacefs`` command."""

from ._main import run

run()
