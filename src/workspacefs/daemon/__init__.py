"""The workspace daemon: one process owning a workspace, its FUSE mount and a control socket.

``start`` runs one in the background and returns once its mount serves;
``connect`` reaches a running one as a ``RemoteFilesystem``; ``running_mounts``
lists this user's. The protocol is documented in docs/daemon.md.
"""

from ._client import PersistResult as PersistResult
from ._client import RemoteFilesystem as RemoteFilesystem
from ._client import connect as connect
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
from ._server import DaemonOptions as DaemonOptions
from ._server import canonical_mountpoint as canonical_mountpoint
from ._server import run_daemon as run_daemon
from ._sources import parse_source as parse_source
from ._spawn import daemon_command as daemon_command
from ._spawn import start as start
from ._wire import API_VERSION as API_VERSION
