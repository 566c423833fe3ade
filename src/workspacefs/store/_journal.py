"""The journal: records appended to segment files, made durable by group commit.

Writers append a record (to the kernel's page cache: cheap) and, at a durability
point, ask for everything up to their record to be on disk. One ``fdatasync`` serves
every writer waiting at that moment: a writer that finds a sync under way waits for
it and is done if it covered its record (group commit), so a burst of durability
points costs about one disk flush, not one each.

A segment file is named by the sequence number of its first record and holds records
until it passes ``segment_bytes``; a new file's directory entry is synced before a
record in it is acknowledged. A record that cannot be written whole (the disk is
full) is cut off again, so the file ends at the last whole record, and the caller
gets the error: the journal never holds a record its writer was told failed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import itertools
import os
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import NoReturn

from .._errors import NoSpaceError, StoreDamagedError, StoreError
from ..posix import write_all, write_parts
from ._directory import sync_directory
from ._records import (
    FILE_HEADER,
    Buffer,
    Damage,
    Kind,
    Parts,
    Record,
    check_file_header,
    damage,
    file_header,
    frame,
    read_records,
    skip_records,
)

SEGMENT_BYTES = 64 << 20
SUFFIX = ".wal"
_ZEROS = bytes(1 << 20)
"""What a segment is made and lengthened with ahead of its records (``_extend``)."""
HEADROOM = 2 << 20
"""The synced zeros ``lengthen`` keeps ahead of the records, at least."""


def segment_name(first_sequence: int) -> str:
    """The file name of the segment whose first record is ``first_sequence``."""
    return f"{first_sequence:020d}{SUFFIX}"


def segments(directory: str) -> list[tuple[int, str]]:
    """(first sequence, path) of each segment file in ``directory``, in order."""
    found = []
    for name in os.listdir(directory):
        stem, suffix = name[: -len(SUFFIX)], name[-len(SUFFIX) :]
        if suffix == SUFFIX and stem.isdigit() and len(stem) == 20:
            found.append((int(stem), os.path.join(directory, name)))
    return sorted(found)


@dataclass
class Reading:
    """What ``read_journal`` found: the intact records in order, and where it stopped."""

    records: list[Record] = field(default_factory=list)
    damage: Damage | None = None
    """The first record that was not read (None if every byte was read)."""
    damaged_segment: str | None = None
    """The segment file ``damage`` is in."""
    dropped_segments: list[str] = field(default_factory=list)
    """Segments after the damaged one: never read."""
    after: int = 0
    """The records up to this sequence number were not asked for (a checkpoint has them)."""
    tail: tuple[str, int] | None = None
    """The last segment read, and where its intact records end (the next one goes there)."""

    @property
    def last_sequence(self) -> int:
        """The sequence number of the last intact record (``after`` if none)."""
        return self.records[-1].sequence if self.records else self.after


def read_journal(directory: str, after: int = 0) -> Reading:
    """Read the records with sequence numbers above ``after``, in order, up to the first
    that is missing, out of order or not intact.

    Raises:
        StoreDamagedError: A segment file is not a journal of this format.
    """
    reading = Reading(after=after)
    expected = after + 1
    files = segments(directory)
    for position, (_, path) in enumerate(files):
        data, offset = _read_segment(path, expected)
        base = offset
        for record in read_records(data, offset, base):
            if record.sequence != expected:
                reason = f"record {record.sequence} where {expected} was due"
                reading.damage = Damage(record.start, reason, torn=False)
                break
            reading.records.append(dataclasses.replace(record, segment=path))
            offset = record.end
            expected += 1
        else:
            reading.damage = damage(data, offset, base)
        reading.tail = (path, offset)
        if reading.damage is not None:
            reading.damaged_segment = path
            reading.dropped_segments = [later for _, later in files[position + 1 :]]
            if reading.dropped_segments and reading.damage.torn:
                # A torn write is only ever the last one: one with segments after it
                # is damage like any other.
                reading.damage = Damage(reading.damage.offset, reading.damage.reason, False)
            return reading
    return reading


def _read_segment(path: str, below: int) -> tuple[bytes, int]:
    """A segment file's bytes from its first record numbered ``below`` or more (those
    before it are never read), and the offset they start at.

    Raises:
        StoreDamagedError: The file is not a journal segment of this format.
    """
    with open(path, "rb") as segment:
        fd = segment.fileno()
        problem = check_file_header(os.pread(fd, FILE_HEADER.size, 0))
        if problem is not None:
            raise StoreDamagedError(f"journal segment {problem}", path)
        offset = skip_records(fd, below, os.fstat(fd).st_size)
        segment.seek(offset)
        return segment.read(), offset


def stop_before(reading: Reading, record: Record, reason: str, *, torn: bool = False) -> None:
    """Make ``reading`` end just before ``record``: damage found in it while replaying
    it (it is kept, with everything after it, as ``cut_after`` keeps damage), or with
    ``torn`` the first record of a group whose last one was never written whole (the
    group was never acknowledged: ``cut_after`` cuts it off, all of it, so the records
    written next do not follow its intact ones under the same sequence numbers)."""
    index = reading.records.index(record)
    files = list(dict.fromkeys(r.segment for r in reading.records[index:]))
    if reading.damaged_segment is not None and reading.damaged_segment not in files:
        files.append(reading.damaged_segment)  # where the torn record lies
    later = [path for path in reading.dropped_segments if path not in files]
    earlier = reading.damage
    if earlier is not None and not earlier.torn:
        torn, reason = False, earlier.reason  # damage after the group: still damage
    reading.records = reading.records[:index]
    reading.damage = Damage(record.start, reason, torn=torn)
    reading.damaged_segment = record.segment
    reading.tail = (record.segment, record.start)  # where the next record goes, once cut
    reading.dropped_segments = [*files[1:], *later]


class Journal:
    """Appends records to the segment files in ``directory`` and syncs them.

    After a write or sync fails, the journal refuses every later call (the error
    names the first failure): what the disk holds past that point is unknown, and a
    record written after it might never be read back. Reopening the store reads what
    is there and goes on from it.

    Args:
        directory: The journal's directory (it exists; the store owns it).
        next_sequence: The sequence number of the next record.
        segment_bytes: A segment holding this much starts a new one.
        zeros_ahead: Write zeros ahead of the records (``_extend``), for a journal
            that syncs often; a file written once and synced once needs none.
    """

    def __init__(
        self,
        directory: str,
        next_sequence: int,
        *,
        segment_bytes: int = SEGMENT_BYTES,
        zeros_ahead: bool = True,
    ) -> None:
        self.directory = directory
        self._segment_bytes = segment_bytes
        self._zeros_ahead = zeros_ahead
        self._write_lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._next = next_sequence
        self._written = next_sequence - 1
        self._durable = next_sequence - 1
        self.synced_at: float | None = None
        """When the last sync that wrote anything returned (``time.time()``)."""
        self._fd = -1
        self._size = 0  # where the next record goes in the current segment
        self._allocated = 0  # the segment's length: zeros past ``_size``
        self._unsynced_fds: list[int] = []  # segments closed by a rotation, not yet synced
        self._failed: OSError | None = None
        self._closed = False
        self.set_aside: list[str] = []
        """The damaged files ``resume`` kept beside the journal (``cut_after``)."""

    @classmethod
    def resume(
        cls, directory: str, reading: Reading, *, segment_bytes: int = SEGMENT_BYTES
    ) -> Journal:
        """The journal that continues ``reading``: what it did not read is set aside or
        cut off (``cut_after``), and the next record follows its last intact one, in the
        last segment file."""
        set_aside = cut_after(reading)
        journal = cls(directory, reading.last_sequence + 1, segment_bytes=segment_bytes)
        journal.set_aside = set_aside
        files = segments(directory)
        if files:
            _, path = files[-1]
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
            journal._fd = fd
            journal._allocated = os.fstat(fd).st_size
            tail = reading.tail
            journal._size = tail[1] if tail is not None and tail[0] == path else FILE_HEADER.size
        return journal

    @property
    def durable_through(self) -> int:
        """Every record up to this sequence number is on disk."""
        return self._durable

    @property
    def written_through(self) -> int:
        """Every record up to this sequence number has been appended."""
        return self._written

    @property
    def failure(self) -> OSError | None:
        """The write or sync that failed, after which the journal refuses everything."""
        return self._failed

    def _check(self) -> None:
        if self._closed:
            raise ValueError("the journal is closed")
        if self._failed is not None:
            raise StoreError(
                f"the journal failed earlier ({self._failed.strerror}); reopen the store",
                self.directory,
            ) from self._failed

    def _fail(self, exc: OSError) -> NoReturn:
        """Refuse every later call, and raise ``exc`` as the project's error."""
        self._failed = exc
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise NoSpaceError("the workspace's store is full", self.directory) from exc
        raise StoreError(f"writing the journal failed: {exc.strerror}", self.directory) from exc

    def append(self, kind: Kind, payload: Buffer | Parts) -> int:
        """Append one record; its sequence number. On disk only after ``sync``.

        Raises:
            NoSpaceError: The disk is full.
            StoreError: Writing failed otherwise, or failed before.
        """
        data = frame(self._next, kind, payload)  # sized before anything is written
        with self._write_lock:
            self._check()
            sequence = self._next
            if sequence != struct.unpack_from("<Q", data.parts[0], 8)[0]:
                data = frame(sequence, kind, payload)  # another writer took that number
            try:
                if self._fd < 0 or self._size >= self._segment_bytes:
                    self._rotate(sequence)
                if self._size + len(data) > self._allocated:
                    self._extend(self._size + len(data))
                write_parts(self._fd, data.parts, self._size)
            except OSError as exc:
                self._fail(exc)
            self._size += len(data)
            self._next = sequence + 1
            self._written = sequence
            return sequence

    def sync(self, through: int | None = None) -> None:
        """Return once every record up to ``through`` (default: every one appended so
        far) is on disk.

        Raises:
            StoreError: Syncing failed, now or before (and then ``NoSpaceError`` is
                possible too).
        """
        target = self._written if through is None else through
        if self._durable >= target and self._failed is None:
            return
        with self._sync_lock:
            if self._durable >= target and self._failed is None:
                return  # a sync that ran while this one waited covered it
            with self._write_lock:
                self._check()
                covered = self._written
                fd = self._fd
                rotated = list(self._unsynced_fds)
            try:
                for old in rotated:
                    os.fdatasync(old)
                if fd >= 0:
                    os.fdatasync(fd)
            except OSError as exc:
                with self._write_lock:
                    self._fail(exc)
            with self._write_lock:
                for old in rotated:
                    self._unsynced_fds.remove(old)
                    os.close(old)
            self._durable = max(self._durable, covered)
            self.synced_at = time.time()

    def _rotate(self, first_sequence: int) -> None:
        """Start a new segment whose first record is ``first_sequence``: made whole
        under a temporary name, then renamed into place, so a crash never leaves a
        segment without its header."""
        path = os.path.join(self.directory, segment_name(first_sequence))
        making = path + ".new"
        fd = os.open(making, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            write_all(fd, file_header(), 0)
            if self._zeros_ahead:
                write_all(fd, _ZEROS, FILE_HEADER.size)
            os.fdatasync(fd)
            os.rename(making, path)
            sync_directory(self.directory)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(making)
            raise
        if self._fd >= 0:
            self._unsynced_fds.append(self._fd)
        self._fd = fd
        self._size = FILE_HEADER.size
        self._allocated = FILE_HEADER.size + (len(_ZEROS) if self._zeros_ahead else 0)

    def _extend(self, end: int) -> None:
        """Make the segment at least ``end`` bytes long with zeros, a megabyte at a
        time: records then overwrite zeros already on disk, and ``fdatasync`` has no
        file size or block map to commit, only the records (measured on ext4: 0.07
        ms a sync instead of 0.12 appending)."""
        if not self._zeros_ahead:
            self._allocated = end  # the record itself lengthens the file
            return
        length = self._allocated
        while length < end:
            write_all(self._fd, _ZEROS, length)
            length += len(_ZEROS)
        self._allocated = length

    def lengthen(self) -> None:
        """Keep ``HEADROOM`` bytes of zeros, on disk, ahead of the records: for a thread
        off the writers' path (the interval's), so that a durability point writes only
        records, never a megabyte of zeros and the file's new length (which made one
        sync in thirty a millisecond slower under 35 KiB records). A writer that gets
        ahead of it still lengthens the file itself (``append``). Errors are left to
        that writer, which reports them."""
        with self._write_lock:
            if self._closed or self._failed is not None or self._fd < 0:
                return
            if not self._zeros_ahead or self._allocated - self._size >= HEADROOM:
                return
            try:
                self._extend(self._size + 2 * HEADROOM)
                fd = os.dup(self._fd)  # synced outside the lock, whatever a rotation does
            except OSError:
                return
        try:
            with contextlib.suppress(OSError):
                os.fdatasync(fd)
        finally:
            os.close(fd)

    def remove_through(self, sequence: int) -> list[str]:
        """Delete the segment files holding only records up to ``sequence`` (covered by
        a durable checkpoint); the paths removed."""
        removed = []
        files = segments(self.directory)
        for (_, path), (following, _) in itertools.pairwise(files):
            if following - 1 <= sequence:
                os.unlink(path)
                removed.append(path)
        if removed:
            sync_directory(self.directory)
        return removed

    def close(self) -> None:
        """Sync what was appended and close the files; safe to call twice."""
        if self._closed:
            return
        try:
            if self._failed is None:
                self.sync()
        finally:
            with self._write_lock:
                self._closed = True
                for fd in [*self._unsynced_fds, self._fd]:
                    if fd >= 0:
                        os.close(fd)
                self._unsynced_fds, self._fd = [], -1


def cut_after(reading: Reading) -> list[str]:
    """Make the journal end where ``reading`` stopped, so new records follow its last
    intact one: a torn tail is cut off (with the segments after it, which a group cut
    short may have begun); a damaged segment is first copied beside the journal as
    ``<name>.damaged`` (``.damaged.1``... if that exists), and every segment after it
    is renamed so. Returns the paths set aside."""
    if reading.damage is None or reading.damaged_segment is None:
        return []
    kept = []
    path = reading.damaged_segment
    if not reading.damage.torn:
        copy = _aside(path)
        with open(path, "rb") as source, open(copy, "xb") as target:
            target.write(source.read())
            target.flush()
            os.fsync(target.fileno())
        kept.append(copy)
    for later in reading.dropped_segments:
        if reading.damage.torn:
            os.unlink(later)  # only the torn group's records: never acknowledged
            continue
        aside = _aside(later)
        os.rename(later, aside)
        kept.append(aside)
    sync_directory(os.path.dirname(path))
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.ftruncate(fd, reading.damage.offset)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    return kept


def _aside(path: str) -> str:
    """A name beside ``path`` for a damaged copy that no earlier one has."""
    candidate, number = f"{path}.damaged", 0
    while os.path.lexists(candidate):
        number += 1
        candidate = f"{path}.damaged.{number}"
    return candidate
