"""A workspace's store on disk: the journal (write-ahead log) of its live tree and
snapshots, and the durable workspace that writes and replays it.

See docs/durability.md.
"""

from ._directory import StoreDirectory as StoreDirectory
from ._durable import DEFAULT_INTERVAL as DEFAULT_INTERVAL
from ._durable import Durability as Durability
from ._durable import DurableWorkspace as DurableWorkspace
from ._durable import Recovery as Recovery
from ._durable import open_workspace as open_workspace
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
