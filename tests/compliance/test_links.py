"""One rule for symlinks on every backend: what ``list`` shows, ``exists`` and ``stat`` agree on.

A link whose target stays inside is followed; one that dangles, loops or
leaves the workspace is reported as a link to nothing, never followed.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from workspacefs import Filesystem, HostFilesystem, InMemoryFilesystem, InvalidArgumentError

LINKS = {
    "inside-file": "real/file.txt",
    "inside-dir": "real",
    "dangling": "real/missing.txt",
    "loop": "loop",
    "escape-rel": "../outside",
    "escape-abs": "/etc",
}
RESOLVES = {"inside-file": "file", "inside-dir": "dir"}


def in_memory(tmp_path: Path) -> Filesystem:
    fs = InMemoryFilesystem(mount_point="/workspace")
    fs.write("real/file.txt", "inside")
    tree = fs.tree
    with tree.lock:
        for name, target in LINKS.items():
            tree.symlink(1, name, target)
    return fs


def on_host(tmp_path: Path) -> Filesystem:
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "real" / "file.txt").write_text("inside")
    for name, target in LINKS.items():
        os.symlink(target, root / name)
    return HostFilesystem(root, mount_point="/workspace")


@pytest.fixture(params=[in_memory, on_host], ids=["memory", "host"])
def fs(request: pytest.FixtureRequest, tmp_path: Path) -> Filesystem:
    make: Callable[[Path], Filesystem] = request.param
    return make(tmp_path)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_list_exists_and_stat_agree(fs: Filesystem, name: str) -> None:
    listed = {entry.name: entry for entry in fs.list()}[name]
    info = fs.stat(name)
    kind = RESOLVES.get(name)
    assert fs.exists(name)
    assert listed.is_symlink
    assert info.is_symlink
    assert (listed.is_file, listed.is_directory) == (kind == "file", kind == "dir")
    assert (info.is_file, info.is_directory) == (kind == "file", kind == "dir")


@pytest.mark.parametrize("name", ["dangling", "loop", "escape-rel", "escape-abs"])
def test_links_to_nothing_are_not_followed(fs: Filesystem, name: str) -> None:
    with pytest.raises(OSError):
        fs.read(name)
    assert name not in {match.path for match in fs.glob("*/")}
    assert not fs.exists(f"{name}/anything")


def test_escaping_link_raises_permission_error(fs: Filesystem) -> None:
    with pytest.raises(PermissionError):
        fs.read("escape-rel")
    with pytest.raises(PermissionError):
        fs.read("escape-abs/passwd")


@pytest.mark.parametrize("name", sorted(LINKS))
def test_readlink_gives_the_target_as_written(fs: Filesystem, name: str) -> None:
    assert fs.readlink(name) == LINKS[name]
    assert fs.readlink(f"/workspace/{name}") == LINKS[name]


def test_readlink_of_what_is_no_link(fs: Filesystem) -> None:
    for path in ("real/file.txt", "real", "inside-dir/file.txt"):
        with pytest.raises(InvalidArgumentError, match="not a symlink") as raised:
            fs.readlink(path)
        assert raised.value.errno == errno.EINVAL
    with pytest.raises(FileNotFoundError):
        fs.readlink("missing")
    with pytest.raises(PermissionError):
        fs.readlink("../outside")
