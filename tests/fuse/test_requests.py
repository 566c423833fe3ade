"""Kernel requests: counted by the mount, and only as many as the work needs.

Each request is a round trip into Python (tens of microseconds), so these
tests pin the counts each lever of docs/fuse.md ("Requests") removes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from workspacefs.fuse._features import FALLOCATE, KILLPRIV_V2, OPEN_FREE, libfuse_version

from .conftest import Mounted
from .posix import fallocate

needs_open_free = pytest.mark.skipif(
    not OPEN_FREE, reason="needs the patched pyfuse3 (scripts/setup.sh)"
)


def test_stats_count_requests_by_type(mounted: Mounted) -> None:
    before = mounted.handle.stats()
    assert not Path(mounted.path("missing")).exists()
    os.mkdir(mounted.path("d"))
    during = mounted.handle.stats() - before
    assert during.counts["lookup"] >= 1
    assert during.counts["mkdir"] == 1
    assert during.total == sum(during.counts.values())
    assert during.seconds.keys() == during.counts.keys()
    assert all(seconds >= 0 for seconds in during.seconds.values())
    assert "mkdir 1" in during.summary()
    assert (mounted.handle.stats() - mounted.handle.stats()).total == 0


def test_writes_through_a_write_only_handle_are_one_request_each(mounted: Mounted) -> None:
    """direct_io: an unaligned write(2) is one request, with no security.capability probe."""
    before = mounted.handle.stats()
    fd = os.open(mounted.path("f"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for _ in range(10):
            os.write(fd, b"x" * 10_000)
    finally:
        os.close(fd)
    during = mounted.handle.stats() - before
    assert during.counts["write"] == 10
    assert "getxattr" not in during.counts
    assert mounted.fs.read_bytes("f").content == b"x" * 100_000


def test_buffered_writers_use_128_kib_writes(mounted: Mounted) -> None:
    assert os.stat(mounted.path("")).st_blksize == 128 << 10
    before = mounted.handle.stats()
    with open(mounted.path("big"), "w") as out:  # Python buffers st_blksize bytes
        for _ in range(10_000):
            out.write("x" * 99 + "\n")
    assert (mounted.handle.stats() - before).counts["write"] <= 10  # 1 MB in 128 KiB


@needs_open_free
def test_warm_reads_and_listings_send_no_requests(mounted: Mounted) -> None:
    mounted.fs.write("src/a.py", "import os\n")
    mounted.fs.write("src/b.py", "print(1)\n")
    os.symlink("a.py", mounted.path("src/link"))
    command = ["sh", "-c", "cat src/a.py src/b.py src/link && ls -l src && grep -r os src"]
    first = subprocess.run(command, cwd=mounted.root, capture_output=True, text=True, check=True)
    before = mounted.handle.stats()
    again = subprocess.run(command, cwd=mounted.root, capture_output=True, text=True, check=True)
    during = mounted.handle.stats() - before
    assert again.stdout == first.stdout
    # Nothing opens, lists, reads or resolves a link through the server again
    # (grep's statfs and ls's xattr probes still do).
    for kind in ("open", "release", "opendir", "readdir", "releasedir", "read", "readlink"):
        assert kind not in during.counts, during.summary()


@pytest.mark.skipif(not FALLOCATE, reason="needs the patched pyfuse3 (scripts/setup.sh)")
def test_fallocate_is_counted(mounted: Mounted) -> None:
    """fallocate reaches the tree through pyfuse3's handler, and counts like the others."""
    fd = os.open(mounted.path("f"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        before = mounted.handle.stats()
        fallocate(fd, 0, 0, 8192)
        during = mounted.handle.stats() - before
    finally:
        os.close(fd)
    assert during.counts["fallocate"] == 1
    assert os.stat(mounted.path("f")).st_size == 8192


@needs_open_free
def test_a_fresh_mount_creates_files_without_release_requests(mounted: Mounted) -> None:
    """The kernel stops sending RELEASE only once an OPEN was answered ENOSYS; the
    mount makes it learn that before it returns, even with no file to open."""
    before = mounted.handle.stats()
    for i in range(20):
        with open(mounted.path(f"new{i}"), "w") as out:
            out.write("x")
    during = mounted.handle.stats() - before
    assert during.counts["create"] == 20
    assert "release" not in during.counts
    assert "open" not in during.counts


@needs_open_free
def test_the_open_probe_leaves_nothing_behind(mounted: Mounted) -> None:
    from workspacefs.fuse._operations import OPEN_PROBE

    probe = os.fsdecode(OPEN_PROBE)
    assert not os.path.exists(mounted.path(probe))
    assert probe not in os.listdir(mounted.path(""))
    assert not mounted.fs.exists(probe)
    with open(mounted.path(probe), "w") as out:  # the name is free for real files
        out.write("mine")
    assert mounted.fs.read(probe).content == "mine"


# -- what the connection negotiated ------------------------------------------------


def _killpriv(mounted: Mounted) -> bool:
    connection = mounted.handle.connection
    return connection is not None and "HANDLE_KILLPRIV_V2" in connection.capabilities


@needs_open_free
def test_the_mount_reports_its_libfuse_and_capabilities(killpriv_mounted: Mounted) -> None:
    connection = killpriv_mounted.handle.connection
    assert connection is not None
    assert connection.libfuse == libfuse_version()
    assert connection.library is not None
    assert "libfuse3.so" in connection.library
    assert connection.protocol.startswith("7.")
    # Asked for wherever libfuse passes them on (3.18.3 does; 3.14 does not).
    if KILLPRIV_V2:
        assert "PARALLEL_DIROPS" in connection.capabilities
    # Never: requests are read from /dev/fuse, one read(2) each (see init_connection).
    assert "OVER_IO_URING" not in connection.capabilities
    assert "SPLICE_READ" not in connection.capabilities
    assert "HANDLE_KILLPRIV" not in connection.capabilities  # the first one: never
    assert not set(connection.capabilities) & set(connection.declined)
    assert connection.to_json()["capabilities"] == list(connection.capabilities)


def test_killpriv_v2_takes_the_capability_probe_out_of_page_cache_writes(
    killpriv_mounted: Mounted,
) -> None:
    """Without HANDLE_KILLPRIV_V2 the kernel asks for security.capability before every
    page-cache write (it never remembers the answer over FUSE); with it, once."""
    mounted = killpriv_mounted
    mounted.fs.write_bytes("db", b"x" * 4096)
    fd = os.open(mounted.path("db"), os.O_RDWR)
    try:
        before = mounted.handle.stats()
        for i in range(20):
            os.pwrite(fd, b"y" * 100, i * 100)
        during = mounted.handle.stats() - before
    finally:
        os.close(fd)
    assert during.counts["write"] == 20
    if _killpriv(mounted):
        assert during.counts.get("getxattr", 0) <= 1, during.summary()
    else:
        assert during.counts.get("getxattr", 0) == 20, during.summary()


def test_killpriv_v2_takes_the_getattr_out_of_chown(killpriv_mounted: Mounted) -> None:
    """Without HANDLE_KILLPRIV_V2 the kernel re-reads a file's attributes before each
    chown, to clear set-ID bits itself; with it the mount clears them, unasked."""
    mounted = killpriv_mounted
    mounted.fs.write_bytes("f", b"x")
    os.stat(mounted.path("f"))  # the attributes are cached
    before = mounted.handle.stats()
    for owner in range(1000, 1010):
        os.chown(mounted.path("f"), owner, owner)
    during = mounted.handle.stats() - before
    assert during.counts["setattr"] == 10
    if _killpriv(mounted):
        assert "getattr" not in during.counts, during.summary()
    else:
        assert during.counts.get("getattr", 0) == 10, during.summary()


@pytest.mark.skipif(
    not os.access("/sys/class/bdi", os.W_OK), reason="the mount's readahead is root's to widen"
)
def test_a_sequential_read_asks_a_megabyte_at_a_time(mounted: Mounted) -> None:
    """The mount widens the kernel's readahead to 1 MiB: a file read in order, none of
    it in the page cache, takes a few READ requests rather than one per 128 KiB."""
    data = os.urandom(4 << 20)
    mounted.fs.write_bytes("big", data)  # through the API: the kernel caches none of it
    before = mounted.handle.stats()
    with open(mounted.path("big"), "rb", buffering=0) as reader:
        assert b"".join(iter(lambda: reader.read(1 << 20), b"")) == data
    assert (mounted.handle.stats() - before).counts["read"] <= 8  # 32 at 128 KiB each
