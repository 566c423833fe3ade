"""A workspace's store on disk: the journal (write-ahead log) of its live tree and
snapshots, and the durable workspace that writes and replays it.

See docs/durability.md.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._directory import StoreDirectory as StoreDirectory
    from ._durable import Durability as Durability
    from ._durable import DurableWorkspace as DurableWorkspace
    from ._durable import Recovery as Recovery
    from ._durable import open_workspace as open_workspace
    from ._interval import DEFAULT_INTERVAL as DEFAULT_INTERVAL
    from ._journal import Journal as Journal
    from ._journal import Reading as Reading
    from ._journal import cut_after as cut_after
    from ._journal import read_journal as read_journal
    from ._journal import segments as segments
    from ._names import StoreInfo as StoreInfo
    from ._names import check_name as check_name
    from ._names import describe as describe
    from ._names import discard as discard
    from ._names import holder as holder
    from ._names import named_stores as named_stores
    from ._names import new_name as new_name
    from ._names import store_of as store_of
    from ._names import workspaces_directory as workspaces_directory
    from ._records import FORMAT_VERSION as FORMAT_VERSION
    from ._records import Damage as Damage
    from ._records import Kind as Kind
    from ._records import Record as Record

_EXPORTS = {
    "StoreDirectory": "._directory",
    "Durability": "._durable",
    "DEFAULT_INTERVAL": "._interval",
    "DurableWorkspace": "._durable",
    "Recovery": "._durable",
    "open_workspace": "._durable",
    "Journal": "._journal",
    "Reading": "._journal",
    "cut_after": "._journal",
    "read_journal": "._journal",
    "segments": "._journal",
    "StoreInfo": "._names",
    "check_name": "._names",
    "describe": "._names",
    "discard": "._names",
    "holder": "._names",
    "named_stores": "._names",
    "new_name": "._names",
    "store_of": "._names",
    "workspaces_directory": "._names",
    "FORMAT_VERSION": "._records",
    "Damage": "._records",
    "Kind": "._records",
    "Record": "._records",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
