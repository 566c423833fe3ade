"""Workspace archives (ZIP), named archive snapshots, and session checkpoints.

``export_archive``/``import_archive`` work on every backend; ``write_archive``/
``read_archive`` are the format itself, for backends writing their own adapters.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._backends import Archivable as Archivable
    from ._backends import ArchiveBackend as ArchiveBackend
    from ._backends import export_archive as export_archive
    from ._backends import import_archive as import_archive
    from ._format import read_archive as read_archive
    from ._format import write_archive as write_archive
    from ._session import FilesystemSnapshotRef as FilesystemSnapshotRef
    from ._session import JsonSession as JsonSession
    from ._session import Session as Session
    from ._session import SessionCheckpoints as SessionCheckpoints
    from ._session import dump_session as dump_session
    from ._session import load_session as load_session
    from ._snapshots import ArchiveSnapshots as ArchiveSnapshots
    from ._snapshots import SnapshotInfo as SnapshotInfo
    from ._types import DEFAULT_ARCHIVE_LIMITS as DEFAULT_ARCHIVE_LIMITS
    from ._types import ArchiveError as ArchiveError
    from ._types import ArchiveLimits as ArchiveLimits
    from ._types import ArchiveSource as ArchiveSource
    from ._types import ArchiveTarget as ArchiveTarget
    from ._types import Entry as Entry
    from ._types import Reader as Reader
    from ._types import file_content as file_content
    from ._types import symlink_target as symlink_target

_EXPORTS = {
    "Archivable": "._backends",
    "ArchiveBackend": "._backends",
    "export_archive": "._backends",
    "import_archive": "._backends",
    "read_archive": "._format",
    "write_archive": "._format",
    "FilesystemSnapshotRef": "._session",
    "JsonSession": "._session",
    "Session": "._session",
    "SessionCheckpoints": "._session",
    "dump_session": "._session",
    "load_session": "._session",
    "ArchiveSnapshots": "._snapshots",
    "SnapshotInfo": "._snapshots",
    "DEFAULT_ARCHIVE_LIMITS": "._types",
    "ArchiveError": "._types",
    "ArchiveLimits": "._types",
    "ArchiveSource": "._types",
    "ArchiveTarget": "._types",
    "Entry": "._types",
    "Reader": "._types",
    "file_content": "._types",
    "symlink_target": "._types",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
