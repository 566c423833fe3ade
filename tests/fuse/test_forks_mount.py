"""Forks served by the workspace's mount at ``/.forks/<name>``: apart, coherent, hidden.

(``test_fork_suites.py`` runs the mount's own suites on a fork; this module
checks what is particular to forks.)
"""

from __future__ import annotations

import errno
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from support.polling import eventually
from workspacefs import (
    BackendUnavailableError,
    InMemoryFilesystem,
    MountLostError,
    NoSpaceError,
    mount,
)
from workspacefs.tree import ROOT_INO

from .conftest import Mounted
from .test_lost_mount import abort_connection


@pytest.fixture
def origin(mounted: Mounted) -> InMemoryFilesystem:
    mounted.fs.write("src/app.py", "origin\n")
    return mounted.fs


def sh(script: str, cwd: Path | str) -> str:
    done = subprocess.run(["sh", "-c", script], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_fork_and_its_origin_are_apart_both_ways(
    mounted: Mounted, origin: InMemoryFilesystem
) -> None:
    fork = origin.fork()
    path = Path(mounted.handle.add_fork("f", fork))
    assert path == mounted.root / ".forks" / "f"
    assert mounted.handle.fork_path("f") == str(path)
    assert mounted.handle.forks() == {"f": fork}
    sh("echo fork > src/app.py && echo new > src/new.txt && mkdir build", path)
    sh("echo origin2 >> src/app.py && rm -f src/new.txt && touch only-origin", mounted.root)
    assert (path / "src/app.py").read_text() == "fork\n"
    assert sorted(os.listdir(path)) == ["build", "src"]
    assert (mounted.root / "src/app.py").read_text() == "origin\norigin2\n"
    assert sorted(os.listdir(mounted.root)) == ["only-origin", "src"]
    assert fork.read("src/new.txt").content == "new\n"
    assert not origin.exists("src/new.txt")
    assert not fork.exists("only-origin")
    # The same file is a different inode in each.
    assert os.stat(path / "src/app.py").st_ino != os.stat(mounted.root / "src/app.py").st_ino


def test_renames_and_links_between_workspaces_are_exdev(
    mounted: Mounted, origin: InMemoryFilesystem
) -> None:
    fork = origin.fork()
    path = Path(mounted.handle.add_fork("f", fork))
    actions: list[Callable[[], None]] = [
        lambda: os.rename(path / "src/app.py", mounted.root / "moved.py"),
        lambda: os.rename(mounted.root / "src", path / "src2"),
        lambda: os.link(path / "src/app.py", mounted.root / "linked.py"),
    ]
    for action in actions:
        with pytest.raises(OSError) as caught:
            action()
        assert caught.value.errno == errno.EXDEV
    # mv copies across, as between two filesystems.
    sh(f"mv '{path}/src/app.py' '{mounted.root}/moved.py'", mounted.root)
    assert origin.read("moved.py").content == "origin\n"
    assert not fork.exists("src/app.py")
    assert origin.exists("src/app.py")


def test_forks_are_hidden_from_listings(mounted: Mounted, origin: InMemoryFilesystem) -> None:
    mounted.handle.add_fork("a", origin.fork())
    mounted.handle.add_fork("b", origin.fork())
    assert sorted(os.listdir(mounted.root)) == ["src"]
    assert ".forks" not in sh("ls -a", mounted.root)
    assert sh("find . | sort", mounted.root).split() == [".", "./src", "./src/app.py"]
    assert sorted(os.listdir(mounted.root / ".forks")) == ["a", "b"]
    assert sh("ls .forks/a/src", mounted.root) == "app.py\n"
    listing = os.stat(mounted.root / ".forks")
    assert listing.st_mode & 0o777 == 0o555
    with pytest.raises(OSError) as caught:
        os.mkdir(mounted.root / ".forks" / "c")
    assert caught.value.errno == errno.EROFS


def test_no_root_gets_a_hidden_name_through_the_mount(
    mounted: Mounted, origin: InMemoryFilesystem
) -> None:
    """Neither a fork's root nor the workspace's gets a new entry named ``.forks`` or
    ``.snapshots`` through the mount (a container has those masked, and a real entry
    would take the mask's place); the API, the owner's door, still may."""
    fork = origin.fork()
    path = Path(mounted.handle.add_fork("f", fork))
    for root in (path, mounted.root):
        (root / "d").mkdir()
        (root / "file").write_text("x")
        for name in (".forks", ".snapshots"):
            target = root / name
            attempts: list[Callable[[Path, Path], object]] = [
                lambda _, at: os.mkdir(at),
                lambda _, at: at.write_text("x"),
                lambda _, at: os.symlink("d", at),
                lambda root, at: os.link(root / "file", at),
                lambda root, at: os.rename(root / "d", at),
                lambda _, at: os.mkfifo(at),
            ]
            for attempt in attempts:
                with pytest.raises(OSError) as caught:
                    attempt(root, target)
                if root == path:  # the workspace's root has the hidden directory there
                    assert caught.value.errno == errno.EPERM
    assert sorted(e.name for e in fork.list(".")) == ["d", "file", "src"]
    assert sorted(e.name for e in origin.list(".")) == ["d", "file", "src"]
    assert sh("mkdir -p sub/.forks && ls -a sub", path).split() == [".", "..", ".forks"]
    fork.write(".forks/real.txt", "the API may")
    assert os.listdir(path / ".forks") == ["real.txt"]
    os.rename(path / "file", path / ".forks" / "moved")  # in it, anything goes
    assert fork.exists(".forks/moved")


def test_api_writes_to_forks_are_seen_through_their_paths(
    mounted: Mounted, origin: InMemoryFilesystem
) -> None:
    forks = [origin.fork(), origin.fork()]
    paths = [Path(mounted.handle.add_fork(f"f{i}", fork)) for i, fork in enumerate(forks)]
    for round_ in range(50):
        for i, (fork, path) in enumerate(zip(forks, paths, strict=True)):
            text = f"fork {i} round {round_} " + "x" * (round_ * 37 % 3000)
            assert not (path / f"new{round_}").exists()  # a negative entry, cached
            fork.write("src/app.py", text)
            fork.write(f"new{round_}", "n")
            assert (path / "src/app.py").read_text() == text  # pages and attributes dropped
            assert (path / f"new{round_}").read_text() == "n"
            if round_ % 10 == 9:
                fork.delete(f"new{round_ - 1}")
                assert not (path / f"new{round_ - 1}").exists()
    assert (mounted.root / "src/app.py").read_text() == "origin\n"
    assert sorted(os.listdir(mounted.root)) == ["src"]
    # A restore of a fork is seen through its path, as a workspace's.
    before = forks[0].snapshot()
    forks[0].delete("src", recursive=True)
    assert not (paths[0] / "src").exists()
    forks[0].restore(before)
    assert (paths[0] / "src/app.py").exists()


def test_a_removed_fork_goes_at_once_and_is_let_go_when_closed(
    mounted: Mounted, origin: InMemoryFilesystem
) -> None:
    fork = origin.fork()
    path = Path(mounted.handle.add_fork("f", fork))
    handle = open(path / "open.txt", "w")  # noqa: SIM115  (kept open across the removal)
    try:
        handle.write("before ")
        handle.flush()
        assert mounted.handle.remove_fork("f") is fork
        assert not path.exists()
        assert mounted.handle.forks() == {}
        handle.write("after")  # what the kernel holds keeps working
        handle.flush()
        assert fork.read("open.txt").content == "before after"
        assert fork.tree.held(fork.tree.resolve_path("open.txt") or 0)
    finally:
        handle.close()
    # The kernel sends FORGET on its own time.
    eventually(lambda: not fork.tree.orphans and not fork.tree.held(ROOT_INO), 10, "forgotten")
    fork.write("later.txt", "the API goes on")
    with pytest.raises(FileNotFoundError):
        mounted.handle.remove_fork("f")
    again = Path(mounted.handle.add_fork("f", origin.fork()))
    assert sorted(os.listdir(again)) == ["src"]


def test_the_budget_is_the_familys(mounted: Mounted, origin: InMemoryFilesystem) -> None:
    fork = origin.fork()
    path = Path(mounted.handle.add_fork("f", fork))
    origin.memory_budget = origin.memory_usage().held + (1 << 20)
    with pytest.raises(OSError) as caught:
        (path / "big").write_bytes(b"x" * (2 << 20))
    assert caught.value.errno == errno.ENOSPC
    with pytest.raises(NoSpaceError):
        origin.write_bytes("big", b"x" * (2 << 20))
    (path / "big").unlink()
    (path / "small").write_bytes(b"x" * (100 << 10))
    origin.write_bytes("small", b"y" * (100 << 10))


def test_unmounting_leaves_every_fork_usable(tmp_path: Path) -> None:
    origin = InMemoryFilesystem()
    origin.write("a.txt", "a")
    fork = origin.fork()
    with mount(origin, tmp_path) as handle:
        path = Path(handle.add_fork("f", fork))
        (path / "b.txt").write_text("b")
        held = open(path / "b.txt")  # noqa: SIM115  (open at the unmount)
    held.close()
    assert not os.path.ismount(tmp_path)
    with pytest.raises(BackendUnavailableError):
        handle.add_fork("g", origin.fork())
    fork.write("c.txt", "c")
    assert sorted(e.name for e in fork.list(".")) == ["a.txt", "b.txt", "c.txt"]
    assert not fork.tree.held(ROOT_INO)
    with mount(origin, tmp_path) as handle:
        path = Path(handle.add_fork("f", fork))
        assert sorted(os.listdir(path)) == ["a.txt", "b.txt", "c.txt"]


def test_a_read_only_mount_serves_forks_read_only(tmp_path: Path) -> None:
    origin = InMemoryFilesystem()
    origin.write("a.txt", "a")
    fork = origin.fork()
    with mount(origin, tmp_path, read_only=True) as handle:
        path = Path(handle.add_fork("f", fork))
        assert (path / "a.txt").read_text() == "a"
        with pytest.raises(OSError) as caught:
            (path / "b.txt").write_text("b")
        assert caught.value.errno == errno.EROFS
        fork.write("b.txt", "API")
        assert (path / "b.txt").read_text() == "API"


@pytest.mark.skipif(
    not os.path.ismount("/sys/fs/fuse/connections"), reason="fusectl is not mounted"
)
@pytest.mark.logs_errors("the FUSE loop serving .* died")
def test_a_lost_mount_stops_its_forks_api_too(tmp_path: Path) -> None:
    origin = InMemoryFilesystem()
    fork = origin.fork()
    told = threading.Event()

    def while_mounted() -> None:
        with mount(origin, tmp_path, on_lost=lambda _: told.set()) as handle:
            handle.add_fork("f", fork)
            abort_connection(tmp_path)
            assert told.wait(10)
            with pytest.raises(MountLostError):
                fork.write("x", "lost?")

    with pytest.raises(MountLostError):
        while_mounted()
    fork.write("x", "after the mount was left")
    assert fork.read("x").content == "after the mount was left"
