"""The ``Filesystem`` protocol, its value types, and the in-memory backend."""

from ._backend import Backend as Backend
from ._backend import Entry as Entry
from ._backend import Handle as Handle
from ._backend import Kind as Kind
from ._budget import MemoryUsage as MemoryUsage
from ._budget import available_memory as available_memory
from ._budget import default_memory_budget as default_memory_budget
from ._frontend import BackendFilesystem as BackendFilesystem
from ._hydrate import HostMount as HostMount
from ._limits import DEFAULT_LIMITS as DEFAULT_LIMITS
from ._limits import Limits as Limits
from ._memory import InMemoryFilesystem as InMemoryFilesystem
from ._paths import normalize as normalize_path
from ._paths import strip_mount_point as strip_mount_point
from ._protocol import Filesystem as Filesystem
from ._protocol import SnapshotableFilesystem as SnapshotableFilesystem
from ._resolve import Location as Location
from ._resolve import locate as locate
from ._results import FileEntry as FileEntry
from ._results import FileStat as FileStat
from ._results import GlobMatch as GlobMatch
from ._results import GrepMatch as GrepMatch
from ._results import ReadBytesResult as ReadBytesResult
from ._results import ReadResult as ReadResult
from ._results import WriteMode as WriteMode
from ._results import WriteResult as WriteResult
from ._snapshots import FilesystemDiff as FilesystemDiff
from ._snapshots import FilesystemSnapshot as FilesystemSnapshot
from ._snapshots import InMemorySnapshotStore as InMemorySnapshotStore
from ._snapshots import SnapshotKind as SnapshotKind
from ._snapshots import SnapshotRef as SnapshotRef
from ._snapshots import SnapshotRetentionPolicy as SnapshotRetentionPolicy
from ._snapshots import SnapshotStore as SnapshotStore
from ._treefs import TreeFilesystem as TreeFilesystem

__all__ = [
    "DEFAULT_LIMITS",
    "Backend",
    "BackendFilesystem",
    "Entry",
    "FileEntry",
    "FileStat",
    "Filesystem",
    "FilesystemDiff",
    "FilesystemSnapshot",
    "GlobMatch",
    "GrepMatch",
    "Handle",
    "HostMount",
    "InMemoryFilesystem",
    "InMemorySnapshotStore",
    "Kind",
    "Limits",
    "Location",
    "MemoryUsage",
    "ReadBytesResult",
    "ReadResult",
    "SnapshotKind",
    "SnapshotRef",
    "SnapshotRetentionPolicy",
    "SnapshotStore",
    "SnapshotableFilesystem",
    "TreeFilesystem",
    "WriteMode",
    "WriteResult",
    "available_memory",
    "default_memory_budget",
    "locate",
    "normalize_path",
    "strip_mount_point",
]
