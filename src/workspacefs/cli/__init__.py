"""The ``workspacefs`` command (typer + rich): mount, snapshot, diff, restore, persist, run, ...

Every command is in a private module of this package; ``main`` runs one.
See docs/daemon.md for the commands, their exit codes and the daemon.
"""

from ._app import EXIT_CONTAINER as EXIT_CONTAINER
from ._app import EXIT_FAILED as EXIT_FAILED
from ._app import EXIT_NO_WORKSPACE as EXIT_NO_WORKSPACE
from ._app import EXIT_OK as EXIT_OK
from ._app import EXIT_PROBLEMS as EXIT_PROBLEMS
from ._app import EXIT_USAGE as EXIT_USAGE
from ._app import app as app
from ._main import main as main
from ._main import run as run
