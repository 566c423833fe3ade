"""Write-back: dirty file data written to blobs of the store's repository, so that it
becomes clean and may leave memory (``tree.Residency``).

A checkpoint makes every file it covers clean, but it folds the whole journal and
comes after 64 MiB of it; a workspace with a small memory budget needs its data
clean sooner. Write-back is the page cache's answer: it writes the data of the files
changed since it last ran, one blob each, into a pack of the store's repository,
syncs the pack, and only then marks each file clean (``File.back``). It writes no
record: the journal still holds those changes until the next checkpoint folds it,
and from now on journals a clean file as its blob id.

Which files: those at the inodes changed since write-back last ran, in the journal's
last frozen state, the state being journalled, every kept snapshot and every other
version still alive (frozen nodes never change, so they are written with no lock
held), and, when the caller holds the tree lock (a write that needs room), in the
live tree too: nothing changes a live node while that lock is held, except the file
being written, which is left as it is. Data that does not compress is stored as it
is (``compressible``): write-back is on the path of a write that needs room.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator

from ..tree import File, TreeView
from ._checkpoint import Blobs

log = logging.getLogger(__name__)


def candidates(
    inodes: Iterable[int], views: list[TreeView], writer: object
) -> Iterator[tuple[int, list[File]]]:
    """Each of ``inodes`` with the distinct files in memory it is in ``views`` (but
    ``writer``), in order; lazily: write-back may stop early."""
    seen: set[int] = set()
    for ino in inodes:
        found = []
        for view in views:
            node = view.get(ino)
            if not isinstance(node, File) or node is writer or id(node) in seen:
                continue
            seen.add(id(node))
            if node.resident() is not None:
                found.append(node)
        yield ino, found


def write_back(
    blobs: Blobs, found: Iterable[tuple[int, list[File]]], enough: int | None = None
) -> set[int]:
    """Write each file's data as a blob unless a blob holds it already (sparse files
    are skipped: a blob would hold their holes), inode by inode, until ``enough``
    bytes are written (None: all); sync the pack; then mark them clean. The inodes
    it went through (those after are still dirty).

    Raises:
        OSError: The store's disk is full or failing; nothing was marked clean.
    """
    written = 0
    done: set[int] = set()
    try:
        for ino, nodes in found:
            if enough is not None and written >= enough:
                break
            for node in nodes:
                if node.backing is None:
                    before = node.held
                    if blobs.blob_of(node) is not None:
                        written += before
                else:
                    blobs.blob_of(node)  # clean already: tracked again if it was not
            done.add(ino)
        blobs.seal()
    except BaseException:
        with contextlib.suppress(OSError):
            blobs.abort()
        raise
    blobs.remember()
    return done
