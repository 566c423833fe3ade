"""The pure copy-on-write inode tree: no I/O, no trio, no pyfuse3, no pygit2."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._blame import ChangeKind as ChangeKind
    from ._blame import PathChange as PathChange
    from ._blame import attributed_changes as attributed_changes
    from ._blame import attributed_diff as attributed_diff
    from ._blame import empty_view as empty_view
    from ._blame import path_change as path_change
    from ._budget import MemoryBudget as MemoryBudget
    from ._causes import CAUSE_VARIABLE as CAUSE_VARIABLE
    from ._causes import Cause as Cause
    from ._causes import CauseKind as CauseKind
    from ._causes import attributed as attributed
    from ._causes import current_cause as current_cause
    from ._causes import set_cause as set_cause
    from ._chunks import CHUNK_SIZE as CHUNK_SIZE
    from ._chunks import Chunk as Chunk
    from ._collector import collector_paused as collector_paused
    from ._collector import thaw as thaw
    from ._diff import DiffSide as DiffSide
    from ._diff import PathDiff as PathDiff
    from ._diff import changed_entries as changed_entries
    from ._diff import diff_versions as diff_versions
    from ._diff import same_entry as same_entry
    from ._journal import Journal as Journal
    from ._journal import Observer as Observer
    from ._journal import Subscriber as Subscriber
    from ._journal import TreeLock as TreeLock
    from ._lineage import Lineage as Lineage
    from ._lineage import Span as Span
    from ._nodes import Absent as Absent
    from ._nodes import Content as Content
    from ._nodes import Directory as Directory
    from ._nodes import File as File
    from ._nodes import Node as Node
    from ._nodes import Special as Special
    from ._nodes import Symlink as Symlink
    from ._redact import MASK as MASK
    from ._redact import redact_command as redact_command
    from ._redact import redact_text as redact_text
    from ._redact import secret_name as secret_name
    from ._registry import WeakRegistry as WeakRegistry
    from ._residency import Residency as Residency
    from ._space import Holding as Holding
    from ._space import Shares as Shares
    from ._space import shares as shares
    from ._tree import FALLOC_FL_KEEP_SIZE as FALLOC_FL_KEEP_SIZE
    from ._tree import FALLOC_FL_PUNCH_HOLE as FALLOC_FL_PUNCH_HOLE
    from ._tree import FALLOC_FL_ZERO_RANGE as FALLOC_FL_ZERO_RANGE
    from ._tree import NAME_MAX as NAME_MAX
    from ._tree import PATH_MAX as PATH_MAX
    from ._tree import RENAME_EXCHANGE as RENAME_EXCHANGE
    from ._tree import RENAME_NOREPLACE as RENAME_NOREPLACE
    from ._tree import XATTR_CREATE as XATTR_CREATE
    from ._tree import XATTR_REPLACE as XATTR_REPLACE
    from ._tree import Tree as Tree
    from ._tree import Unlisted as Unlisted
    from ._tree import validate_name as validate_name
    from ._turns import make_way as make_way
    from ._turns import mount_busy as mount_busy
    from ._turns import mount_request as mount_request
    from ._turns import wait_idle as wait_idle
    from ._version import Version as Version
    from ._view import ROOT_INO as ROOT_INO
    from ._view import TreeView as TreeView

_EXPORTS = {
    "ChangeKind": "._blame",
    "PathChange": "._blame",
    "attributed_changes": "._blame",
    "attributed_diff": "._blame",
    "empty_view": "._blame",
    "path_change": "._blame",
    "MemoryBudget": "._budget",
    "CAUSE_VARIABLE": "._causes",
    "Cause": "._causes",
    "CauseKind": "._causes",
    "attributed": "._causes",
    "current_cause": "._causes",
    "set_cause": "._causes",
    "CHUNK_SIZE": "._chunks",
    "Chunk": "._chunks",
    "collector_paused": "._collector",
    "thaw": "._collector",
    "PathDiff": "._diff",
    "DiffSide": "._diff",
    "changed_entries": "._diff",
    "diff_versions": "._diff",
    "same_entry": "._diff",
    "Journal": "._journal",
    "Observer": "._journal",
    "Subscriber": "._journal",
    "TreeLock": "._journal",
    "Lineage": "._lineage",
    "Span": "._lineage",
    "Absent": "._nodes",
    "Content": "._nodes",
    "Directory": "._nodes",
    "File": "._nodes",
    "Node": "._nodes",
    "Special": "._nodes",
    "Symlink": "._nodes",
    "MASK": "._redact",
    "redact_command": "._redact",
    "redact_text": "._redact",
    "secret_name": "._redact",
    "WeakRegistry": "._registry",
    "Residency": "._residency",
    "Holding": "._space",
    "Shares": "._space",
    "shares": "._space",
    "make_way": "._turns",
    "mount_busy": "._turns",
    "mount_request": "._turns",
    "wait_idle": "._turns",
    "FALLOC_FL_KEEP_SIZE": "._tree",
    "FALLOC_FL_PUNCH_HOLE": "._tree",
    "FALLOC_FL_ZERO_RANGE": "._tree",
    "NAME_MAX": "._tree",
    "PATH_MAX": "._tree",
    "RENAME_EXCHANGE": "._tree",
    "RENAME_NOREPLACE": "._tree",
    "XATTR_CREATE": "._tree",
    "XATTR_REPLACE": "._tree",
    "Tree": "._tree",
    "Unlisted": "._tree",
    "validate_name": "._tree",
    "Version": "._version",
    "ROOT_INO": "._view",
    "TreeView": "._view",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
