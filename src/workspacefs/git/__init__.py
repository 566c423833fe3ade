"""Snapshots persisted to git (pygit2): incremental, exact, lazy, movable."""

from ._load import load as load
from ._persist import PersistedSnapshot as PersistedSnapshot
from ._persist import Progress as Progress
from ._persist import persist as persist
from ._remote import StoredSnapshot as StoredSnapshot
from ._remote import fetch as fetch
from ._remote import list_snapshots as list_snapshots
from ._remote import prune as prune
from ._remote import push as push
from ._repo import Identity as Identity
from ._repo import default_repository as default_repository
from ._repo import open_repository as open_repository
