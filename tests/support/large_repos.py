"""Snapshot repositories large enough that ``git.load(background=True)`` serves them
while it lists them (more distinct entries than ``git._deferred.EAGER_ENTRIES``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from workspacefs import InMemoryFilesystem
from workspacefs import git as wgit
from workspacefs.git._deferred import EAGER_ENTRIES

from .forged_repos import DIR, FILE, Forge, record

WORKSPACE = "big"
MANIFESTS = ("package.json", "pyproject.toml", "uv.lock")
SOURCE_DIRS, SOURCES_EACH = 20, 100
DATA_DIRS, DATA_EACH = 90, 100


def content(path: str) -> bytes:
    """The bytes of the file at ``path`` (distinct for every path)."""
    return f"{path}\n".encode() * 3


def large_repo(path: Path) -> Path:
    """A repository whose snapshot ``v1`` of workspace ``big`` holds about 11,000 files:
    manifests at the root, sources under ``src/`` (``src/p<d>/m<i>.py``, with a nested
    ``src/p<d>/sub/``), data under ``data/`` (``data/d<d>/f<i>.bin``), and one of each
    kind besides: a symlink, an executable, an extended attribute, a hard link across
    directories, an empty directory."""
    fs = InMemoryFilesystem(workspace_id=WORKSPACE)
    with fs.transaction() as tree:
        root = 1
        for name in MANIFESTS:
            tree.write(tree.create(root, name), 0, content(name))
        tree.write(tree.create(root, "README.md"), 0, content("README.md"))
        for d in range(SOURCE_DIRS):
            directory = tree.make_dirs(f"src/p{d}")
            for i in range(SOURCES_EACH):
                tree.write(tree.create(directory, f"m{i}.py"), 0, content(f"src/p{d}/m{i}.py"))
            sub = tree.mkdir(directory, "sub")
            tree.write(tree.create(sub, "deep.py"), 0, content(f"src/p{d}/sub/deep.py"))
        for d in range(DATA_DIRS):
            directory = tree.make_dirs(f"data/d{d}")
            for i in range(DATA_EACH):
                tree.write(tree.create(directory, f"f{i}.bin"), 0, content(f"data/d{d}/f{i}.bin"))
        tree.symlink(root, "readme-link", "README.md")
        bin_dir = tree.mkdir(root, "bin")
        run = tree.create(bin_dir, "run.sh", 0o755)
        tree.write(run, 0, b"#!/bin/sh\necho run\n")
        tree.setxattr(run, b"user.kind", b"script")
        tree.link(
            tree.resolve_path("data/d0/f0.bin") or 0, tree.resolve_path("src/p0") or 0, "alias.bin"
        )
        tree.mkdir(root, "empty")
    assert fs.tree.file_count > EAGER_ENTRIES
    wgit.persist(fs, fs.snapshot(tag="v1"), path)
    return path


def damaged_repo(path: Path) -> str:
    """A forged snapshot of 110 directories of 100 empty files each (named apart, so no
    two records are the same), and ``a-bad``, whose record gives a file an owner no
    kernel takes (uid 2^40), read after the others by a count of the snapshot; its ref."""
    forge = Forge(path)
    empty = forge.blob(b"")
    records: dict[str, object] = {".": record(DIR), "a-bad": record(DIR)}
    subdirs = {"a-bad": forge.meta_tree({"f": record(FILE, uid=1 << 40)})}
    tree = [(b"a-bad", wgit.MODE_TREE, forge.tree([(b"f", wgit.MODE_FILE, empty)]))]
    for d in range(110):
        name = f"d{d:03}"
        files = sorted(f"f{d}-{i:03}" for i in range(100))
        listed = [(wgit.encode_name(f), wgit.MODE_FILE, empty) for f in files]
        records[name] = record(DIR)
        subdirs[name] = forge.meta_tree({f: record(FILE) for f in files})
        tree.append((wgit.encode_name(name), wgit.MODE_TREE, forge.tree(listed)))
    return forge.snapshot(forge.tree(tree), forge.meta_tree(records, subdirs), files=11_001)


def resident(fs: InMemoryFilesystem, path: str) -> bool:
    """True if the data of the file at ``path`` is in memory (read by someone)."""
    with fs.tree.lock:
        node = fs.tree.node(fs.tree.resolve_path(path) or 0)
        assert stat.S_ISREG(node.mode), path
        return node.absent() is None  # type: ignore[attr-defined]


def os_walk_files(root: Path) -> list[str]:
    """Every file and symlink below ``root`` (``ls -R``, through ``os.walk``)."""
    found = []
    for base, _, names in os.walk(root):
        found += [os.path.relpath(os.path.join(base, name), root) for name in names]
    return sorted(found)
