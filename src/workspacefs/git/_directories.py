"""Where workspacefs keeps a user's data: a path computed from the environment, apart
from pygit2 (the runtime directory and the stores look here without loading git)."""

from __future__ import annotations

import os


def data_directory() -> str:
    """This user's workspacefs data directory: ``$XDG_DATA_HOME/workspacefs``, else
    ``~/.local/share/workspacefs`` (the XDG base-directory rule)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return os.path.join(base, "workspacefs")


def default_repository(workspace: str) -> str:
    """Where a workspace's snapshots go unless told otherwise: under the user's
    data directory, outside any mount an agent can reach."""
    return os.path.join(data_directory(), "repositories", f"{workspace}.git")
