"""The change feed of an in-memory workspace: paths, kinds and causes of what changed,
coalesced per batch, resumable from an event id, with a gap where events were lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

import pytest

from workspacefs import Cause, InMemoryFilesystem, InvalidArgumentError, attributed
from workspacefs.fs import ChangeEvent, ChangeFeed, ChangeStream, parse_event_id

A = Cause.call("write_file", "call-a")
B = Cause.call("edit_file", "call-b")
SHELL = Cause(pid=4242, command=("sh", "-c", "curl -H 'Authorization: Bearer s3cr3t' x"))


def drain(stream: ChangeStream, quiet: float = 0.5) -> list[ChangeEvent]:
    """Every event until none came for ``quiet`` seconds."""
    found = []
    while (event := stream.next_event(quiet)) is not None:
        found.append(event)
    return found


def by_path(events: Iterable[ChangeEvent]) -> dict[str, list[tuple[str, list[str]]]]:
    """path -> [(kind, the causes' descriptions)], in the order the events came."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for event in events:
        for path in event.paths:
            found.setdefault(path, []).append((event.kind, [c.describe() for c in event.causes]))
    return found


def test_each_change_names_its_paths_kind_and_cause() -> None:
    fs = InMemoryFilesystem()
    fs.write("kept.txt", "old\n")
    with fs.events() as stream:
        with attributed(A):
            fs.write("src/app.py", "print(1)\n")
            fs.write("src/util.py", "X = 1\n")
        assert drain(stream) != []
        with attributed(B):
            fs.write("src/app.py", "print(2)\n")
            fs.delete("kept.txt")
        with attributed(SHELL):
            fs.mkdir("lib")
            fs.rename("src/util.py", "lib/util.py")
        events = drain(stream)
    assert by_path(events) == {
        "src/app.py": [("modified", ["edit_file call call-b"])],
        "kept.txt": [("deleted", ["edit_file call call-b"])],
        "src/util.py": [("deleted", ["pid 4242 `sh -c curl -H 'Authorization: ***' x`"])],
        "lib/util.py": [("added", ["pid 4242 `sh -c curl -H 'Authorization: ***' x`"])],
    }
    numbers = [parse_event_id(event.id)[1] for event in events]
    assert numbers == sorted(numbers)
    assert len(set(numbers)) == len(numbers)
    assert stream.last_id == events[-1].id


def test_a_batch_coalesces_a_path_and_keeps_every_cause_that_touched_it() -> None:
    fs = InMemoryFilesystem()
    feed = ChangeFeed(fs.tree, window=3600)  # batches taken here, by hand
    try:
        with feed.events() as stream:
            for n in range(500):
                with attributed(A if n % 2 else B):
                    fs.write("hot.txt", f"{n}\n")
            fs.write("made-and-removed.txt", "x")
            fs.delete("made-and-removed.txt")
            feed._step()
            (event,) = drain(stream, 0.1)
            assert (event.kind, event.paths, event.causes) == ("added", ("hot.txt",), (B, A))
            with attributed(A):
                fs.write("hot.txt", "again")
            feed._step()
            (event,) = drain(stream, 0.1)
            assert (event.kind, event.paths, event.causes) == ("modified", ("hot.txt",), (A,))
    finally:
        feed.close()


def test_a_change_is_the_cause_s_whose_hold_of_the_tree_made_it() -> None:
    # Attribution is taken when the outermost hold of the tree lock ends: a bulk
    # change in one hold (a transaction, an import) is its caller's, whatever
    # was in effect inside.
    fs = InMemoryFilesystem()
    with fs.events() as stream:
        with attributed(Cause.call("import", "call-i")), fs.transaction():
            with attributed(A):
                fs.write("one.txt", "1")
            fs.write("two.txt", "2")
        events = drain(stream)
    assert by_path(events) == {
        "one.txt": [("added", ["import call call-i"])],
        "two.txt": [("added", ["import call call-i"])],
    }


def test_full_command_lines_only_when_the_workspace_keeps_them() -> None:
    fs = InMemoryFilesystem(blame_full_commands=True)
    with fs.events() as stream:
        with attributed(SHELL):
            fs.write("f", "x")
        (event,) = drain(stream)
    assert event.causes == (SHELL,)


def test_glob_keeps_matching_paths_and_moves_past_the_rest() -> None:
    fs = InMemoryFilesystem()
    with fs.events(glob="*.py") as py, fs.events(glob="docs/**") as docs:
        with fs.transaction():
            fs.write("src/a.py", "")
            fs.write("src/a.txt", "")
            fs.write("docs/guide/intro.md", "")
        assert [e.paths for e in drain(py)] == [("src/a.py",)]
        assert [e.paths for e in drain(docs)] == [("docs/guide/intro.md",)]
        fs.write("notes.txt", "")  # neither wants it
        assert drain(py) == []
        feed = fs.change_feed()
        assert py.last_id == feed.latest  # a resume from here skips nothing it wants
    with pytest.raises(InvalidArgumentError):
        fs.events(glob="")
    with pytest.raises(InvalidArgumentError):
        fs.events(glob="x" * 5000)


def test_a_reader_that_resumes_from_its_last_id_misses_nothing() -> None:
    fs = InMemoryFilesystem()
    first = fs.events()
    seen: set[str] = set()
    writer_done = threading.Event()

    def writer() -> None:
        for n in range(2000):
            with attributed(Cause.call("write_file", f"call-{n}")):
                fs.write(f"d{n % 7}/f{n}.txt", str(n))
            if n % 200 == 0:
                time.sleep(0.01)  # several batches
        writer_done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    while len(seen) < 300:  # read some, then go away mid-stream
        event = first.next_event(10)
        assert event is not None
        seen.update(event.paths)
    last = first.last_id
    first.close()
    thread.join()
    with fs.events(after=last) as again:
        for event in drain(again):
            assert event.kind == "added"
            (cause,) = event.causes
            (path,) = event.paths  # one call, one file
            assert cause.call_id == "call-" + path.rpartition("/f")[2].removesuffix(".txt")
            seen.add(path)
    assert seen == {f"d{n % 7}/f{n}.txt" for n in range(2000)}


def test_an_id_the_ring_no_longer_holds_gets_a_gap_then_the_rest() -> None:
    fs = InMemoryFilesystem()
    feed = ChangeFeed(fs.tree, ring_events=3)
    try:
        start = feed.latest
        for n in range(6):
            fs.write(f"f{n}", "x")
            while feed.latest == start or parse_event_id(feed.latest)[1] < n + 1:
                time.sleep(0.01)
        with feed.events(after=start, timeout=0.3) as stream:
            events = list(stream)
        assert [e.kind for e in events] == ["gap"]  # rescan, then go on from here
        assert events[0].id == feed.latest
        with feed.events(after=f"{feed.stream}-4", timeout=0.3) as stream:
            assert [e.paths for e in stream] == [("f4",), ("f5",)]
        other = "0" * 8 + "-1"  # an id from an earlier run of the feed
        with feed.events(after=other, timeout=0.3) as stream:
            assert [e.kind for e in stream] == ["gap"]
    finally:
        feed.close()


@pytest.mark.parametrize("bad", ["", "nope", "abc-", "-3", "ab-cd", "a b-1", "ab-" + "9" * 20])
def test_malformed_ids_are_refused(bad: str) -> None:
    fs = InMemoryFilesystem()
    with pytest.raises(InvalidArgumentError):
        fs.events(after=bad)


def test_an_id_ahead_of_the_feed_is_refused() -> None:
    fs = InMemoryFilesystem()
    feed = fs.change_feed()
    with pytest.raises(InvalidArgumentError, match="ahead of this feed"):
        fs.events(after=f"{feed.stream}-5")


def test_restore_is_reported_as_the_paths_it_changes() -> None:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "1")
    before = fs.snapshot()
    fs.write("a.txt", "2")
    fs.write("b.txt", "new")
    with fs.events() as stream:
        with attributed(Cause.call("rewind", "call-r")):
            fs.restore(before)
        events = drain(stream)
    assert by_path(events) == {
        "a.txt": [("modified", ["rewind call call-r"])],
        "b.txt": [("deleted", ["rewind call call-r"])],
    }


def test_pending_changes_are_bounded_by_causes_and_inodes() -> None:
    # Held back (a window far longer than the test), 30,000 changes by three causes to
    # 100 files are kept as three sets of at most 101 inodes.
    fs = InMemoryFilesystem()
    feed = ChangeFeed(fs.tree, window=3600)
    try:
        causes = [Cause.call("t", str(n)) for n in range(3)]
        for n in range(30_000):
            with attributed(causes[n % 3]):
                fs.write(f"f{n % 100}", str(n))
        pending = feed._pending
        assert len(pending) == 3
        assert all(len(inodes) <= 101 for _, inodes in pending.values())
    finally:
        feed.close()


def test_a_closed_feed_ends_its_streams_and_forgets_the_tree() -> None:
    fs = InMemoryFilesystem()
    feed = ChangeFeed(fs.tree)
    stream = feed.events()
    ended = threading.Event()

    def follow() -> None:
        list(stream)
        ended.set()

    threading.Thread(target=follow).start()
    feed.close()
    assert ended.wait(5)
    fs.write("after.txt", "x")  # no observer left to record it
    assert feed._pending == {}


def test_the_ring_keeps_at_most_its_bytes_and_a_reader_behind_them_gets_a_gap() -> None:
    fs = InMemoryFilesystem()
    feed = ChangeFeed(fs.tree, window=3600, ring_bytes=64 << 10)
    try:
        start = feed.latest
        for n in range(40):  # 40 events of 100 paths of 100 characters: far over 64 KiB
            with fs.transaction():
                for m in range(100):
                    fs.write(f"{n:03}/{'x' * 45}/{'y' * 45}{m:03}", "")
            feed._step()
        assert parse_event_id(feed.latest)[1] == 40
        assert 0 < feed._ring_size <= 64 << 10
        kept = len(feed._ring) - feed._ring_start
        assert 0 < kept < 40
        with feed.events(after=start, timeout=0.2) as stream:
            assert [e.kind for e in stream] == ["gap"]
        oldest = f"{feed.stream}-{40 - kept}"
        with feed.events(after=oldest, timeout=0.2) as stream:
            assert len(list(stream)) == kept  # the oldest kept one's successors: all there
    finally:
        feed.close()


@pytest.mark.logs_errors("a change feed listener failed")
def test_listeners_are_told_of_kept_events_and_of_the_close() -> None:
    fs = InMemoryFilesystem()
    feed = ChangeFeed(fs.tree, window=3600)
    told: list[str] = []

    def failing() -> None:
        raise RuntimeError("a listener's own bug")

    stop = feed.on_kept(lambda: told.append(feed.latest))
    feed.on_kept(failing)  # logged; the feed and the other listeners go on
    fs.write("a.txt", "1")
    feed._step()
    assert told == [feed.latest]
    stop()
    fs.write("b.txt", "2")
    feed._step()
    assert len(told) == 1
    again = feed.on_kept(lambda: told.append("closed" if feed.closed else feed.latest))
    fs.write("c.txt", "3")
    feed._step()
    feed.close()
    assert told[1:] == [feed.latest, "closed"]
    again()
