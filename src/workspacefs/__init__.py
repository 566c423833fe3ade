"""workspacefs: a copy-on-write workspace filesystem for AI agents.

One in-memory tree with O(1) snapshots, reachable through the Python
``Filesystem`` protocol (and, with ``workspacefs.fuse``, a real mount).
"""

from ._errors import AccessDeniedError as AccessDeniedError
from ._errors import AlreadyExistsError as AlreadyExistsError
from ._errors import BackendUnavailableError as BackendUnavailableError
from ._errors import BusyError as BusyError
from ._errors import ContentChangedError as ContentChangedError
from ._errors import CrossDeviceError as CrossDeviceError
from ._errors import DirectoryNotEmptyError as DirectoryNotEmptyError
from ._errors import FsError as FsError
from ._errors import InvalidArgumentError as InvalidArgumentError
from ._errors import InvalidContentError as InvalidContentError
from ._errors import InvalidPathError as InvalidPathError
from ._errors import IsADirectoryFsError as IsADirectoryFsError
from ._errors import LimitExceededError as LimitExceededError
from ._errors import MountedInsideError as MountedInsideError
from ._errors import MountLostError as MountLostError
from ._errors import NameTooLongError as NameTooLongError
from ._errors import NoAttributeError as NoAttributeError
from ._errors import NoSpaceError as NoSpaceError
from ._errors import NotADirectoryFsError as NotADirectoryFsError
from ._errors import NotFoundError as NotFoundError
from ._errors import NotPermittedError as NotPermittedError
from ._errors import NotSupportedError as NotSupportedError
from ._errors import PathEscapeError as PathEscapeError
from ._errors import QuotaExceededError as QuotaExceededError
from ._errors import ReadOnlyError as ReadOnlyError
from ._errors import ReadOnlyRestoreError as ReadOnlyRestoreError
from ._errors import SnapshotCreationError as SnapshotCreationError
from ._errors import SnapshotError as SnapshotError
from ._errors import SnapshotIncompatibleError as SnapshotIncompatibleError
from ._errors import SnapshotNotFoundError as SnapshotNotFoundError
from ._errors import SnapshotRestoreError as SnapshotRestoreError
from ._errors import StoreDamagedError as StoreDamagedError
from ._errors import StoreError as StoreError
from ._errors import TooManyLinksError as TooManyLinksError
from ._errors import UnresolvedConflictsError as UnresolvedConflictsError
from ._lazy import lazy_exports

# Not typing's TYPE_CHECKING: importing typing would cost more than this package does.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import archive as archive
    from . import daemon as daemon
    from . import fs as fs
    from . import fuse as fuse
    from . import git as git
    from . import host as host
    from . import posix as posix
    from . import tree as tree
    from ._version import __version__ as __version__
    from .archive import ArchiveError as ArchiveError
    from .archive import ArchiveSnapshots as ArchiveSnapshots
    from .archive import FilesystemSnapshotRef as FilesystemSnapshotRef
    from .archive import JsonSession as JsonSession
    from .archive import SessionCheckpoints as SessionCheckpoints
    from .archive import SnapshotInfo as SnapshotInfo
    from .archive import dump_session as dump_session
    from .archive import load_session as load_session
    from .daemon import RemoteFilesystem as RemoteFilesystem
    from .daemon import connect as connect
    from .fs import AccessRules as AccessRules
    from .fs import AttributedFilesystem as AttributedFilesystem
    from .fs import BlameEntry as BlameEntry
    from .fs import Cause as Cause
    from .fs import ChangeEvent as ChangeEvent
    from .fs import ChangeStream as ChangeStream
    from .fs import Denial as Denial
    from .fs import FileEntry as FileEntry
    from .fs import FileStat as FileStat
    from .fs import Filesystem as Filesystem
    from .fs import FilesystemDiff as FilesystemDiff
    from .fs import FilesystemSnapshot as FilesystemSnapshot
    from .fs import GlobMatch as GlobMatch
    from .fs import GrepMatch as GrepMatch
    from .fs import HostMount as HostMount
    from .fs import InMemoryFilesystem as InMemoryFilesystem
    from .fs import InMemorySnapshotStore as InMemorySnapshotStore
    from .fs import Limits as Limits
    from .fs import MemoryUsage as MemoryUsage
    from .fs import PathChange as PathChange
    from .fs import PruneResult as PruneResult
    from .fs import ReadBytesResult as ReadBytesResult
    from .fs import ReadResult as ReadResult
    from .fs import Rule as Rule
    from .fs import SnapshotableFilesystem as SnapshotableFilesystem
    from .fs import SnapshotChanges as SnapshotChanges
    from .fs import SnapshotRef as SnapshotRef
    from .fs import SnapshotRetentionPolicy as SnapshotRetentionPolicy
    from .fs import SnapshotSpace as SnapshotSpace
    from .fs import SnapshotStore as SnapshotStore
    from .fs import SpaceShare as SpaceShare
    from .fs import SpaceUsage as SpaceUsage
    from .fs import WorkspaceSpace as WorkspaceSpace
    from .fs import WriteMode as WriteMode
    from .fs import WriteResult as WriteResult
    from .fs import attributed as attributed
    from .fuse import CachePolicy as CachePolicy
    from .fuse import Mount as Mount
    from .fuse import mount as mount
    from .host import HostFilesystem as HostFilesystem

# Everything but the errors loads on first use (PEP 562): a program that needs one
# layer pays for it alone, and a command that reaches a daemon pays for none of the
# tree, pygit2, trio or pyfuse3. The block above gives type checkers the same names.
_EXPORTS = {
    "archive": ".archive",
    "daemon": ".daemon",
    "fs": ".fs",
    "fuse": ".fuse",
    "git": ".git",
    "host": ".host",
    "posix": ".posix",
    "tree": ".tree",
    "__version__": "._version",
    "ArchiveError": ".archive",
    "ArchiveSnapshots": ".archive",
    "FilesystemSnapshotRef": ".archive",
    "JsonSession": ".archive",
    "SessionCheckpoints": ".archive",
    "SnapshotInfo": ".archive",
    "dump_session": ".archive",
    "load_session": ".archive",
    "RemoteFilesystem": ".daemon",
    "connect": ".daemon",
    "AccessRules": ".fs",
    "AttributedFilesystem": ".fs",
    "BlameEntry": ".fs",
    "Cause": ".fs",
    "ChangeEvent": ".fs",
    "ChangeStream": ".fs",
    "Denial": ".fs",
    "FileEntry": ".fs",
    "FileStat": ".fs",
    "Filesystem": ".fs",
    "FilesystemDiff": ".fs",
    "FilesystemSnapshot": ".fs",
    "GlobMatch": ".fs",
    "GrepMatch": ".fs",
    "HostMount": ".fs",
    "InMemoryFilesystem": ".fs",
    "InMemorySnapshotStore": ".fs",
    "Limits": ".fs",
    "MemoryUsage": ".fs",
    "PathChange": ".fs",
    "PruneResult": ".fs",
    "ReadBytesResult": ".fs",
    "ReadResult": ".fs",
    "Rule": ".fs",
    "SnapshotChanges": ".fs",
    "SnapshotRef": ".fs",
    "SnapshotRetentionPolicy": ".fs",
    "SnapshotSpace": ".fs",
    "SnapshotStore": ".fs",
    "SnapshotableFilesystem": ".fs",
    "SpaceShare": ".fs",
    "SpaceUsage": ".fs",
    "WorkspaceSpace": ".fs",
    "WriteMode": ".fs",
    "WriteResult": ".fs",
    "attributed": ".fs",
    "CachePolicy": ".fuse",
    "Mount": ".fuse",
    "mount": ".fuse",
    "HostFilesystem": ".host",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
