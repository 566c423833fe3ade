"""The journal on its own: records round-trip across segments, group commit, torn and
damaged journals read as a prefix that says where it stopped, a full disk, a kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.interpreter import child_env
from workspacefs import NoSpaceError, StoreDamagedError, StoreError
from workspacefs.store import Journal, Kind, cut_after, read_journal, segments
from workspacefs.store._journal import HEADROOM
from workspacefs.store._records import Parts


def payloads(count: int) -> list[bytes]:
    return [f"record {n} ".encode() * (n % 7 + 1) for n in range(count)]


def write(directory: Path, data: list[bytes], *, segment_bytes: int = 1 << 20) -> Journal:
    journal = Journal(str(directory), 1, segment_bytes=segment_bytes)
    for payload in data:
        journal.append(Kind.CHANGES, payload)
    journal.sync()
    return journal


def test_records_come_back_in_order_across_segments(tmp_path: Path) -> None:
    data = payloads(300)
    write(tmp_path, data, segment_bytes=2048).close()
    assert len(segments(str(tmp_path))) > 5
    reading = read_journal(str(tmp_path))
    assert [record.payload for record in reading.records] == data
    assert [record.sequence for record in reading.records] == list(range(1, 301))
    assert reading.damage is None
    later = read_journal(str(tmp_path), after=250)
    assert [record.sequence for record in later.records] == list(range(251, 301))


def test_one_sync_serves_every_writer_waiting(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path), 1)
    acknowledged: list[int] = []

    def writer() -> None:
        for _ in range(50):
            sequence = journal.append(Kind.CHANGES, b"x" * 100)
            journal.sync(sequence)
            assert journal.durable_through >= sequence
            acknowledged.append(sequence)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    journal.close()
    assert sorted(acknowledged) == list(range(1, 201))
    assert len(read_journal(str(tmp_path)).records) == 200


def _whole(directory: Path) -> tuple[Path, bytes]:
    ((_, path),) = segments(str(directory))
    return Path(path), Path(path).read_bytes()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_journal_cut_anywhere_reads_as_a_prefix(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    directory = tmp_path_factory.mktemp("torn")
    records = payloads(20)
    write(directory, records).close()
    path, whole = _whole(directory)
    cut = data.draw(st.integers(16, len(whole)))
    path.write_bytes(whole[:cut])
    reading = read_journal(str(directory))
    count = len(reading.records)
    assert [record.payload for record in reading.records] == records[:count]
    if cut == len(whole):
        assert reading.damage is None
    elif reading.damage is not None:
        assert reading.damage.torn  # nothing intact after a cut
        journal = Journal.resume(str(directory), reading)
        journal.append(Kind.CHANGES, b"after the crash")
        journal.close()
        again = read_journal(str(directory))
        assert [r.payload for r in again.records] == [*records[:count], b"after the crash"]
        assert again.damage is None


def test_records_a_checkpoint_covers_are_skipped_unread(tmp_path: Path) -> None:
    # One segment: the journal's current one holds the covered records too. Their
    # payloads are never read, so damage there (a checkpoint holds what they did)
    # neither stops the reading nor costs it their bytes; offsets stay the file's.
    data = payloads(20)
    write(tmp_path, data).close()
    path, whole = _whole(tmp_path)
    records = read_journal(str(tmp_path)).records
    damaged = bytearray(whole)
    damaged[records[3].start + 30] ^= 0xFF  # inside the payload of record 4
    path.write_bytes(bytes(damaged))
    assert read_journal(str(tmp_path)).damage is not None  # read whole: damage
    later = read_journal(str(tmp_path), after=10)
    assert later.damage is None
    assert [record.payload for record in later.records] == data[10:]
    assert [(r.start, r.end) for r in later.records] == [(r.start, r.end) for r in records[10:]]
    assert later.tail == (str(path), records[-1].end)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_damage_in_the_middle_stops_replay_and_says_where(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    directory = tmp_path_factory.mktemp("damaged")
    records = payloads(20)
    write(directory, records).close()
    path, whole = _whole(directory)
    last_start = read_journal(str(directory)).records[-1].start  # the last is left whole
    at = data.draw(st.integers(16, last_start - 1))
    damaged = bytearray(whole)
    damaged[at] ^= data.draw(st.integers(1, 255))
    path.write_bytes(bytes(damaged))
    reading = read_journal(str(directory))
    count = len(reading.records)
    assert count < len(records)
    assert [record.payload for record in reading.records] == records[:count]
    assert reading.damage is not None
    assert not reading.damage.torn  # intact records follow: never skipped silently
    assert reading.damage.offset <= at
    kept = cut_after(reading)
    assert Path(kept[0]).read_bytes() == bytes(damaged)  # set aside as it was


def test_a_segment_of_another_format_is_refused(tmp_path: Path) -> None:
    write(tmp_path, payloads(3)).close()
    path, whole = _whole(tmp_path)
    path.write_bytes(whole[:8] + b"\x09\x00" + whole[10:])
    with pytest.raises(StoreDamagedError, match="journal format 9"):
        read_journal(str(tmp_path))


def test_a_full_disk_fails_the_record_and_every_later_one(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    if (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)], check=False
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        journal = Journal(str(disk), 1)
        written = 0
        while written < 1000:
            try:
                journal.append(Kind.CHANGES, bytes(10_000))
            except NoSpaceError:
                break
            written += 1
        assert 0 < written < 1000  # the disk filled up: 3 MiB
        with pytest.raises(StoreError, match="failed earlier"):
            journal.append(Kind.CHANGES, b"x")  # nothing more after a failed write
        journal.close()
        reading = read_journal(str(disk))
        assert len(reading.records) == written
        assert reading.damage is None or reading.damage.torn  # the refused record's start
    finally:
        subprocess.run(["umount", str(disk)], check=True)


KILLED = """
import sys
from workspacefs.store import Journal, Kind
journal = Journal(sys.argv[1], 1)
n = 0
while True:
    n = journal.append(Kind.CHANGES, b"payload %d" % n * 50)
    if n % 3 == 0:
        journal.sync(n)
        print(n, flush=True)
"""


def test_every_acknowledged_record_survives_a_kill(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    assert child.stdout is not None
    acknowledged = 0
    for line in child.stdout:
        acknowledged = int(line)
        if acknowledged >= 3000:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    reading = read_journal(str(tmp_path))
    assert reading.last_sequence >= acknowledged
    assert [r.sequence for r in reading.records] == list(range(1, reading.last_sequence + 1))


def test_a_record_out_of_sequence_is_damage_and_what_follows_is_kept_aside(
    tmp_path: Path,
) -> None:
    journal = Journal(str(tmp_path), 1)
    for payload in (b"one", b"two"):
        journal.append(Kind.CHANGES, payload)
    journal._next = 4  # a record missing: 3
    for payload in (b"four", b"five"):
        journal.append(Kind.CHANGES, payload)
    journal.close()
    reading = read_journal(str(tmp_path))
    assert [r.payload for r in reading.records] == [b"one", b"two"]
    assert reading.damage is not None
    assert not reading.damage.torn
    assert reading.damage.offset == reading.records[-1].end  # where record 4 starts
    resumed = Journal.resume(str(tmp_path), reading)
    resumed.append(Kind.CHANGES, b"three")
    resumed.close()
    assert [r.payload for r in read_journal(str(tmp_path)).records] == [b"one", b"two", b"three"]


def test_a_segment_being_made_when_the_process_died_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, payloads(3)).close()
    (tmp_path / "00000000000000000004.wal.new").write_bytes(b"WSFSJ")  # a header cut short
    reading = read_journal(str(tmp_path))
    assert len(reading.records) == 3
    assert reading.damage is None
    resumed = Journal.resume(str(tmp_path), reading)
    resumed.append(Kind.CHANGES, b"four")
    resumed.close()
    assert len(read_journal(str(tmp_path)).records) == 4


def test_a_payload_over_the_limit_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workspacefs.store import _records

    monkeypatch.setattr(_records, "MAX_PAYLOAD", 100)
    journal = Journal(str(tmp_path), 1)
    with pytest.raises(ValueError, match="over 100"):
        journal.append(Kind.CHANGES, bytes(101))
    journal.append(Kind.CHANGES, bytes(100))
    journal.close()
    assert [len(r.payload) for r in read_journal(str(tmp_path)).records] == [100]


def test_lengthen_keeps_zeros_ahead_so_appends_leave_the_length_alone(tmp_path: Path) -> None:
    journal = write(tmp_path, payloads(10), segment_bytes=64 << 20)
    (_, segment), *_ = segments(str(tmp_path))
    journal.append(Kind.CHANGES, bytes(900_000))  # within the first megabyte of zeros
    journal.lengthen()
    length = os.stat(segment).st_size
    assert length >= 2 * HEADROOM
    for payload in [bytes(200_000)] * 5:  # a megabyte more: past the zeros made at first
        journal.append(Kind.CHANGES, payload)
    journal.sync()
    assert os.stat(segment).st_size == length
    journal.close()
    assert len(read_journal(str(tmp_path)).records) == 16


def test_a_record_in_parts_reads_back_as_their_bytes(tmp_path: Path) -> None:
    # More parts than one pwritev takes (IOV_MAX), some empty, views of larger buffers.
    chunk = bytearray(os.urandom(70_000))
    parts: list[bytes | bytearray | memoryview] = []
    for n in range(os.sysconf("SC_IOV_MAX") + 300):
        parts += [n.to_bytes(4, "little"), b"", memoryview(chunk)[n : n + 9000 + n % 5]]
    journal = Journal(str(tmp_path), 1)
    journal.append(Kind.CHANGES, b"before")
    journal.append(Kind.CHANGES, Parts(parts))
    journal.append(Kind.CHANGES, b"after")
    journal.close()
    records = read_journal(str(tmp_path)).records
    assert [r.payload for r in records] == [b"before", b"".join(parts), b"after"]
