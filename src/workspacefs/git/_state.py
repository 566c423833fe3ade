"""What a repository already holds of a workspace, so the next persist is incremental.

The state belongs to one workspace filesystem and one repository. It is kept
with the filesystem, weakly: it lives exactly as long as the workspace and
needs no explicit handle, so ``persist`` and ``load`` stay plain functions. It
holds the last persisted version, which keeps the file content keys it caches
true (see ``File.content_key``).
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Hashable
from dataclasses import dataclass, field

import pygit2

from ..fs import FilesystemSnapshot, InMemoryFilesystem
from ..tree import Version


@dataclass
class PersistState:
    """The ids one repository holds of one workspace's last persisted version.

    ``dir_trees``/``meta_trees``/``blobs`` are keyed by inode; a blob entry is
    (content key, blob id). ``commits`` maps a version's history key to its
    (snapshot commit, metadata commit), so later commits get their parents.
    ``record`` is ``version``'s snapshot record and ``persisted`` the ids of the
    snapshots the repository holds, so a commit's history stops where the
    repository's already covers it (``_history``).
    """

    version: Version | None = None
    record: FilesystemSnapshot | None = None
    persisted: set[uuid.UUID] = field(default_factory=set)
    dir_trees: dict[int, pygit2.Oid] = field(default_factory=dict)
    meta_trees: dict[int, pygit2.Oid] = field(default_factory=dict)
    blobs: dict[int, tuple[Hashable, pygit2.Oid]] = field(default_factory=dict)
    commits: dict[Hashable, tuple[pygit2.Oid, pygit2.Oid]] = field(default_factory=dict)


_states: weakref.WeakKeyDictionary[InMemoryFilesystem, dict[str, PersistState]] = (
    weakref.WeakKeyDictionary()
)
_states_lock = threading.Lock()


def state_for(fs: InMemoryFilesystem, repo_path: str) -> PersistState:
    """The incremental state of ``fs`` in the repository at ``repo_path`` (a real path)."""
    with _states_lock:
        return _states.setdefault(fs, {}).setdefault(repo_path, PersistState())
