"""One tree, two front doors: with kernel caching on, neither side ever reads stale data."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest
import trio

from workspacefs import InMemoryFilesystem, mount

from .conftest import Mounted


def test_api_writes_visible_through_mount(mounted: Mounted) -> None:
    path = Path(mounted.path("f.txt"))
    for round_ in range(200):
        text = f"version {round_} " + "x" * (round_ * 37 % 5000)
        mounted.fs.write("f.txt", text)
        assert path.read_text() == text  # page cache and attrs both refreshed
        assert path.stat().st_size == len(text)


def test_mount_writes_visible_to_api(mounted: Mounted) -> None:
    path = Path(mounted.path("g.txt"))
    for round_ in range(200):
        data = os.urandom(round_ * 11 % 3000 + 1)
        with open(path, "wb") as handle:
            handle.write(data)
        # Visible as soon as write(2) returned, before close.
        assert mounted.fs.read_bytes("g.txt").content == data


@pytest.mark.parametrize("seconds", [2**40, -(2**40)])
def test_any_time_the_mount_takes_the_api_shows(mounted: Mounted, seconds: int) -> None:
    # touch -d takes years past 9999 (and before 1): the kernel stores them, the API's
    # datetime cannot; it shows the nearest it can instead of failing every stat.
    path = mounted.root / "far.txt"
    path.write_text("far")
    os.utime(path, ns=(seconds * 10**9, seconds * 10**9))
    assert os.stat(path).st_mtime == seconds  # the mount keeps the time itself
    shown = mounted.fs.stat("far.txt").modified_at
    assert shown is not None
    assert shown.year == (9999 if seconds > 0 else 1)
    assert [entry.name for entry in mounted.fs.list()] == ["far.txt"]


def test_api_creates_deletes_and_renames_visible(mounted: Mounted) -> None:
    root = Path(mounted.root)
    assert not (root / "later.txt").exists()  # caches a negative entry
    mounted.fs.write("later.txt", "now")
    assert (root / "later.txt").read_text() == "now"
    assert sorted(os.listdir(root)) == ["later.txt"]
    mounted.fs.delete("later.txt")
    assert not (root / "later.txt").exists()
    assert os.listdir(root) == []
    mounted.fs.write("dir/a.txt", "a")
    assert (root / "dir" / "a.txt").read_text() == "a"
    mounted.fs.delete("dir", recursive=True)
    mounted.fs.write("dir", "now a file")
    assert (root / "dir").is_file()
    assert (root / "dir").read_text() == "now a file"


def test_read_only_mount_sees_api_writes(tmp_path: Path) -> None:
    """A read-only mount of the live tree is still kept coherent with the API's writes."""
    fs = InMemoryFilesystem()
    fs.write("d/f.txt", "one")
    with mount(fs, tmp_path, read_only=True):
        path = tmp_path / "d" / "f.txt"
        assert path.read_text() == "one"
        fs.write("d/f.txt", "two!")
        assert path.read_text() == "two!"
        assert path.stat().st_size == 4
        fs.delete("d/f.txt")
        assert not path.exists()


def test_restore_visible_through_mount(mounted: Mounted) -> None:
    root = Path(mounted.root)
    (root / "src").mkdir()
    for i in range(50):
        (root / f"src/f{i}.txt").write_text(f"original {i}")
    snapshot = mounted.fs.snapshot()
    for i in range(0, 50, 3):
        (root / f"src/f{i}.txt").write_text(f"edited {i}")
    (root / "src/new.txt").write_text("new")
    os.unlink(root / "src/f1.txt")
    os.rename(root / "src", root / "lib")
    # Warm the caches on the changed state.
    assert sorted(os.listdir(root)) == ["lib"]
    assert (root / "lib/f3.txt").read_text() == "edited 3"
    mounted.fs.restore(snapshot)
    assert sorted(os.listdir(root)) == ["src"]
    assert not (root / "lib").exists()
    assert not (root / "src/new.txt").exists()
    for i in range(50):
        assert (root / f"src/f{i}.txt").read_text() == f"original {i}"


def test_open_file_sees_restore(mounted: Mounted) -> None:
    path = Path(mounted.path("doc.txt"))
    path.write_text("first")
    snapshot = mounted.fs.snapshot()
    path.write_text("second version")
    with open(path) as handle:
        assert handle.read() == "second version"
        mounted.fs.restore(snapshot)
        handle.seek(0)
        assert handle.read() == "first"


def test_random_interleaving_has_no_stale_reads(mounted: Mounted) -> None:
    rng = random.Random(1234)
    root = Path(mounted.root)
    expected: dict[str, bytes] = {}
    snapshots: list[tuple[object, dict[str, bytes]]] = []
    names = [f"d{i % 3}/f{i}.bin" for i in range(12)]
    for step in range(400):
        name = rng.choice(names)
        action = rng.random()
        data = rng.randbytes(rng.choice([0, 1, 100, 5000, 70_000]))
        if action < 0.3:
            mounted.fs.write_bytes(name, data)
            expected[name] = data
        elif action < 0.6:
            (root / name).parent.mkdir(exist_ok=True)
            (root / name).write_bytes(data)
            expected[name] = data
        elif action < 0.7 and name in expected:
            if rng.random() < 0.5:
                mounted.fs.delete(name)
            else:
                os.unlink(root / name)
            del expected[name]
        elif action < 0.8:
            snapshots.append((mounted.fs.snapshot(), dict(expected)))
        elif action < 0.9 and snapshots:
            snapshot, state = rng.choice(snapshots)
            mounted.fs.restore(snapshot)  # type: ignore[arg-type]
            expected = dict(state)
        for check in names:
            through_kernel = (root / check).read_bytes() if (root / check).exists() else None
            through_api = mounted.fs.read_bytes(check).content if mounted.fs.exists(check) else None
            want = expected.get(check)
            assert through_kernel == want, f"stale read through the mount at step {step}"
            assert through_api == want, f"stale read through the API at step {step}"


@pytest.mark.trio
async def test_concurrent_shell_and_api_writers(mounted: Mounted) -> None:
    """Shell processes and API writes run at once; each file ends whole and consistent."""
    root = mounted.root

    async def shell_writer(index: int) -> None:
        script = (
            f"for i in $(seq 1 40); do printf 'shell {index} %s\\n' $i > {root}/s{index}.txt; done"
        )
        await trio.run_process(["sh", "-c", script])

    def api_writer() -> None:
        for i in range(200):
            mounted.fs.write(f"api{i % 5}.txt", f"api {i}\n")

    async with trio.open_nursery() as nursery:
        for index in range(3):
            nursery.start_soon(shell_writer, index)
        nursery.start_soon(trio.to_thread.run_sync, api_writer)
    for index in range(3):
        assert (root / f"s{index}.txt").read_text() == f"shell {index} 40\n"
        assert mounted.fs.read(f"s{index}.txt").content == f"shell {index} 40\n"
    for i in range(195, 200):
        assert (root / f"api{i % 5}.txt").read_text() == f"api {i}\n"
    listing = subprocess.run(["ls", root], capture_output=True, text=True, check=True)
    assert len(listing.stdout.split()) == 8


def test_api_changes_seen_through_cached_pages_listings_and_links(mounted: Mounted) -> None:
    """What the kernel keeps without asking (pages across opens, listings, link
    targets: everything, in open-free mode) is dropped when the API changes it."""
    root = Path(mounted.root)
    mounted.fs.write("d/a.txt", "one")
    mounted.fs.write("d/b.txt", "bee")
    os.symlink("a.txt", root / "d/link")
    snapshot = mounted.fs.snapshot()
    for _ in range(2):  # the second round is served from the kernel's caches
        assert (root / "d/a.txt").read_text() == "one"
        assert sorted(os.listdir(root / "d")) == ["a.txt", "b.txt", "link"]
        assert os.readlink(root / "d/link") == "a.txt"
    mounted.fs.write("d/a.txt", "two, longer")
    assert (root / "d/a.txt").read_text() == "two, longer"
    with open(root / "d/a.txt", "rb") as handle:
        mounted.fs.write("d/a.txt", "3")
        assert handle.read() == b"3"
    mounted.fs.delete("d/b.txt")
    mounted.fs.write("d/c.txt", "sea")
    assert sorted(os.listdir(root / "d")) == ["a.txt", "c.txt", "link"]
    mounted.fs.delete("d/link")
    os.symlink("c.txt", root / "d/link")
    assert os.readlink(root / "d/link") == "c.txt"
    mounted.fs.restore(snapshot)
    assert sorted(os.listdir(root / "d")) == ["a.txt", "b.txt", "link"]
    assert os.readlink(root / "d/link") == "a.txt"
    assert (root / "d/link").read_text() == "one"


@pytest.mark.parametrize("default_permissions", [True, False])
def test_appends_through_the_mount_follow_api_changes(
    tmp_path: Path, default_permissions: bool
) -> None:
    """O_APPEND writes land at the tree's end of file, also through a descriptor
    opened before the API grew or shrank the file (no open request then tells
    the mount the flag, and the kernel's cached size is stale), and what the
    mount reads afterwards is the tree's content."""
    fs = InMemoryFilesystem()
    # Without the kernel's checks, only the owner may be let in.
    private = not default_permissions
    with mount(fs, tmp_path, default_permissions=default_permissions, allow_other=not private):
        path = tmp_path / "log"
        path.write_text("start\n")
        expected = "start\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            for round_ in range(12):
                assert path.read_text() == expected  # the kernel caches size and pages
                if round_ % 3 == 2:
                    expected = expected[: len(expected) // 2]  # the API shrinks it
                else:
                    expected += f"api {round_}\n"
                fs.write("log", expected)
                os.write(fd, f"kept fd {round_}\n".encode())
                expected += f"kept fd {round_}\n"
                with open(path, "a") as log:  # a fresh descriptor
                    log.write(f"new fd {round_}\n")
                expected += f"new fd {round_}\n"
                assert fs.read("log").content == expected
                assert path.read_text() == expected
        finally:
            os.close(fd)
