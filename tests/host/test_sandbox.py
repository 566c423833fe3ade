"""HostFilesystem stays inside its root: the escape table, and a symlink swapped in mid-call."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from workspacefs import HostFilesystem
from workspacefs.fs import DirectoryBackend, locate
from workspacefs.fs._backend import Entry
from workspacefs.posix import openat2_available
from workspacefs.posix._descriptors import _openat2


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "inside").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "inside" / "ok.txt").write_text("ok")
    os.symlink(outside, root / "abs-dir")
    os.symlink("../outside", root / "rel-dir")
    os.symlink(outside / "secret.txt", root / "abs-file")
    os.symlink("../../outside/secret.txt", root / "inside" / "rel-file")
    os.symlink("hop2", root / "hop1")
    os.symlink("../outside/new.txt", root / "hop2")
    os.symlink(outside / "not-yet.txt", root / "dangling-out")
    os.symlink("inside/ok.txt", root / "good-link")
    os.symlink("/workspace/inside", root / "mapped")
    os.symlink(outside, root / "inside" / "abs-sub")  # links below the root's own level
    os.symlink("../../outside", root / "inside" / "rel-sub")
    return root, outside


ATTACKS: dict[str, Callable[[HostFilesystem], object]] = {
    "dot-dot read": lambda fs: fs.read("../outside/secret.txt"),
    "dot-dot write": lambda fs: fs.write("inside/../../outside/x.txt", "x"),
    "absolute outside mount point": lambda fs: fs.read("/etc/passwd"),
    "absolute host path of the root": lambda fs: fs.read(f"{fs.root}/inside/ok.txt"),
    "symlinked dir, absolute": lambda fs: fs.write("abs-dir/x.txt", "x"),
    "symlinked dir, relative": lambda fs: fs.read("rel-dir/secret.txt"),
    "symlinked file, absolute": lambda fs: fs.read("abs-file"),
    "symlinked file, relative": lambda fs: fs.write("inside/rel-file", "overwrite"),
    "symlink chain": lambda fs: fs.write("hop1", "x"),
    "dangling symlink out": lambda fs: fs.write("dangling-out", "x"),
    "list through symlink": lambda fs: fs.list("abs-dir"),
    "mkdir through symlink": lambda fs: fs.mkdir("rel-dir/new"),
    "delete through symlinked dir": lambda fs: fs.delete("abs-dir/secret.txt"),
    "grep through symlink": lambda fs: fs.grep("secret", path="abs-dir"),
    "nested symlinked dir, absolute": lambda fs: fs.write("inside/abs-sub/x.txt", "x"),
    "nested symlinked dir, relative": lambda fs: fs.read("inside/rel-sub/secret.txt"),
    "stat through nested symlink": lambda fs: fs.stat("inside/abs-sub/secret.txt"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_escape_refused_and_nothing_outside_changes(attack: str, world: tuple[Path, Path]) -> None:
    root, outside = world
    fs = HostFilesystem(root, mount_point="/workspace")
    before = sorted(outside.rglob("*"))
    with pytest.raises(PermissionError):
        ATTACKS[attack](fs)
    assert sorted(outside.rglob("*")) == before
    assert (outside / "secret.txt").read_text() == "secret"


def test_symlinks_that_stay_inside_work(world: tuple[Path, Path]) -> None:
    root, _ = world
    fs = HostFilesystem(root, mount_point="/workspace")
    assert fs.read("good-link").content == "ok"
    assert fs.read("mapped/ok.txt").content == "ok"  # absolute, under the mount point
    assert fs.stat("good-link").is_symlink
    names = {e.name: e for e in fs.list()}
    assert names["good-link"].is_file
    assert not names["abs-dir"].is_directory  # points outside: neither


def test_globs_do_not_follow_escaping_links(world: tuple[Path, Path]) -> None:
    root, _ = world
    fs = HostFilesystem(root, mount_point="/workspace")
    assert "abs-dir/secret.txt" not in [m.path for m in fs.glob("**")]
    assert fs.grep("secret") == []


def test_recursive_delete_removes_links_not_targets(world: tuple[Path, Path]) -> None:
    root, outside = world
    fs = HostFilesystem(root)
    fs.delete("abs-dir")  # a symlink is a file to delete
    (root / "tree").mkdir()
    os.symlink(outside, root / "tree" / "link")
    fs.delete("tree", recursive=True)
    assert (outside / "secret.txt").read_text() == "secret"
    assert not (root / "tree").exists()


def test_directory_swapped_for_symlink_mid_call(world: tuple[Path, Path]) -> None:
    """The walk holds descriptors: swapping a directory afterwards cannot redirect it."""
    root, outside = world
    (root / "work").mkdir()
    with locate(DirectoryBackend(str(root)), "work/new.txt") as located:
        os.rename(root / "work", root / "work-moved")
        os.symlink(outside, root / "work")  # the attacker's swap
        fd = os.open(
            located.name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644, dir_fd=located.parent
        )
        os.close(fd)
    assert not (outside / "new.txt").exists()
    assert (root / "work-moved" / "new.txt").exists()


def test_final_component_swapped_for_symlink_is_not_followed(world: tuple[Path, Path]) -> None:
    root, outside = world
    fs = HostFilesystem(root)
    (root / "inside" / "target.txt").write_text("mine")
    os.unlink(root / "inside" / "target.txt")
    os.symlink(outside / "secret.txt", root / "inside" / "target.txt")
    with pytest.raises(PermissionError):
        fs.write("inside/target.txt", "overwrite")
    assert (outside / "secret.txt").read_text() == "secret"


class _Counting(DirectoryBackend):
    entered = 0

    def enter(self, directory: int, name: str, entry: Entry) -> int:
        self.entered += 1
        return super().enter(directory, name, entry)


@pytest.mark.parametrize("one_step", [True, False], ids=["openat2", "component-walk"])
def test_a_path_through_directories_resolves_in_one_step_and_a_link_is_walked(
    world: tuple[Path, Path], one_step: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = world
    if one_step and not openat2_available():
        pytest.skip("openat2 is refused here (seccomp, or a kernel before 5.6)")
    monkeypatch.setattr(_openat2, "usable", one_step)
    (root / "inside" / "deep").mkdir()
    (root / "inside" / "deep" / "f.txt").write_text("deep")
    os.symlink("deep", root / "inside" / "near")  # stays inside: followed by the walk
    backend = _Counting(str(root))
    with locate(backend, "inside/deep/f.txt") as at:
        assert at.entry is not None
        assert at.entry.size == 4
    assert backend.entered == (0 if one_step else 2)  # openat2 took the directories
    with locate(backend, "inside/near/f.txt") as at:
        assert at.entry is not None
        assert at.entry.size == 4
    fs = HostFilesystem(root)
    assert fs.read("inside/near/f.txt").content == "deep"
    assert fs.stat("inside/deep/f.txt").size_bytes == 4
    with pytest.raises(FileNotFoundError):
        fs.stat("inside/missing/f.txt")
    with pytest.raises(NotADirectoryError):
        fs.stat("inside/ok.txt/f.txt")


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        HostFilesystem(tmp_path / "file")
