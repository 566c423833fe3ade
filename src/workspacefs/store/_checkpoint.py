"""Checkpoints: the journal folded into a short record of what it built, with file
contents in the store's git objects, so that opening the store replays little and
loads file contents only when they are read.

A checkpoint covering the journal through sequence number ``S`` is a directory
``checkpoints/<S>/`` of segment files in the journal's format (``_journal``),
written by the same code: one group of ``CHANGES`` records holding the oldest kept
snapshot's state whole, its ``SNAPSHOT`` record, then for each later snapshot the
inodes that differ from the one before and its ``SNAPSHOT`` record, then the live
state as of ``S``, and last a ``CHECKPOINT`` record naming ``S``. Files are
written as git blob ids (``BLOB`` entries) in ``git/``, the store's repository, the
blobs themselves in one pack per checkpoint; a file already there (loaded from
git, or unchanged since the last checkpoint) costs its id only, so a checkpoint
writes O(changed bytes). A sparse file is written as its chunks (a git blob holds
no holes). Opening replays the newest complete checkpoint, then the journal's
records after ``S``.

Order on disk: the pack (synced), then the checkpoint's segments (synced), renamed
from ``.new-<S>`` into place (the directory synced), and only then the journal
segments it covers and older checkpoints are removed. A crash at any point leaves
either the old checkpoint and the whole journal, or the new one.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import pygit2
from pygit2.enums import ObjectType
from zlib_ng import zlib_ng

from .. import git
from .._errors import StoreDamagedError
from ..tree import File, TreeView, Version, make_way, mount_busy
from ._changes import PART_BYTES, encode_changes
from ._directory import sync_directory
from ._journal import Journal, Reading, read_journal
from ._records import Kind

CHECKPOINTS = "checkpoints"
_U64 = 8


MAPPED_WINDOW = 8 << 20
"""libgit2 maps packs in windows of this size at most (its default: 1 GiB) ..."""
MAPPED_LIMIT = 32 << 20
"""... and unmaps the least used once this much is mapped (its default: 8 GiB)."""
OPEN_PACKS = 128
"""Packs libgit2 keeps open at most (its default: all); write-back adds one a round."""


def bound_pack_maps() -> None:
    """Bound what libgit2 keeps mapped of pack files, process-wide: a store's process
    reads evicted data back through them, and every mapped page it touched counts in
    its resident memory (docs/memory.md). Only lowers the defaults."""
    settings = pygit2.settings
    settings.mwindow_size = min(settings.mwindow_size, MAPPED_WINDOW)
    settings.mwindow_mapped_limit = min(settings.mwindow_mapped_limit, MAPPED_LIMIT)
    if not settings.mwindow_file_limit:
        settings.mwindow_file_limit = OPEN_PACKS


def store_repository(store: str, base: str | None) -> pygit2.Repository:
    """The store's git repository (made if missing); it reads ``base``'s objects too
    (git's alternates), so a blob id of either resolves."""
    bound_pack_maps()
    path = os.path.join(store, "git")
    repository = git.open_repository(path, create=True)
    if base is not None:
        alternates = os.path.join(path, "objects", "info", "alternates")
        wanted = os.path.join(os.path.abspath(base), "objects") + "\n"
        with contextlib.suppress(FileNotFoundError), open(alternates, encoding="utf-8") as found:
            if found.read() == wanted:
                return repository
        os.makedirs(os.path.dirname(alternates), exist_ok=True)
        with open(alternates, "w", encoding="utf-8") as written:
            written.write(wanted)
        repository = git.open_repository(path)  # libgit2 reads alternates on open
    return repository


@dataclass(frozen=True, slots=True)
class Found:
    """The newest complete checkpoint of a store."""

    covers: int
    """The last journal sequence number it holds."""
    reading: Reading


def newest_checkpoint(store: str) -> Found | None:
    """The newest complete checkpoint, read (None: none). Incomplete ones (a crash
    while writing) are removed.

    Raises:
        StoreDamagedError: The newest complete checkpoint is damaged: what it holds
            is no longer in the journal, so opening must not go on without it.
    """
    base = os.path.join(store, CHECKPOINTS)
    if not os.path.isdir(base):
        return None
    complete = []
    for name in os.listdir(base):
        if name.startswith(".new-"):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        elif name.isdigit():
            complete.append(int(name))
    if not complete:
        return None
    covers = max(complete)
    path = os.path.join(base, str(covers))
    reading = read_journal(path)
    last = reading.records[-1] if reading.records else None
    if reading.damage is not None or last is None or last.kind is not Kind.CHECKPOINT:
        why = reading.damage.reason if reading.damage else "it has no final record"
        raise StoreDamagedError(f"the checkpoint is damaged: {why}", path)
    if int.from_bytes(last.payload[:_U64], "little") != covers:
        raise StoreDamagedError("the checkpoint names another journal position", path)
    reading.records.pop()
    return Found(covers, reading)


SAMPLE = 64 << 10
"""Bytes of a file compressed on trial to tell whether compressing it pays."""


def compressible(data: bytes) -> bool:
    """True unless deflate at the packs' level saves under a tenth of ``data``'s first
    ``SAMPLE`` bytes. Data that does not compress (media, archives, random bytes) is
    stored as it is: deflate still runs at about 60-90 MB/s on it here, against 430
    MB/s storing, and write-back is on the path of a write that needs room."""
    sample = data[:SAMPLE]
    if not sample:
        return True
    return len(zlib_ng.compress(sample, git.DEFAULT_COMPRESSION)) < len(sample) * 0.9


class Blobs:
    """Writes file contents into the store's repository for checkpoints and write-back,
    each once: a file whose data a blob of the repository holds already (loaded from
    it, or written there before: ``File.backing``) costs its id only.

    Once the blobs a round wrote are durable (``seal``), ``remember`` makes each file
    they came from *clean* (backed by its blob): its data may then leave memory under
    pressure and be read back from the blob (``tree.Residency``)."""

    def __init__(self, repository: pygit2.Repository) -> None:
        self.repository = repository
        self.compression = git.DEFAULT_COMPRESSION
        """The zlib level of the next pack: 0 (stored) for a checkpoint that could not
        wait for the mount to be quiet, whose CPU the mount's requests need."""
        self.store = git.BlobStore(repository)
        self._next: dict[tuple[int, int], tuple[weakref.ref[File], bytes]] = {}
        self._written: list[tuple[File, bytes]] = []
        self._pack: git.PackWriter | None = None

    def keeps(self, content: object) -> bool:
        """True if ``content`` is a blob this repository holds (its own objects or its
        base's): it stays readable for as long as the store does."""
        return isinstance(content, git.BlobContent) and self.store.has(content.key)

    def stored(self, node: File) -> bytes | None:
        """The blob id of a file's content if the repository holds it already (a file
        not in memory, or in memory and clean): what the journal writes for it
        instead of its bytes."""
        lazy = node.lazy
        content = node.backing if lazy is None else lazy
        if content is not None and self.keeps(content):
            assert isinstance(content, git.BlobContent)
            return content.key.raw
        return None

    def content_of(self, blob: bytes) -> git.BlobContent:
        """The content a blob id names, read on first use."""
        return git.BlobContent(self.store, pygit2.Oid(raw=blob))

    def blob_of(self, node: File) -> bytes | None:
        """The blob id of a file's content, written now if new; None for a sparse
        file (its chunks are written instead: a blob would hold its holes)."""
        stored = self.stored(node)
        if stored is not None:
            if node.resident() is not None:
                self._written.append((node, stored))  # clean already: tracked if it is not
            return stored
        chunks = node.resident()
        if chunks is None or node.size > 2 * node.allocated + (1 << 20):
            return None  # sparse (or evicted meanwhile: written as its chunks)
        # Versions share a file's chunk dict until it changes: one blob per dict. Keyed
        # by the dict's id, not the dict, so that what is written can still leave
        # memory; the node it came from proves the id is still that dict's.
        key = (id(chunks), node.size)
        known = self._next.get(key)
        source = None if known is None else known[0]()
        if known is not None and source is not None and source.resident() is chunks:
            oid = known[1]
        else:
            if self._pack is None:
                self._pack = git.PackWriter(self.repository, compression=self.compression)
            make_way()  # a checkpoint is background work: the mount's requests go first
            pieces = git.blob_pieces(node)
            first = next(pieces, b"")
            # Stored, not compressed, while the mount is busy: zlib would take the CPU its
            # requests need (an fsync's p99 doubled while a checkpoint compressed).
            level = 0 if mount_busy() or not compressible(first) else None
            stream = itertools.chain([first], pieces)
            oid = self._pack.add_stream(ObjectType.BLOB, node.size, stream, compression=level).raw
            self._next[key] = (weakref.ref(node), oid)
        self._written.append((node, oid))
        return oid

    def seal(self) -> None:
        """Make the blobs written since the last ``seal`` durable."""
        pack, self._pack = self._pack, None
        if pack is None:
            return
        written = pack.finish()
        if written is not None:
            for suffix in (".pack", ".idx"):
                fd = os.open(written + suffix, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            sync_directory(os.path.dirname(written))

    def abort(self) -> None:
        """Drop what was written since the last ``seal``."""
        if self._pack is not None:
            with contextlib.suppress(OSError):  # a full disk fails the closing flush too
                self._pack.abort()
            self._pack = None
        self._next = {}
        self._written = []

    def remember(self) -> None:
        """Once sealed: make each file whose blob was written (or found) clean, backed
        by that blob; forget the round."""
        written, self._written, self._next = self._written, [], {}
        for node, oid in written:
            node.back(self.content_of(oid))


def differing(before: TreeView, after: TreeView) -> set[int]:
    """The inodes whose node is not the very node in both (copy-on-write shares what
    did not change): O(inodes)."""
    inodes = set(before.inodes()) | set(after.inodes())
    return {ino for ino in inodes if before.get(ino) is not after.get(ino)}


def write_checkpoint(
    store: str,
    covers: int,
    kept: list[tuple[bytes, Version]],
    live: TreeView,
    counts: tuple[int, int, int],
    blobs: Blobs,
    part_bytes: int = PART_BYTES,
) -> str:
    """Write the checkpoint of ``kept`` snapshots (record bytes and version, oldest
    first) and ``live``, the state the journal built through ``covers`` (its next
    inode number, file count and bytes: ``counts``), in records of at most about
    ``part_bytes``; its path."""
    base = os.path.join(store, CHECKPOINTS)
    os.makedirs(base, mode=0o700, exist_ok=True)
    making = os.path.join(base, f".new-{covers}")
    shutil.rmtree(making, ignore_errors=True)
    os.mkdir(making, 0o700)
    journal = Journal(making, 1, zeros_ahead=False)
    try:
        previous: TreeView | None = None
        states = [(r, v, (counts[0], v.file_count, v.total_bytes)) for r, v in kept]
        for record, version, state_counts in [*states, (b"", live, counts)]:
            inodes = set(version.inodes()) if previous is None else differing(previous, version)
            parts = encode_changes(
                previous, version, inodes, state_counts, blobs.blob_of, part_bytes
            )
            for payload in parts:
                journal.append(Kind.CHANGES, payload)
            if record:
                journal.append(Kind.SNAPSHOT, record)
            previous = version
        blobs.seal()  # the blobs before the records that name them
        journal.append(Kind.CHECKPOINT, covers.to_bytes(_U64, "little"))
        journal.sync()
    except BaseException:
        with contextlib.suppress(OSError):  # a full disk fails its closing sync too
            journal.close()
        blobs.abort()
        shutil.rmtree(making, ignore_errors=True)
        raise
    journal.close()
    sync_directory(making)
    final = os.path.join(base, str(covers))
    os.rename(making, final)
    sync_directory(base)
    blobs.remember()
    return final


def older_checkpoints(store: str, newest: int) -> Iterator[str]:
    """The checkpoints older than ``newest`` (to remove once it is durable)."""
    base = os.path.join(store, CHECKPOINTS)
    for name in os.listdir(base):
        if name.isdigit() and int(name) < newest:
            yield os.path.join(base, name)
