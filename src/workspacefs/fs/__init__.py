"""The ``Filesystem`` protocol, its value types, and the in-memory backend."""

from ..tree import CAUSE_VARIABLE as CAUSE_VARIABLE
from ..tree import Cause as Cause
from ..tree import ChangeKind as ChangeKind
from ..tree import PathChange as PathChange
from ..tree import attributed as attributed
from ..tree import current_cause as current_cause
from ._backend import Backend as Backend
from ._backend import Entry as Entry
from ._backend import Handle as Handle
from ._backend import Kind as Kind
from ._budget import MemoryUsage as MemoryUsage
from ._budget import available_memory as available_memory
from ._budget import default_memory_budget as default_memory_budget
from ._ceilings import MemoryCeiling as MemoryCeiling
from ._ceilings import memory_ceilings as memory_ceilings
from ._codec import as_row as as_row
from ._codec import from_json as from_json
from ._codec import to_json as to_json
from ._conditional import changed_paths as changed_paths
from ._conditional import changed_since as changed_since
from ._conditional import content_digest as content_digest
from ._descriptors import DIRECTORY_FLAGS as DIRECTORY_FLAGS
from ._descriptors import OpenDirectories as OpenDirectories
from ._descriptors import Walked as Walked
from ._descriptors import open_beneath as open_beneath
from ._descriptors import open_directory as open_directory
from ._descriptors import open_regular as open_regular
from ._descriptors import openat2_available as openat2_available
from ._descriptors import read_blocks as read_blocks
from ._descriptors import same_object as same_object
from ._descriptors import scan_directory as scan_directory
from ._descriptors import split_path as split_path
from ._descriptors import walk_directory as walk_directory
from ._directory import DirectoryBackend as DirectoryBackend
from ._directory import entry_of as entry_of
from ._entries import MAX_ENTRIES as MAX_ENTRIES
from ._entries import EntryKind as EntryKind
from ._entries import TreeEntry as TreeEntry
from ._entries import depth_first as depth_first
from ._entries import node_entry as node_entry
from ._entries import tree_entries as tree_entries
from ._entries import tree_key as tree_key
from ._frontend import BackendFilesystem as BackendFilesystem
from ._history import AttributedFilesystem as AttributedFilesystem
from ._history import BlameEntry as BlameEntry
from ._history import SnapshotChanges as SnapshotChanges
from ._history import change_kind as change_kind
from ._hydrate import SPECIAL_BITS as SPECIAL_BITS
from ._hydrate import HostMount as HostMount
from ._limits import DEFAULT_LIMITS as DEFAULT_LIMITS
from ._limits import Limits as Limits
from ._links import LinkReach as LinkReach
from ._links import leaves_as_written as leaves_as_written
from ._links import link_reach as link_reach
from ._memory import InMemoryFilesystem as InMemoryFilesystem
from ._outcomes import ConflictKind as ConflictKind
from ._outcomes import ConflictReport as ConflictReport
from ._outcomes import MergeConflict as MergeConflict
from ._outcomes import MergeReport as MergeReport
from ._outcomes import MergeResult as MergeResult
from ._outcomes import MergeSide as MergeSide
from ._outcomes import PersistedSnapshot as PersistedSnapshot
from ._outcomes import PersistResult as PersistResult
from ._patch import PATCH_TEXT_LIMIT as PATCH_TEXT_LIMIT
from ._patch import FilesystemSource as FilesystemSource
from ._patch import Patch as Patch
from ._patch import PatchSource as PatchSource
from ._patch import build_patch as build_patch
from ._patch import file_patch as file_patch
from ._patch import patch_lines as patch_lines
from ._paths import normalize as normalize_path
from ._paths import strip_mount_point as strip_mount_point
from ._protocol import Filesystem as Filesystem
from ._protocol import SnapshotableFilesystem as SnapshotableFilesystem
from ._recorded import FIRST_TIME_NS as FIRST_TIME_NS
from ._recorded import LAST_TIME_NS as LAST_TIME_NS
from ._recorded import MAX_FILE_SIZE as MAX_FILE_SIZE
from ._recorded import MAX_ID as MAX_ID
from ._recorded import recorded_id as recorded_id
from ._recorded import recorded_int as recorded_int
from ._recorded import recorded_time as recorded_time
from ._replace import TEMPORARY_PREFIX as TEMPORARY_PREFIX
from ._replace import clear_directory as clear_directory
from ._replace import copy_content as copy_content
from ._replace import make_directories as make_directories
from ._replace import remove_entry as remove_entry
from ._replace import replace_directory as replace_directory
from ._replace import replace_file as replace_file
from ._replace import replace_symlink as replace_symlink
from ._replace import set_attributes as set_attributes
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
from ._snapshots import PruneResult as PruneResult
from ._snapshots import SnapshotBytes as SnapshotBytes
from ._snapshots import SnapshotKind as SnapshotKind
from ._snapshots import SnapshotRef as SnapshotRef
from ._snapshots import SnapshotRetentionPolicy as SnapshotRetentionPolicy
from ._snapshots import SnapshotStore as SnapshotStore
from ._space import SnapshotSpace as SnapshotSpace
from ._space import SpaceShare as SpaceShare
from ._space import SpaceUsage as SpaceUsage
from ._space import WorkspaceSpace as WorkspaceSpace
from ._treefs import TreeFilesystem as TreeFilesystem

__all__ = [
    "CAUSE_VARIABLE",
    "DEFAULT_LIMITS",
    "DIRECTORY_FLAGS",
    "FIRST_TIME_NS",
    "LAST_TIME_NS",
    "MAX_ENTRIES",
    "MAX_FILE_SIZE",
    "MAX_ID",
    "PATCH_TEXT_LIMIT",
    "SPECIAL_BITS",
    "TEMPORARY_PREFIX",
    "AttributedFilesystem",
    "Backend",
    "BackendFilesystem",
    "BlameEntry",
    "Cause",
    "ChangeKind",
    "ConflictKind",
    "ConflictReport",
    "DirectoryBackend",
    "Entry",
    "EntryKind",
    "FileEntry",
    "FileStat",
    "Filesystem",
    "FilesystemDiff",
    "FilesystemSnapshot",
    "FilesystemSource",
    "GlobMatch",
    "GrepMatch",
    "Handle",
    "HostMount",
    "InMemoryFilesystem",
    "InMemorySnapshotStore",
    "Kind",
    "Limits",
    "LinkReach",
    "Location",
    "MemoryCeiling",
    "MemoryUsage",
    "MergeConflict",
    "MergeReport",
    "MergeResult",
    "MergeSide",
    "OpenDirectories",
    "Patch",
    "PatchSource",
    "PathChange",
    "PersistResult",
    "PersistedSnapshot",
    "PruneResult",
    "ReadBytesResult",
    "ReadResult",
    "SnapshotBytes",
    "SnapshotChanges",
    "SnapshotKind",
    "SnapshotRef",
    "SnapshotRetentionPolicy",
    "SnapshotSpace",
    "SnapshotStore",
    "SnapshotableFilesystem",
    "SpaceShare",
    "SpaceUsage",
    "TreeEntry",
    "TreeFilesystem",
    "Walked",
    "WorkspaceSpace",
    "WriteMode",
    "WriteResult",
    "as_row",
    "attributed",
    "available_memory",
    "build_patch",
    "change_kind",
    "changed_paths",
    "changed_since",
    "clear_directory",
    "content_digest",
    "copy_content",
    "current_cause",
    "default_memory_budget",
    "depth_first",
    "entry_of",
    "file_patch",
    "from_json",
    "leaves_as_written",
    "link_reach",
    "locate",
    "make_directories",
    "memory_ceilings",
    "node_entry",
    "normalize_path",
    "open_beneath",
    "open_directory",
    "open_regular",
    "openat2_available",
    "patch_lines",
    "read_blocks",
    "recorded_id",
    "recorded_int",
    "recorded_time",
    "remove_entry",
    "replace_directory",
    "replace_file",
    "replace_symlink",
    "same_object",
    "scan_directory",
    "set_attributes",
    "split_path",
    "strip_mount_point",
    "to_json",
    "tree_entries",
    "tree_key",
    "walk_directory",
]
