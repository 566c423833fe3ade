"""The workspace daemon: one process owning a workspace, its FUSE mount and a control socket.

``start`` runs one in the background and returns once its mount serves;
``connect`` reaches a running one as a ``RemoteFilesystem``; ``running_mounts``
lists this user's. The protocol is documented in docs/daemon.md.

A client needs only httpx: ``run_daemon`` (the server: trio, pyfuse3,
hypercorn, pygit2) and ``load_source`` (what ``--from`` names, as a new
in-memory workspace) load on first use.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from ..fs import ConflictReport as ConflictReport
from ..fs import MergeReport as MergeReport
from ..fs import PersistResult as PersistResult
from ..fs import PruneResult as PruneResult
from ..fs import TransferResult as TransferResult
from ..posix import canonical_mountpoint as canonical_mountpoint
from ._client import RemoteFilesystem as RemoteFilesystem
from ._client import RemoteSnapshotView as RemoteSnapshotView
from ._client import connect as connect
from ._fork_results import ForkInfo as ForkInfo
from ._options import DaemonOptions as DaemonOptions
from ._runtime import DaemonUnreachableError as DaemonUnreachableError
from ._runtime import KnownMount as KnownMount
from ._runtime import MountRecord as MountRecord
from ._runtime import NoWorkspaceError as NoWorkspaceError
from ._runtime import RuntimePaths as RuntimePaths
from ._runtime import find_mount as find_mount
from ._runtime import known_mounts as known_mounts
from ._runtime import remove_files as remove_files
from ._runtime import running_mounts as running_mounts
from ._runtime import runtime_dir as runtime_dir
from ._sources import parse_source as parse_source
from ._spawn import START_TIMEOUT as START_TIMEOUT
from ._spawn import daemon_command as daemon_command
from ._spawn import start as start
from ._verbs import VERBS as VERBS
from ._verbs import Daemon as Daemon
from ._verbs import FilesystemVerbs as FilesystemVerbs
from ._verbs import Method as Method
from ._verbs import Property as Property
from ._verbs import Verb as Verb
from ._verbs import WorkspaceVerbs as WorkspaceVerbs
from ._wire import API_VERSION as API_VERSION

if TYPE_CHECKING:
    from ._load import LOADED_TAG as LOADED_TAG
    from ._load import load_source as load_source
    from ._server import run_daemon as run_daemon

_LAZY_NAMES = {"run_daemon": "._server", "load_source": "._load", "LOADED_TAG": "._load"}


def __getattr__(name: str) -> object:
    if name not in _LAZY_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(_import_module(_LAZY_NAMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_NAMES})
