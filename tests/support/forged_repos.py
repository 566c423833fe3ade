"""Snapshot repositories built object by object: any tree, metadata record or blob,
behind the commits and refs ``git.load`` reads (see docs/git.md). Deterministic: the
same calls give the same object ids.

What persist writes for a directory is two trees: its workspace tree (files, links and
non-empty subdirectories, as git sees them) and its metadata tree (a ``meta`` JSON
blob, one record per entry, plus a ``d:<name>`` subtree per child directory).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pygit2
from pygit2.enums import ObjectType

from workspacefs import git as wgit

TreeEntry = tuple[bytes, int, pygit2.Oid]
"""(name, mode, id) of a tree entry, as ``git.encode_tree`` takes it."""
WORKSPACE = "ws"
TIME_NS = 1_700_000_000_000_000_000
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
_SIGNATURE = pygit2.Signature("forge", "forge@example.invalid", 1_700_000_000, 0)


def record(mode: int, **overrides: Any) -> dict[str, Any]:
    """The metadata record of one entry: owner 1000, fixed times, then ``overrides``."""
    found: dict[str, Any] = {"mode": mode, "uid": 1000, "gid": 1000}
    found |= {"atime": TIME_NS, "mtime": TIME_NS, "ctime": TIME_NS}
    if stat.S_ISREG(mode):
        found["size"] = 0
    return found | overrides


DIR = stat.S_IFDIR | 0o755
FILE = stat.S_IFREG | 0o644


class Forge:
    """A bare repository to forge snapshots in."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repo = pygit2.init_repository(str(path), bare=True)

    def blob(self, data: bytes) -> pygit2.Oid:
        return self.repo.create_blob(data)

    def big_blob(self, size: int, fill: bytes = b"\0") -> pygit2.Oid:
        """A blob of ``size`` bytes of ``fill`` repeated, written by ``git hash-object``
        from a file, which git streams into a pack (memory stays small whatever the
        size); a zero fill is a sparse file, so nothing is written to disk but the pack."""
        with tempfile.NamedTemporaryFile(dir=self.path) as source:
            if fill == b"\0":
                os.truncate(source.fileno(), size)
            else:
                block = fill * ((1 << 20) // len(fill))
                for start in range(0, size, len(block)):
                    source.write(block[: size - start])
                source.flush()
            done = subprocess.run(
                ["git", f"--git-dir={self.path}", "hash-object", "-w", source.name],
                capture_output=True,
                text=True,
                env=GIT_ENV,
                check=True,
            )
        return pygit2.Oid(hex=done.stdout.strip())

    def tree(self, entries: list[TreeEntry]) -> pygit2.Oid:
        oid: pygit2.Oid = self.repo.odb.write(ObjectType.TREE, wgit.encode_tree(entries))
        return oid

    def meta_tree(
        self, records: dict[str, Any] | bytes, subdirs: dict[str, pygit2.Oid] | None = None
    ) -> pygit2.Oid:
        """A directory's metadata tree: ``records`` as its ``meta`` blob (JSON, or raw
        bytes as given) and a ``d:<name>`` subtree for each of ``subdirs``."""
        data = records if isinstance(records, bytes) else _json(records)
        entries: list[TreeEntry] = [(b"meta", wgit.MODE_FILE, self.blob(data))]
        for name, oid in (subdirs or {}).items():
            entries.append((b"d:" + wgit.encode_name(name), wgit.MODE_TREE, oid))
        return self.tree(entries)

    def snapshot(
        self, tree: pygit2.Oid, meta: pygit2.Oid, *, number: int = 1, files: int = 0
    ) -> str:
        """Commit a snapshot of workspace ``ws`` (its metadata commit first) and point
        its refs at it; returns the snapshot ref."""
        meta_commit = self.repo.create_commit(
            None, _SIGNATURE, _SIGNATURE, f"workspacefs metadata {number}\n", meta, []
        )
        trailers = {
            "Snapshot-Id": str(uuid.UUID(int=number)),
            "Created-At": "2023-11-14T22:13:20+00:00",
            "Workspace": WORKSPACE,
            "Files": str(files),
            "Bytes": "0",
            "Workspacefs-Meta": str(meta_commit),
        }
        message = f"workspacefs snapshot {number}\n\n" + "".join(
            f"{key}: {value}\n" for key, value in trailers.items()
        )
        commit = self.repo.create_commit(None, _SIGNATURE, _SIGNATURE, message, tree, [])
        ref = f"refs/workspacefs/{WORKSPACE}/snapshots/{number}"
        self.repo.references.create(f"refs/workspacefs/{WORKSPACE}/meta/{number}", meta_commit)
        self.repo.references.create(ref, commit)
        return ref

    def root(self, entries: Mapping[str, tuple[dict[str, Any], pygit2.Oid | None]]) -> str:
        """A snapshot of one directory (the root): name -> (record, blob of a file or
        link, None for anything else, which must be an empty directory or a node
        only the metadata holds)."""
        records: dict[str, Any] = {".": record(DIR)}
        tree: list[TreeEntry] = []
        subdirs = {}
        for name, (entry, blob) in entries.items():
            records[name] = entry
            mode = entry["mode"] if isinstance(entry.get("mode"), int) else 0
            if stat.S_ISDIR(mode):
                subdirs[name] = self.meta_tree({})
            elif blob is not None:
                git_mode = wgit.MODE_LINK if stat.S_ISLNK(mode) else wgit.MODE_FILE
                tree.append((wgit.encode_name(name), git_mode, blob))
        files = sum(1 for entry, _ in entries.values() if entry.get("mode") != DIR)
        return self.snapshot(self.tree(tree), self.meta_tree(records, subdirs), files=files)


def _json(records: dict[str, Any]) -> bytes:
    return json.dumps(records, sort_keys=True).encode()


def bomb(forge: Forge, fanout: int, depth: int) -> str:
    """A snapshot whose directories expand to ``fanout ** depth`` leaves (and as many
    levels above): each level's metadata tree names the level below ``fanout``
    times, so the repository holds ``depth + 1`` directory records whatever the
    expansion. The directories are empty: only the metadata tree holds them."""
    level = forge.meta_tree({})
    for _ in range(depth):
        names = [f"d{i}" for i in range(fanout)]
        level = forge.meta_tree({name: record(DIR) for name in names}, dict.fromkeys(names, level))
    root_records = {".": record(DIR), "top": record(DIR)}
    root = forge.meta_tree(root_records, {"top": level})
    return forge.snapshot(forge.tree([]), root)
