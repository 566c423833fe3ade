"""The debug web UI: snapshots, trees, files and diffs of a workspace's history.

``open_target(path)`` reads a session dump, a workspace archive, a directory
of them or a git repository of persisted workspaces; ``LiveTarget(fs)`` shows
a live workspace (in this process, or a daemon's ``RemoteFilesystem``).
``create_app(target, token=new_token())`` is the ASGI app, ``serve(target)``
runs it until Ctrl-C and ``start(target)`` in a background thread; every
request needs the run's secret (the URL they report carries it). From a
shell::

    workspacefs debug session.jsonl --open

Nothing here is imported by ``import workspacefs``.
"""

from ._app import create_app as create_app
from ._archives import ArchiveMember as ArchiveMember
from ._archives import ArchivesTarget as ArchivesTarget
from ._auth import new_token as new_token
from ._gitrepo import GitTarget as GitTarget
from ._live import BrowsableFilesystem as BrowsableFilesystem
from ._live import CallArguments as CallArguments
from ._live import LiveTarget as LiveTarget
from ._live import toolset_arguments as toolset_arguments
from ._model import LIVE as LIVE
from ._model import Changes as Changes
from ._model import Origin as Origin
from ._model import SnapshotSummary as SnapshotSummary
from ._model import SpaceFigures as SpaceFigures
from ._model import TargetInfo as TargetInfo
from ._model import TreeEntry as TreeEntry
from ._model import origin_from_tag as origin_from_tag
from ._open import Connect as Connect
from ._open import open_target as open_target
from ._server import DEFAULT_PORT as DEFAULT_PORT
from ._server import DebugServer as DebugServer
from ._server import check_exposure as check_exposure
from ._server import serve as serve
from ._server import start as start
from ._target import DebugTarget as DebugTarget
