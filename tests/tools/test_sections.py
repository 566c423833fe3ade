"""Workspace sections, find_filesystem, and coordinated snapshots of a session and a workspace."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from workspacefs import HostFilesystem, HostMount, InMemoryFilesystem, JsonSession
from workspacefs.tools import (
    HostWorkspace,
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolParams,
    ToolResult,
    VfsWorkspace,
    WorkspaceSection,
    WorkspaceSnapshots,
    coordinated_rollback,
    coordinated_snapshot,
    find_filesystem,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "notes.md").write_text("notes\n")
    (tmp_path / "secret.txt").write_text("secret\n")
    return root


def test_vfs_workspace_hydrates_and_offers_tools(project: Path, tmp_path: Path) -> None:
    section = VfsWorkspace(
        mounts=[HostMount("src", mount_path="code"), HostMount(str(project / "notes.md"))],
        allowed_host_roots=[project],
    )
    assert isinstance(section, WorkspaceSection)
    fs = section.filesystem
    assert fs.mount_point == "/workspace"
    assert fs.read("/workspace/code/main.py").content == "print('hi')\n"
    assert fs.read("notes.md").content == "notes\n"
    result = section.tools.call(
        "read_file", {"path": "/workspace/code/main.py"}, context=section.context(session="s")
    )
    assert result.message == "     1\tprint('hi')"
    assert section.snapshots is WorkspaceSnapshots.of(fs)
    record = section.snapshots.snapshot("hydrated")
    section.tools.call("rm", {"path": "code", "recursive": True}, context=section.context())
    assert section.tools.call(
        "restore", {"id_or_tag": "hydrated"}, context=section.context()
    ).success
    assert fs.exists("code/main.py")
    assert section.snapshots.find(str(record.snapshot_id)[:8]) == record
    with pytest.raises(PermissionError):
        VfsWorkspace(mounts=[HostMount(str(tmp_path / "secret.txt"))], allowed_host_roots=[project])


def test_vfs_workspace_read_only(project: Path) -> None:
    section = VfsWorkspace([HostMount("src")], [project], read_only=True)
    result = section.tools.call(
        "write_file", {"path": "src/x.py", "content": ""}, context=section.context()
    )
    assert result.message == "Cannot write `src/x.py`: the workspace is read-only."


class ShellParams(ToolParams):
    command: str


def fake_shell(params: ShellParams, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult.ok(f"ran {params.command} in {context.workspace().root}")


def test_host_workspace(project: Path, tmp_path: Path) -> None:
    host = HostFilesystem(project, snapshot_strategy="git", git_dir=tmp_path / "git")
    section = HostWorkspace(host)
    assert section.root == str(project.resolve())
    section.tools.add(Tool("shell", "Run a command.", ShellParams, fake_shell, ToolAnnotations()))
    assert section.tools.names[-1] == "shell"
    shell = section.tools.call("shell", {"command": "ls"}, context=section.context())
    assert shell.message == f"ran ls in {project.resolve()}"
    section.tools.call("write_file", {"path": "new.txt", "content": "n"}, context=section.context())
    assert (project / "new.txt").read_text() == "n"
    host.cleanup()
    with pytest.raises(NotADirectoryError):
        HostWorkspace(InMemoryFilesystem())


@dataclass
class Section:
    name: str
    children: list[object] = field(default_factory=list)


@dataclass
class Holder:
    filesystem: object
    sections: list[object] = field(default_factory=list)


def test_find_filesystem_is_depth_first() -> None:
    first, second = InMemoryFilesystem(), InMemoryFilesystem()
    tree = [
        Section("intro"),
        Section("body", [Section("deep", [Holder(first)]), Holder(second)]),
        Holder(InMemoryFilesystem()),
    ]
    assert find_filesystem(tree) is first
    assert find_filesystem([Holder("not a filesystem", [Holder(second)])]) is second
    assert find_filesystem([Section("none", [Section("empty")])]) is None
    loop = Section("loop")
    loop.children.append(loop)
    assert find_filesystem([loop]) is None


class FailingRestore(InMemoryFilesystem):
    def restore(self, snapshot: object, *, if_unchanged_since: object = None) -> None:
        raise PermissionError(13, "denied", "/")


def test_coordinated_snapshot_and_rollback() -> None:
    fs = InMemoryFilesystem()
    snapshots = WorkspaceSnapshots.of(fs)
    session = JsonSession({"messages": ["hello"]})
    fs.write("a.txt", "one")
    checkpoint = coordinated_snapshot(session, snapshots, tag="turn-1")
    assert checkpoint.snapshot_id == checkpoint.filesystem.snapshot_id
    assert checkpoint.filesystem.tag == "turn-1"
    session.state["messages"].append("more")
    fs.write("a.txt", "two")
    coordinated_rollback(session, snapshots, checkpoint)
    assert session.state == {"messages": ["hello"]}
    assert fs.read("a.txt").content == "one"


def test_a_coordinated_snapshot_that_fails_leaves_no_filesystem_snapshot() -> None:
    fs = InMemoryFilesystem()
    snapshots = WorkspaceSnapshots.of(fs)
    session = JsonSession({"messages": ["hello"]})
    session.state["handle"] = {1, 2}  # a set: no JSON, so the session cannot be captured
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        coordinated_snapshot(session, snapshots, tag="turn-1")
    assert not fs.snapshots()
    assert not snapshots.list()
    del session.state["handle"]
    checkpoint = coordinated_snapshot(session, snapshots, tag="turn-1")  # the tag is free
    assert [r.tag for r in fs.snapshots()] == ["turn-1"] == [checkpoint.filesystem.tag]


def test_coordinated_rollback_is_all_or_nothing() -> None:
    fs = FailingRestore()
    snapshots = WorkspaceSnapshots(fs)
    session = JsonSession({"turn": 1})
    checkpoint = coordinated_snapshot(session, snapshots)
    session.state["turn"] = 2
    with pytest.raises(PermissionError):
        coordinated_rollback(session, snapshots, checkpoint)
    assert session.state == {"turn": 2}


def test_coordinated_order() -> None:
    """Filesystem first on snapshot, session first on rollback (seed 003)."""
    order: list[str] = []
    fs = InMemoryFilesystem()

    class Recording(WorkspaceSnapshots):
        def snapshot(self, tag: str | None = None):  # type: ignore[no-untyped-def]
            order.append("fs")
            return super().snapshot(tag)

        def restore(self, ref, *, if_unchanged_since=None):  # type: ignore[no-untyped-def]
            order.append("fs")
            return super().restore(ref, if_unchanged_since=if_unchanged_since)

    class Session(JsonSession):
        def snapshot_state(self):  # type: ignore[no-untyped-def]
            order.append("session")
            return super().snapshot_state()

        def rollback_state(self, state):  # type: ignore[no-untyped-def]
            order.append("session")
            super().rollback_state(state)

    snapshots, session = Recording(fs), Session()
    checkpoint = coordinated_snapshot(session, snapshots)
    assert order == ["fs", "session"]
    order.clear()
    coordinated_rollback(session, snapshots, checkpoint)
    assert order == ["session", "session", "fs"]  # current state saved, rolled back, then fs
