"""Snapshots of tool calls persist: ``UndoableToolset`` tags ``undo:<tool>:<call>``.

A tag names a ref ``refs/workspacefs/<workspace>/tags/<tag>``. Git refuses
``:`` in ref names, so the ref spells it ``%3A``; the snapshot commit keeps
the tag as it is.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest

from workspacefs import InMemoryFilesystem, InvalidArgumentError
from workspacefs import git as wgit
from workspacefs.fs import call_history, rewind
from workspacefs.tools import UndoableToolset, filesystem_tools

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def tag_refs(repo: Path, workspace: str) -> list[str]:
    base = f"refs/workspacefs/{workspace}/tags/"
    names = pygit2.Repository(str(repo)).references
    return sorted(name[len(base) :] for name in names if name.startswith(base))


def test_snapshots_of_tool_calls_persist_and_load_back(tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    fs = InMemoryFilesystem()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    toolset.call("write_file", {"path": "a.txt", "content": "1\n"}, call_id="toolu_01AbC")
    toolset.call("write_file", {"path": "a.txt", "content": "2\n"})
    tags = [record.tag for record in fs.snapshots()]
    # Before each call and after it.
    assert tags == [
        "undo:write_file:toolu_01AbC",
        "after:write_file:toolu_01AbC",
        "undo:write_file:call-1",
        "after:write_file:call-1",
    ]
    for record in fs.snapshots():
        wgit.persist(fs, record, repo)
    assert [item.record.tag for item in wgit.list_snapshots(repo, fs.workspace_id)] == tags
    assert tag_refs(repo, fs.workspace_id) == [
        "after%3Awrite_file%3Acall-1",
        "after%3Awrite_file%3Atoolu_01AbC",
        "undo%3Awrite_file%3Acall-1",
        "undo%3Awrite_file%3Atoolu_01AbC",
    ]
    fsck = subprocess.run(
        ["git", "--git-dir", str(repo), "fsck", "--strict"], capture_output=True, env=GIT_ENV
    )
    assert fsck.returncode == 0, fsck.stderr
    loaded = wgit.load(repo, "after:write_file:toolu_01AbC", workspace=fs.workspace_id)
    assert loaded.read("a.txt").content == "1\n"
    assert [record.tag for record in loaded.snapshots()] == ["after:write_file:toolu_01AbC"]


def test_call_ids_a_ref_cannot_hold_still_give_a_tag_that_persists(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    ids = ["call 1/x", "a..b", "z.lock", "é" * 200]
    for number, call_id in enumerate(ids):
        toolset.call("write_file", {"path": "f", "content": str(number)}, call_id=call_id)
    tags = [str(record.tag) for record in fs.snapshots()]
    undo = "undo:write_file:"
    assert tags[::2] == [
        undo + "call.201.2Fx",  # each byte a ref cannot hold as ``.XX``: the id reads back
        undo + "a.2E.2Eb",
        undo + "z.2Elock",
        tags[6],
    ]
    assert tags[6].startswith(undo + ".C3.A9")
    assert len(tags[6]) <= 128  # cut, at a whole byte
    cut = "é" * ((128 - len("after:write_file:") - len(".x") - 16) // len(".C3.A9")) + "..."
    assert [call.call_id for call in call_history(fs)] == [*ids[:3], cut]
    for record in fs.snapshots():
        wgit.persist(fs, record, tmp_path / "repo.git")
    assert len(tag_refs(tmp_path / "repo.git", fs.workspace_id)) == 8
    assert rewind(fs, "é" * 200).undone == (cut,)  # the whole id still names it
    assert fs.read("f").content == "2"


def test_tags_with_and_without_colons_keep_apart(tmp_path: Path) -> None:
    repo = tmp_path / "repo.git"
    fs = InMemoryFilesystem()
    for tag in ("a:b", "a_b", "a-b", "ab", "a:b:c"):
        fs.write("f", tag)
        wgit.persist(fs, fs.snapshot(tag=tag), repo)
    for tag in ("a:b", "a_b", "a-b", "ab", "a:b:c"):
        assert wgit.load(repo, tag, workspace=fs.workspace_id).read("f").content == tag


@pytest.mark.parametrize("tag", ["a b", "two\nlines", ":leading", "a:%3A", "a" + ":" * 127])
def test_other_tags_git_cannot_hold_are_refused_when_taken(tag: str) -> None:
    fs = InMemoryFilesystem()
    with pytest.raises(InvalidArgumentError, match="tag"):
        fs.snapshot(tag=tag)
    assert fs.snapshots() == []


@pytest.mark.parametrize("call_id", ["x.lock.", "x.lock...", "y.lock" + "." * 130])
def test_a_call_id_that_ends_as_a_lock_file_once_its_dots_go_still_persists(
    tmp_path: Path, call_id: str
) -> None:
    fs = InMemoryFilesystem()
    toolset = UndoableToolset(filesystem_tools(fs), fs)
    toolset.call("write_file", {"path": "f", "content": "1"}, call_id=call_id)
    assert len(fs.snapshots()) == 2  # before the call and after it
    (recorded,) = call_history(fs)
    for record in fs.snapshots():
        assert record.tag is not None
        assert not record.tag.endswith(".lock")
        wgit.persist(fs, record, tmp_path / "repo.git")
        loaded = wgit.load(tmp_path / "repo.git", record.tag, workspace=fs.workspace_id)
        assert [snapshot.tag for snapshot in loaded.snapshots()] == [record.tag]
    assert rewind(fs, call_id).undone == (recorded.call_id,)  # the whole id names it


def test_a_tag_that_reads_as_a_commit_id_names_the_tagged_snapshot(tmp_path: Path) -> None:
    """The workspace's tags come before git's own reading of a name (an id prefix)."""
    repo = tmp_path / "repo.git"
    fs = InMemoryFilesystem()
    fs.write("f", "first")
    first = wgit.persist(fs, fs.snapshot(), repo)
    prefix = first.commit[:8] if not first.commit[:8].isdigit() else first.commit[:8] + "x"
    fs.write("f", "tagged")
    wgit.persist(fs, fs.snapshot(tag=prefix), repo)
    assert wgit.load(repo, prefix, workspace=fs.workspace_id).read("f").content == "tagged"
    assert wgit.load(repo, first.commit, workspace=fs.workspace_id).read("f").content == "first"
