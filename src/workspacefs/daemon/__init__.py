"""The workspace daemon: one process owning a workspace, its FUSE mount and a control socket.

``start`` runs one in the background and returns once its mount serves;
``connect`` reaches a running one as a ``RemoteFilesystem``; ``running_mounts``
lists this user's. The protocol is documented in docs/daemon.md.

Every name loads its module on first use: a client (``connect``) loads the
verb table, the protocol's value types and ``http.client``, never the server
(``run_daemon``: trio, pyfuse3, hypercorn, pygit2), the in-memory backend or
what ``--from`` names (``load_source``).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
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
    from ._handover import hand_over_stdio as hand_over_stdio
    from ._load import LOADED_TAG as LOADED_TAG
    from ._load import load_source as load_source
    from ._options import START_TIMEOUT as START_TIMEOUT
    from ._options import DaemonOptions as DaemonOptions
    from ._responses import ClosingStreamingResponse as ClosingStreamingResponse
    from ._responses import EventStreamResponse as EventStreamResponse
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
    from ._server import run_daemon as run_daemon
    from ._sources import Source as Source
    from ._sources import parse_source as parse_source
    from ._spawn import daemon_command as daemon_command
    from ._spawn import start as start
    from ._sse import SSE_KEEPALIVE as SSE_KEEPALIVE
    from ._sse import SSE_MEDIA_TYPE as SSE_MEDIA_TYPE
    from ._sse import sse_frame as sse_frame
    from ._sse import sse_position as sse_position
    from ._verbs import VERBS as VERBS
    from ._verbs import Daemon as Daemon
    from ._verbs import DaemonVerbs as DaemonVerbs
    from ._verbs import FilesystemVerbs as FilesystemVerbs
    from ._verbs import InMemoryWorkspace as InMemoryWorkspace
    from ._verbs import Method as Method
    from ._verbs import Property as Property
    from ._verbs import Verb as Verb
    from ._verbs import WorkspaceVerbs as WorkspaceVerbs
    from ._wire import API_VERSION as API_VERSION

_EXPORTS = {
    "ConflictReport": "..fs",
    "MergeReport": "..fs",
    "PersistResult": "..fs",
    "PruneResult": "..fs",
    "TransferResult": "..fs",
    "canonical_mountpoint": "..posix",
    "RemoteFilesystem": "._client",
    "RemoteSnapshotView": "._client",
    "connect": "._client",
    "ForkInfo": "._fork_results",
    "hand_over_stdio": "._handover",
    "LOADED_TAG": "._load",
    "load_source": "._load",
    "DaemonOptions": "._options",
    "START_TIMEOUT": "._options",
    "ClosingStreamingResponse": "._responses",
    "EventStreamResponse": "._responses",
    "DaemonUnreachableError": "._runtime",
    "KnownMount": "._runtime",
    "MountRecord": "._runtime",
    "NoWorkspaceError": "._runtime",
    "RuntimePaths": "._runtime",
    "find_mount": "._runtime",
    "known_mounts": "._runtime",
    "remove_files": "._runtime",
    "running_mounts": "._runtime",
    "runtime_dir": "._runtime",
    "run_daemon": "._server",
    "Source": "._sources",
    "parse_source": "._sources",
    "SSE_KEEPALIVE": "._sse",
    "SSE_MEDIA_TYPE": "._sse",
    "sse_frame": "._sse",
    "sse_position": "._sse",
    "daemon_command": "._spawn",
    "start": "._spawn",
    "Daemon": "._verbs",
    "DaemonVerbs": "._verbs",
    "FilesystemVerbs": "._verbs",
    "InMemoryWorkspace": "._verbs",
    "Method": "._verbs",
    "Property": "._verbs",
    "VERBS": "._verbs",
    "Verb": "._verbs",
    "WorkspaceVerbs": "._verbs",
    "API_VERSION": "._wire",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
