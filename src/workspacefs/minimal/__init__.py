"""Seed 003's shapes over workspacefs: the 8-method ``Filesystem``, its snapshot manager
and its sections (docs/seeds.md).

Seed 003 gives some names other meanings than the other specifications and
the main API: ``write`` returns an int, ``delete`` is recursive and returns a
count, ``FilesystemSnapshot`` is a manager of named ZIP snapshots, and
``WorkspaceSection`` a section class. The main classes keep their meanings;
seed 003 code imports from here and runs unchanged. Everything here adapts
the main API (``FilesystemView`` is a view over any backend,
``FilesystemSnapshot`` is ``archive.ArchiveSnapshots``), it reimplements nothing.
"""

from ._sections import FILESYSTEM_TOOLS as FILESYSTEM_TOOLS
from ._sections import FilesystemSection as FilesystemSection
from ._sections import PodmanSection as PodmanSection
from ._sections import VfsSection as VfsSection
from ._sections import WorkspaceSection as WorkspaceSection
from ._snapshots import DEFAULT_DIR as DEFAULT_DIR
from ._snapshots import FilesystemSnapshot as FilesystemSnapshot
from ._snapshots import SnapshotInfo as SnapshotInfo
from ._types import FileContent as FileContent
from ._types import FileEntry as FileEntry
from ._types import Filesystem as Filesystem
from ._types import GrepMatch as GrepMatch
from ._view import FilesystemView as FilesystemView
from ._view import HostBackend as HostBackend
from ._view import InMemoryBackend as InMemoryBackend
