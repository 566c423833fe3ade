"""What ``open_target`` makes of a path, and what it refuses."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pygit2
import pytest

from workspacefs import InMemoryFilesystem, InvalidArgumentError, JsonSession, NotFoundError, git
from workspacefs.archive import SessionCheckpoints, export_archive
from workspacefs.debug import ArchivesTarget, GitTarget, open_target

from .conftest import Stores


def test_each_kind_of_path(stores: Stores, tmp_path: Path) -> None:
    root = stores.root
    kinds = {
        root / "dumps" / "session-middle.jsonl": ("session", ["session-middle"]),
        root / "dumps" / "session-last.fs.zip": ("session", ["session-last"]),
        root / "archives" / "step-start.zip": ("archive", ["step-start"]),
        root / "archives": ("archives", ["step-start", "step-middle", "step-last"]),
        root / "dumps": ("archives", ["session-start", "session-middle", "session-last"]),
        root / "checkpoints": ("checkpoints", ["cp-start", "cp-middle", "cp-last"]),
        root / "repo.git": ("git", [str(s.snapshot_id) for s in stores.snapshots.values()]),
    }
    for path, (kind, ids) in kinds.items():
        target = open_target(path)
        assert target.info().kind == kind, path
        assert [s.id for s in target.snapshots()] == ids, path
        target.close()
    # A lone archive named like a dump, without its journal, is just an archive.
    lone = shutil.copy(root / "dumps" / "session-last.fs.zip", tmp_path / "x.fs.zip")
    assert open_target(lone).info().kind == "archive"


def test_a_session_dump_shows_its_state(stores: Stores) -> None:
    target = open_target(stores.root / "dumps" / "session-middle.jsonl")
    details = target.details("session-middle")
    assert details["session"]["state"] == {"messages": ["did start", "did middle"]}
    assert details["session"]["filesystem"]["filesystem_key"] == "workspace"


def test_nothing_to_debug(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no such file"):
        open_target(tmp_path / "missing")
    with pytest.raises(NotFoundError, match="no archives"):
        open_target(tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InvalidArgumentError, match="not a session dump"):
        open_target(tmp_path / "notes.txt")
    (tmp_path / "s.jsonl").write_text('{"kind": "header", "id": "s"}\n')
    # A session dumped without its filesystem (seed 003) opens, holding no snapshot.
    assert open_target(tmp_path / "s.jsonl").snapshots() == []


def test_git_repository_choices(tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    pygit2.init_repository(str(repo), bare=True)
    with pytest.raises(NotFoundError, match="no persisted workspace"):
        open_target(repo)
    for name in ("alpha", "beta"):
        fs = InMemoryFilesystem(workspace_id=name)
        fs.write("who.txt", name)
        git.persist(fs, fs.snapshot(), repo)
    with pytest.raises(InvalidArgumentError, match=r"2 workspaces \(alpha, beta\)"):
        open_target(repo)
    target = open_target(repo, workspace="beta")
    assert isinstance(target, GitTarget)
    [snapshot] = target.snapshots()
    assert target.read(snapshot.id, "who.txt", 100) == b"beta"
    assert target.info().details["workspaces"] == ["alpha", "beta"]
    with pytest.raises(LookupError):
        open_target(repo, workspace="gamma")


def test_a_work_tree_is_not_a_persisted_repository(tmp_path: Path) -> None:
    pygit2.init_repository(str(tmp_path / "work"))
    with pytest.raises(InvalidArgumentError, match="bare repository"):
        GitTarget(tmp_path / "work" / ".git")


def test_checkpoints_of_several_filesystems(tmp_path: Path) -> None:
    one, two = InMemoryFilesystem(), InMemoryFilesystem()
    one.write("one.txt", "1")
    two.write("two.txt", "2")
    SessionCheckpoints(JsonSession(), {"code": one, "data": two}, tmp_path).checkpoint("c1")
    with pytest.raises(InvalidArgumentError, match="2 filesystems"):
        open_target(tmp_path)
    target = open_target(tmp_path, filesystem="data")
    assert isinstance(target, ArchivesTarget)
    assert [e.path for e in target.list("c1", "")] == ["two.txt"]
    with pytest.raises(NotFoundError, match="no filesystem 'logs'"):
        open_target(tmp_path, filesystem="logs")


def test_indexes_are_kept_a_few_at_a_time(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    for number in range(6):
        fs.write("n.txt", str(number))
        export_archive(fs, tmp_path / f"s{number}.zip")
    target = open_target(tmp_path)
    for number in range(6):
        assert target.read(f"s{number}", "n.txt", 10) == str(number).encode()
    stream = target.blocks("s0", "n.txt")  # opened now, read after s0's index is dropped
    for number in range(1, 6):
        target.list(f"s{number}", "")
    assert b"".join(stream) == b"0"
    assert target.diff("s0", "s5").modified == ("n.txt",)


def test_a_running_workspace_through_connect(tmp_path: Path) -> None:
    fs = InMemoryFilesystem(workspace_id="running")
    fs.write("a.txt", "a")
    fs.snapshot(tag="one")
    with socket.socket(socket.AF_UNIX) as control:
        control.bind(str(tmp_path / "ws.sock"))
        asked: list[str] = []

        def connect(path: str) -> InMemoryFilesystem:
            asked.append(path)
            return fs

        target = open_target(tmp_path / "ws.sock", connect=connect)
        assert asked == [str(tmp_path / "ws.sock")]
        assert target.info().kind == "live"
        assert target.info().location == str(tmp_path / "ws.sock")
        assert [s.tag for s in target.snapshots()] == ["one", None]
        with pytest.raises(InvalidArgumentError, match="`workspacefs debug` connects"):
            open_target(tmp_path / "ws.sock")


def test_a_mount_point_that_is_no_workspace_is_a_directory() -> None:
    def connect(path: str) -> InMemoryFilesystem:
        raise NotFoundError("no running workspace here", path)

    with pytest.raises(NotFoundError, match="no archives"):
        open_target("/proc", connect=connect)
