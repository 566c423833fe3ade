"""Snapshots persisted to git (pygit2): incremental, exact, lazy, movable.

Besides persistence, the pieces other git-backed backends share: the ref
layout (``RefNamespace``), the commit signature (``Identity``) and raw tree
objects (modes, ``encode_tree``, ``walk_tree``).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ..fs import ConflictDetail as ConflictDetail
    from ..fs import ConflictKind as ConflictKind
    from ..fs import HeldMerge as HeldMerge
    from ..fs import MergeConflict as MergeConflict
    from ..fs import MergeResult as MergeResult
    from ..fs import MergeSide as MergeSide
    from ..fs import PersistedSnapshot as PersistedSnapshot
    from ._blobs import BlobContent as BlobContent
    from ._blobs import BlobStore as BlobStore
    from ._deferred import Hydration as Hydration
    from ._deferred import hydration as hydration
    from ._directories import data_directory as data_directory
    from ._directories import default_repository as default_repository
    from ._held import OpenMerge as OpenMerge
    from ._held import WorkspaceMerges as WorkspaceMerges
    from ._history import decode_history as decode_history
    from ._history import encode_history as encode_history
    from ._history import history_document as history_document
    from ._limits import DEFAULT_LOAD_LIMITS as DEFAULT_LOAD_LIMITS
    from ._limits import LoadLimits as LoadLimits
    from ._load import load as load
    from ._load import recorded_changes as recorded_changes
    from ._merge import find_base as find_base
    from ._merge import merge as merge
    from ._objects import EMPTY_TREE as EMPTY_TREE
    from ._objects import ESCAPE_PREFIX as ESCAPE_PREFIX
    from ._objects import MODE_EXECUTABLE as MODE_EXECUTABLE
    from ._objects import MODE_FILE as MODE_FILE
    from ._objects import MODE_LINK as MODE_LINK
    from ._objects import MODE_TREE as MODE_TREE
    from ._objects import decode_name as decode_name
    from ._objects import encode_name as encode_name
    from ._objects import encode_tree as encode_tree
    from ._objects import read_blob as read_blob
    from ._objects import read_tree as read_tree
    from ._objects import reserved_by_git as reserved_by_git
    from ._objects import tree_name as tree_name
    from ._objects import walk_tree as walk_tree
    from ._objects import workspace_name as workspace_name
    from ._objects import write_trees as write_trees
    from ._pack import DEFAULT_COMPRESSION as DEFAULT_COMPRESSION
    from ._pack import PackWriter as PackWriter
    from ._persist import Progress as Progress
    from ._persist import blob_pieces as blob_pieces
    from ._persist import check_persistable as check_persistable
    from ._persist import persist as persist
    from ._persist import verify_persisted as verify_persisted
    from ._refs import RefNamespace as RefNamespace
    from ._refs import branch_prefix as branch_prefix
    from ._refs import branch_ref as branch_ref
    from ._remote import StoredSnapshot as StoredSnapshot
    from ._remote import fetch as fetch
    from ._remote import list_snapshots as list_snapshots
    from ._remote import prune as prune
    from ._remote import push as push
    from ._repo import Identity as Identity
    from ._repo import create_repository as create_repository
    from ._repo import open_repository as open_repository
    from ._repo import remove_leftovers as remove_leftovers
    from ._repo import sync_writes as sync_writes

_EXPORTS = {
    "ConflictDetail": "..fs",
    "ConflictKind": "..fs",
    "HeldMerge": "..fs",
    "MergeConflict": "..fs",
    "MergeResult": "..fs",
    "MergeSide": "..fs",
    "PersistedSnapshot": "..fs",
    "BlobContent": "._blobs",
    "BlobStore": "._blobs",
    "Hydration": "._deferred",
    "hydration": "._deferred",
    "data_directory": "._directories",
    "default_repository": "._directories",
    "decode_history": "._history",
    "encode_history": "._history",
    "history_document": "._history",
    "OpenMerge": "._held",
    "WorkspaceMerges": "._held",
    "load": "._load",
    "recorded_changes": "._load",
    "find_base": "._merge",
    "merge": "._merge",
    "EMPTY_TREE": "._objects",
    "ESCAPE_PREFIX": "._objects",
    "MODE_EXECUTABLE": "._objects",
    "MODE_FILE": "._objects",
    "MODE_LINK": "._objects",
    "MODE_TREE": "._objects",
    "decode_name": "._objects",
    "encode_name": "._objects",
    "encode_tree": "._objects",
    "read_blob": "._objects",
    "read_tree": "._objects",
    "reserved_by_git": "._objects",
    "tree_name": "._objects",
    "walk_tree": "._objects",
    "workspace_name": "._objects",
    "write_trees": "._objects",
    "DEFAULT_COMPRESSION": "._pack",
    "PackWriter": "._pack",
    "Progress": "._persist",
    "blob_pieces": "._persist",
    "check_persistable": "._persist",
    "persist": "._persist",
    "verify_persisted": "._persist",
    "DEFAULT_LOAD_LIMITS": "._limits",
    "LoadLimits": "._limits",
    "RefNamespace": "._refs",
    "branch_prefix": "._refs",
    "branch_ref": "._refs",
    "StoredSnapshot": "._remote",
    "fetch": "._remote",
    "list_snapshots": "._remote",
    "prune": "._remote",
    "push": "._remote",
    "Identity": "._repo",
    "create_repository": "._repo",
    "open_repository": "._repo",
    "remove_leftovers": "._repo",
    "sync_writes": "._repo",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
