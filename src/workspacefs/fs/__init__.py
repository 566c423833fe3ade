"""The ``Filesystem`` protocol, its value types, and the in-memory backend."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ..tree import CAUSE_VARIABLE as CAUSE_VARIABLE
    from ..tree import Cause as Cause
    from ..tree import ChangeKind as ChangeKind
    from ..tree import PathChange as PathChange
    from ..tree import attributed as attributed
    from ..tree import current_cause as current_cause
    from ..tree import redact_command as redact_command
    from ..tree import redact_text as redact_text
    from ._access import DEPENDS as DEPENDS
    from ._access import HIDDEN as HIDDEN
    from ._access import MAX_DENIALS as MAX_DENIALS
    from ._access import SHOWN as SHOWN
    from ._access import AccessRules as AccessRules
    from ._archiving import ArchiveVerbs as ArchiveVerbs
    from ._archiving import register_archive_verbs as register_archive_verbs
    from ._backend import Kind as Kind
    from ._budget import MemoryUsage as MemoryUsage
    from ._budget import available_memory as available_memory
    from ._budget import default_memory_budget as default_memory_budget
    from ._calls import CallTag as CallTag
    from ._calls import RecordedCall as RecordedCall
    from ._calls import RewindResult as RewindResult
    from ._calls import call_history as call_history
    from ._calls import call_tag as call_tag
    from ._calls import parse_call_tag as parse_call_tag
    from ._calls import recorded_calls as recorded_calls
    from ._calls import rewind as rewind
    from ._ceilings import MemoryCeiling as MemoryCeiling
    from ._ceilings import memory_ceilings as memory_ceilings
    from ._codec import as_row as as_row
    from ._codec import from_json as from_json
    from ._codec import to_json as to_json
    from ._conditional import changed_paths as changed_paths
    from ._conditional import changed_since as changed_since
    from ._conditional import content_digest as content_digest
    from ._conflict_text import conflict_lines as conflict_lines
    from ._conflict_text import held_lines as held_lines
    from ._conflicts import MAX_HUNK_BYTES as MAX_HUNK_BYTES
    from ._conflicts import MAX_HUNKS as MAX_HUNKS
    from ._conflicts import SIDES as SIDES
    from ._conflicts import ConflictDetail as ConflictDetail
    from ._conflicts import ConflictHunk as ConflictHunk
    from ._conflicts import ConflictSide as ConflictSide
    from ._conflicts import HeldState as HeldState
    from ._conflicts import Side as Side
    from ._conflicts import SideKind as SideKind
    from ._directory import DirectoryBackend as DirectoryBackend
    from ._entries import MAX_ENTRIES as MAX_ENTRIES
    from ._entries import EntryKind as EntryKind
    from ._entries import TreeEntry as TreeEntry
    from ._entries import depth_first as depth_first
    from ._entries import node_entry as node_entry
    from ._entries import tree_entries as tree_entries
    from ._entries import tree_key as tree_key
    from ._events import ChangeEvent as ChangeEvent
    from ._events import ChangeStream as ChangeStream
    from ._events import EventKind as EventKind
    from ._events import event_id as event_id
    from ._events import parse_event_id as parse_event_id
    from ._feed import EVENT_PATHS as FEED_EVENT_PATHS
    from ._feed import READ_EVENTS as FEED_READ_EVENTS
    from ._feed import RING_BYTES as FEED_RING_BYTES
    from ._feed import RING_EVENTS as FEED_RING_EVENTS
    from ._feed import ChangeFeed as ChangeFeed
    from ._feed import FeedRead as FeedRead
    from ._feed import Kept as Kept
    from ._feed import encode_event as encode_event
    from ._feed import event_filter as event_filter
    from ._feed import matching as event_matching
    from ._frontend import BackendFilesystem as BackendFilesystem
    from ._history import AttributedFilesystem as AttributedFilesystem
    from ._history import BlameEntry as BlameEntry
    from ._history import SnapshotChanges as SnapshotChanges
    from ._history import change_kind as change_kind
    from ._hydrate import SPECIAL_BITS as SPECIAL_BITS
    from ._hydrate import HostMount as HostMount
    from ._hydrate import sanitised_mode as sanitised_mode
    from ._limits import DEFAULT_LIMITS as DEFAULT_LIMITS
    from ._limits import Limits as Limits
    from ._links import LinkReach as LinkReach
    from ._links import link_reach as link_reach
    from ._memory import InMemoryFilesystem as InMemoryFilesystem
    from ._outcomes import ConflictKind as ConflictKind
    from ._outcomes import ConflictReport as ConflictReport
    from ._outcomes import HeldMerge as HeldMerge
    from ._outcomes import MergeConflict as MergeConflict
    from ._outcomes import MergeReport as MergeReport
    from ._outcomes import MergeResult as MergeResult
    from ._outcomes import MergeSide as MergeSide
    from ._outcomes import PersistedSnapshot as PersistedSnapshot
    from ._outcomes import PersistResult as PersistResult
    from ._outcomes import RefRefused as RefRefused
    from ._outcomes import RefWritten as RefWritten
    from ._outcomes import TransferResult as TransferResult
    from ._patch import PATCH_LINE_LIMIT as PATCH_LINE_LIMIT
    from ._patch import FilesystemSource as FilesystemSource
    from ._patch import Patch as Patch
    from ._patch import PatchSource as PatchSource
    from ._patch import build_patch as build_patch
    from ._patch import file_patch as file_patch
    from ._patch import is_binary as is_binary
    from ._patch import patch_lines as patch_lines
    from ._paths import normalize as normalize_path
    from ._paths import normalize_mount_point as normalize_mount_point
    from ._patterns import Matcher as Matcher
    from ._protocol import Filesystem as Filesystem
    from ._protocol import SnapshotableFilesystem as SnapshotableFilesystem
    from ._recorded import FIRST_TIME_NS as FIRST_TIME_NS
    from ._recorded import LAST_TIME_NS as LAST_TIME_NS
    from ._recorded import MAX_FILE_SIZE as MAX_FILE_SIZE
    from ._recorded import recorded_id as recorded_id
    from ._recorded import recorded_int as recorded_int
    from ._recorded import recorded_time as recorded_time
    from ._resolve import locate as locate
    from ._results import FileEntry as FileEntry
    from ._results import FileStat as FileStat
    from ._results import GlobMatch as GlobMatch
    from ._results import GrepMatch as GrepMatch
    from ._results import ReadBytesResult as ReadBytesResult
    from ._results import ReadResult as ReadResult
    from ._results import WriteMode as WriteMode
    from ._results import WriteResult as WriteResult
    from ._rules import DeclaredRules as DeclaredRules
    from ._rules import Denial as Denial
    from ._rules import Rule as Rule
    from ._rules import RuleMode as RuleMode
    from ._rules import RuleScope as RuleScope
    from ._rules import byte_count as byte_count
    from ._snapshot_names import MAX_NAME as MAX_NAME
    from ._snapshot_names import MIN_ID_PREFIX as MIN_ID_PREFIX
    from ._snapshot_names import SHORT_ID_LENGTH as SHORT_ID_LENGTH
    from ._snapshot_names import SnapshotSelector as SnapshotSelector
    from ._snapshot_names import check_name as check_name
    from ._snapshot_names import check_tag as check_tag
    from ._snapshot_names import find_snapshot as find_snapshot
    from ._snapshot_names import short_id as short_id
    from ._snapshot_names import snapshot_label as snapshot_label
    from ._snapshots import FilesystemDiff as FilesystemDiff
    from ._snapshots import FilesystemSnapshot as FilesystemSnapshot
    from ._snapshots import InMemorySnapshotStore as InMemorySnapshotStore
    from ._snapshots import PruneResult as PruneResult
    from ._snapshots import SnapshotBytes as SnapshotBytes
    from ._snapshots import SnapshotKind as SnapshotKind
    from ._snapshots import SnapshotObserver as SnapshotObserver
    from ._snapshots import SnapshotRef as SnapshotRef
    from ._snapshots import SnapshotRetentionPolicy as SnapshotRetentionPolicy
    from ._snapshots import SnapshotStore as SnapshotStore
    from ._space import SnapshotSpace as SnapshotSpace
    from ._space import SpaceShare as SpaceShare
    from ._space import SpaceUsage as SpaceUsage
    from ._space import WorkspaceSpace as WorkspaceSpace
    from ._spellings import either as either
    from ._treefs import TreeFilesystem as TreeFilesystem
    from ._trials import OUTPUT_TAIL as OUTPUT_TAIL
    from ._trials import Attempt as Attempt
    from ._trials import AttemptState as AttemptState
    from ._trials import CommandOutcome as CommandOutcome
    from ._trials import Trial as Trial
    from ._trials import TrialState as TrialState
    from ._trials import output_tail as output_tail
    from ._trials import score_value as score_value

__all__ = [
    "CAUSE_VARIABLE",
    "DEFAULT_LIMITS",
    "DEPENDS",
    "FEED_EVENT_PATHS",
    "FEED_READ_EVENTS",
    "FEED_RING_BYTES",
    "FEED_RING_EVENTS",
    "FIRST_TIME_NS",
    "HIDDEN",
    "LAST_TIME_NS",
    "MAX_DENIALS",
    "MAX_ENTRIES",
    "MAX_FILE_SIZE",
    "MAX_HUNKS",
    "MAX_HUNK_BYTES",
    "MAX_NAME",
    "MIN_ID_PREFIX",
    "OUTPUT_TAIL",
    "PATCH_LINE_LIMIT",
    "SHORT_ID_LENGTH",
    "SHOWN",
    "SIDES",
    "SPECIAL_BITS",
    "AccessRules",
    "ArchiveVerbs",
    "Attempt",
    "AttemptState",
    "AttributedFilesystem",
    "BackendFilesystem",
    "BlameEntry",
    "CallTag",
    "Cause",
    "ChangeEvent",
    "ChangeFeed",
    "ChangeKind",
    "ChangeStream",
    "CommandOutcome",
    "ConflictDetail",
    "ConflictHunk",
    "ConflictKind",
    "ConflictReport",
    "ConflictSide",
    "DeclaredRules",
    "Denial",
    "DirectoryBackend",
    "EntryKind",
    "EventKind",
    "FeedRead",
    "FileEntry",
    "FileStat",
    "Filesystem",
    "FilesystemDiff",
    "FilesystemSnapshot",
    "FilesystemSource",
    "GlobMatch",
    "GrepMatch",
    "HeldMerge",
    "HeldState",
    "HostMount",
    "InMemoryFilesystem",
    "InMemorySnapshotStore",
    "Kept",
    "Kind",
    "Limits",
    "LinkReach",
    "Matcher",
    "MemoryCeiling",
    "MemoryUsage",
    "MergeConflict",
    "MergeReport",
    "MergeResult",
    "MergeSide",
    "Patch",
    "PatchSource",
    "PathChange",
    "PersistResult",
    "PersistedSnapshot",
    "PruneResult",
    "ReadBytesResult",
    "ReadResult",
    "RecordedCall",
    "RefRefused",
    "RefWritten",
    "RewindResult",
    "Rule",
    "RuleMode",
    "RuleScope",
    "Side",
    "SideKind",
    "SnapshotBytes",
    "SnapshotChanges",
    "SnapshotKind",
    "SnapshotObserver",
    "SnapshotRef",
    "SnapshotRetentionPolicy",
    "SnapshotSelector",
    "SnapshotSpace",
    "SnapshotStore",
    "SnapshotableFilesystem",
    "SpaceShare",
    "SpaceUsage",
    "TransferResult",
    "TreeEntry",
    "TreeFilesystem",
    "Trial",
    "TrialState",
    "WorkspaceSpace",
    "WriteMode",
    "WriteResult",
    "as_row",
    "attributed",
    "available_memory",
    "build_patch",
    "byte_count",
    "call_history",
    "call_tag",
    "change_kind",
    "changed_paths",
    "changed_since",
    "check_name",
    "check_tag",
    "conflict_lines",
    "content_digest",
    "current_cause",
    "default_memory_budget",
    "depth_first",
    "either",
    "encode_event",
    "event_filter",
    "event_id",
    "event_matching",
    "file_patch",
    "find_snapshot",
    "from_json",
    "held_lines",
    "is_binary",
    "link_reach",
    "locate",
    "memory_ceilings",
    "node_entry",
    "normalize_mount_point",
    "normalize_path",
    "output_tail",
    "parse_call_tag",
    "parse_event_id",
    "patch_lines",
    "recorded_calls",
    "recorded_id",
    "recorded_int",
    "recorded_time",
    "redact_command",
    "redact_text",
    "register_archive_verbs",
    "rewind",
    "sanitised_mode",
    "score_value",
    "short_id",
    "snapshot_label",
    "to_json",
    "tree_entries",
    "tree_key",
]

_EXPORTS = {
    "CAUSE_VARIABLE": "..tree",
    "Cause": "..tree",
    "ChangeKind": "..tree",
    "PathChange": "..tree",
    "attributed": "..tree",
    "current_cause": "..tree",
    "redact_command": "..tree",
    "redact_text": "..tree",
    "ArchiveVerbs": "._archiving",
    "register_archive_verbs": "._archiving",
    "Kind": "._backend",
    "MemoryUsage": "._budget",
    "available_memory": "._budget",
    "CallTag": "._calls",
    "RecordedCall": "._calls",
    "RewindResult": "._calls",
    "call_history": "._calls",
    "call_tag": "._calls",
    "parse_call_tag": "._calls",
    "recorded_calls": "._calls",
    "rewind": "._calls",
    "default_memory_budget": "._budget",
    "MemoryCeiling": "._ceilings",
    "memory_ceilings": "._ceilings",
    "as_row": "._codec",
    "from_json": "._codec",
    "to_json": "._codec",
    "changed_paths": "._conditional",
    "changed_since": "._conditional",
    "content_digest": "._conditional",
    "DirectoryBackend": "._directory",
    "MAX_ENTRIES": "._entries",
    "EntryKind": "._entries",
    "TreeEntry": "._entries",
    "depth_first": "._entries",
    "node_entry": "._entries",
    "tree_entries": "._entries",
    "tree_key": "._entries",
    "BackendFilesystem": "._frontend",
    "AttributedFilesystem": "._history",
    "BlameEntry": "._history",
    "SnapshotChanges": "._history",
    "change_kind": "._history",
    "SPECIAL_BITS": "._hydrate",
    "HostMount": "._hydrate",
    "sanitised_mode": "._hydrate",
    "DEFAULT_LIMITS": "._limits",
    "Limits": "._limits",
    "LinkReach": "._links",
    "link_reach": "._links",
    "InMemoryFilesystem": "._memory",
    "conflict_lines": "._conflict_text",
    "held_lines": "._conflict_text",
    "MAX_HUNK_BYTES": "._conflicts",
    "MAX_HUNKS": "._conflicts",
    "SIDES": "._conflicts",
    "ConflictDetail": "._conflicts",
    "ConflictHunk": "._conflicts",
    "ConflictSide": "._conflicts",
    "HeldState": "._conflicts",
    "Side": "._conflicts",
    "SideKind": "._conflicts",
    "ConflictKind": "._outcomes",
    "HeldMerge": "._outcomes",
    "ConflictReport": "._outcomes",
    "MergeConflict": "._outcomes",
    "MergeReport": "._outcomes",
    "MergeResult": "._outcomes",
    "MergeSide": "._outcomes",
    "PersistedSnapshot": "._outcomes",
    "PersistResult": "._outcomes",
    "RefRefused": "._outcomes",
    "RefWritten": "._outcomes",
    "TransferResult": "._outcomes",
    "PATCH_LINE_LIMIT": "._patch",
    "FilesystemSource": "._patch",
    "Patch": "._patch",
    "PatchSource": "._patch",
    "build_patch": "._patch",
    "file_patch": "._patch",
    "is_binary": "._patch",
    "patch_lines": "._patch",
    "normalize_path": "._paths:normalize",
    "normalize_mount_point": "._paths",
    "Filesystem": "._protocol",
    "SnapshotableFilesystem": "._protocol",
    "FIRST_TIME_NS": "._recorded",
    "LAST_TIME_NS": "._recorded",
    "MAX_FILE_SIZE": "._recorded",
    "recorded_id": "._recorded",
    "recorded_int": "._recorded",
    "recorded_time": "._recorded",
    "locate": "._resolve",
    "FileEntry": "._results",
    "FileStat": "._results",
    "GlobMatch": "._results",
    "GrepMatch": "._results",
    "ReadBytesResult": "._results",
    "ReadResult": "._results",
    "WriteMode": "._results",
    "WriteResult": "._results",
    "DEPENDS": "._access",
    "HIDDEN": "._access",
    "MAX_DENIALS": "._access",
    "SHOWN": "._access",
    "AccessRules": "._access",
    "DeclaredRules": "._rules",
    "Denial": "._rules",
    "Rule": "._rules",
    "byte_count": "._rules",
    "RuleMode": "._rules",
    "RuleScope": "._rules",
    "MAX_NAME": "._snapshot_names",
    "MIN_ID_PREFIX": "._snapshot_names",
    "SHORT_ID_LENGTH": "._snapshot_names",
    "SnapshotSelector": "._snapshot_names",
    "check_name": "._snapshot_names",
    "check_tag": "._snapshot_names",
    "find_snapshot": "._snapshot_names",
    "short_id": "._snapshot_names",
    "snapshot_label": "._snapshot_names",
    "FilesystemDiff": "._snapshots",
    "FilesystemSnapshot": "._snapshots",
    "InMemorySnapshotStore": "._snapshots",
    "PruneResult": "._snapshots",
    "SnapshotBytes": "._snapshots",
    "SnapshotKind": "._snapshots",
    "SnapshotObserver": "._snapshots",
    "SnapshotRef": "._snapshots",
    "SnapshotRetentionPolicy": "._snapshots",
    "SnapshotStore": "._snapshots",
    "SnapshotSpace": "._space",
    "SpaceShare": "._space",
    "SpaceUsage": "._space",
    "WorkspaceSpace": "._space",
    "either": "._spellings",
    "TreeFilesystem": "._treefs",
    "OUTPUT_TAIL": "._trials",
    "Attempt": "._trials",
    "AttemptState": "._trials",
    "CommandOutcome": "._trials",
    "Trial": "._trials",
    "TrialState": "._trials",
    "output_tail": "._trials",
    "score_value": "._trials",
    "ChangeEvent": "._events",
    "ChangeStream": "._events",
    "EventKind": "._events",
    "event_id": "._events",
    "parse_event_id": "._events",
    "FEED_EVENT_PATHS": "._feed:EVENT_PATHS",
    "FEED_READ_EVENTS": "._feed:READ_EVENTS",
    "FEED_RING_BYTES": "._feed:RING_BYTES",
    "FEED_RING_EVENTS": "._feed:RING_EVENTS",
    "ChangeFeed": "._feed",
    "FeedRead": "._feed",
    "Kept": "._feed",
    "encode_event": "._feed",
    "event_filter": "._feed",
    "event_matching": "._feed:matching",
    "Matcher": "._patterns",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
