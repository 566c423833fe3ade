"""The heavy routes stay bounded: by their parameters (``max_lines``, ``limit``), by a
deadline per request, and by a size limit per file; symlinks are shown as git shows them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from workspacefs import FilesystemSnapshot, InMemoryFilesystem, git
from workspacefs.debug import DebugTarget, LiveTarget, open_target, start
from workspacefs.tree import Tree

from .conftest import ProtocolOnly, bearer, client_for, json_of

HUGE = 64 << 30


def link(tree: Tree, path: str, target: str) -> None:
    parent, _, name = path.rpartition("/")
    directory = tree.resolve_path(parent)
    assert directory is not None
    tree.symlink(directory, name, target)


def linked_history() -> tuple[InMemoryFilesystem, FilesystemSnapshot, FilesystemSnapshot]:
    """Links of every kind changed between two snapshots."""
    fs = InMemoryFilesystem(workspace_id="links", mount_point="/workspace")
    fs.write("README.md", "# demo\n")
    fs.write("notes.txt", "notes\n")
    fs.write("src/out.txt", "other\n")
    fs.write("build/out.txt", "old\n")
    fs.mkdir("venv/bin")
    with fs.transaction() as tree:
        link(tree, "docs", "src")
        link(tree, "latest", "notes.txt")
    before = fs.snapshot(tag="before")
    with fs.transaction() as tree:
        link(tree, "venv/bin/python", "/usr/bin/python3")  # leaves the workspace
        link(tree, "srclink", "src")
        tree.unlink(1, "latest")
        link(tree, "latest", "README.md")
        tree.unlink(1, "docs")
        build = tree.resolve_path("build")
        assert build is not None
        tree.unlink(build, "out.txt")
        tree.rmdir(1, "build")
        link(tree, "build", "src")  # a directory became a link: build/out.txt is gone
    after = fs.snapshot(tag="after")
    return fs, before, after


LINK_PATCH = """\
diff --git a/build b/build
new file mode 120000
--- /dev/null
+++ b/build
@@ -0,0 +1 @@
+src
\\ No newline at end of file
diff --git a/build/out.txt b/build/out.txt
deleted file mode 100644
--- a/build/out.txt
+++ /dev/null
@@ -1 +0,0 @@
-old
diff --git a/docs b/docs
deleted file mode 120000
--- a/docs
+++ /dev/null
@@ -1 +0,0 @@
-src
\\ No newline at end of file
diff --git a/latest b/latest
--- a/latest
+++ b/latest
@@ -1 +1 @@
-notes.txt
\\ No newline at end of file
+README.md
\\ No newline at end of file
diff --git a/srclink b/srclink
new file mode 120000
--- /dev/null
+++ b/srclink
@@ -0,0 +1 @@
+src
\\ No newline at end of file
diff --git a/venv/bin/python b/venv/bin/python
new file mode 120000
--- /dev/null
+++ b/venv/bin/python
@@ -0,0 +1 @@
+/usr/bin/python3
\\ No newline at end of file"""


@pytest.fixture(params=["live", "protocol", "git"])
def linked(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[tuple[DebugTarget, str, str]]:
    fs, before, after = linked_history()
    target: DebugTarget
    if request.param == "live":
        target = LiveTarget(fs)
    elif request.param == "protocol":
        target = LiveTarget(ProtocolOnly(fs))
    else:
        for snapshot in (before, after):
            git.persist(fs, snapshot, tmp_path / "repo.git")
        target = open_target(tmp_path / "repo.git")
    yield target, str(before.snapshot_id), str(after.snapshot_id)
    target.close()


def test_patch_shows_links_as_git_does(linked: tuple[DebugTarget, str, str]) -> None:
    target, before, after = linked
    client = client_for(target)
    body = json_of(client.get("/api/diff", params={"from": before, "to": after, "patch": "1"}))
    assert body["patch"] == LINK_PATCH
    assert (body["patch_truncated"], body["patch_stopped"]) == (False, None)
    one = json_of(
        client.get("/api/diff/file", params={"from": before, "to": after, "path": "latest"})
    )
    assert one["status"] == "modified"
    section = LINK_PATCH.split("diff --git a/latest")[1].split("diff --git")[0]
    assert one["unified"] == "diff --git a/latest" + section.rstrip("\n")


def many_changes(count: int) -> tuple[InMemoryFilesystem, str]:
    fs = InMemoryFilesystem(workspace_id="many")
    for number in range(count):
        fs.write(f"d{number // 100:03d}/f{number:05d}.txt", f"{number}\n")
    before = fs.snapshot(tag="before")
    for number in range(count):
        fs.write(f"d{number // 100:03d}/f{number:05d}.txt", f"{number} changed\n")
    return fs, str(before.snapshot_id)


@pytest.mark.parametrize("kind", ["live", "protocol"])
def test_patch_stops_at_max_lines(kind: str) -> None:
    fs, before = many_changes(5_000)
    target = LiveTarget(fs if kind == "live" else ProtocolOnly(fs))
    params = {"from": before, "to": "live", "patch": "1", "max_lines": "1"}
    body = json_of(client_for(target).get("/api/diff", params=params))
    assert len(body["modified"]) == 5_000
    assert body["patch"] == "diff --git a/d000/f00000.txt b/d000/f00000.txt"
    assert (body["patch_truncated"], body["patch_stopped"]) == (True, "max_lines")
    assert body["patch_files_left_out"] == 5_000  # the first is not shown in full


def test_a_deadline_cuts_the_heavy_routes_short() -> None:
    fs, before = many_changes(3_000)
    client = client_for(LiveTarget(fs), request_seconds=0)
    params = {"from": before, "to": "live", "patch": "1", "max_lines": "50000"}
    body = json_of(client.get("/api/diff", params=params))
    assert (body["patch_truncated"], body["patch_stopped"]) == (True, "deadline")
    assert 0 < body["patch_files_left_out"] < 3_000
    listed = json_of(client.get("/api/filesystem/tree"))
    assert listed[-1]["truncated"] is True
    assert listed[-1]["reason"] == "deadline"
    assert 0 < len(listed) - 1 < 3_000


@pytest.mark.parametrize("kind", ["live", "protocol", "git"])
def test_the_tree_is_paged(kind: str, tmp_path: Any) -> None:
    fs = InMemoryFilesystem(workspace_id="paged")
    for number in range(1_000):
        fs.write(f"d{number % 7}/e{number % 3}/f{number:04d}", "x")
    snapshot = fs.snapshot(tag="all")
    if kind == "git":
        git.persist(fs, snapshot, tmp_path / "repo.git")
        target: DebugTarget = open_target(tmp_path / "repo.git")
    else:
        target = LiveTarget(fs if kind == "live" else ProtocolOnly(fs))
    client = client_for(target)
    whole = json_of(
        client.get("/api/filesystem/tree", params={"snapshot": str(snapshot.snapshot_id)})
    )
    assert len(whole) == 1_000
    assert whole == sorted(whole, key=lambda entry: entry["path"])
    pages: list[dict[str, Any]] = []
    after = ""
    asked = 0
    while True:
        asked += 1
        params = {"snapshot": str(snapshot.snapshot_id), "limit": "300", "after": after}
        page = json_of(client.get("/api/filesystem/tree", params=params))
        if page and "truncated" in page[-1]:
            marker = page.pop()
            assert (marker["reason"], marker["after"]) == ("limit", page[-1]["path"])
            assert len(page) == 300
            pages += page
            after = marker["after"]
            continue
        pages += page
        break
    assert (asked, pages) == (4, whole)
    target.close()


def test_a_huge_sparse_file_is_never_read_whole() -> None:
    fs = InMemoryFilesystem(workspace_id="huge")
    fs.write("disk.img", "")
    with fs.transaction() as tree:
        ino = tree.resolve_path("disk.img")
        assert ino is not None
        tree.truncate(ino, HUGE)
        tree.write(ino, HUGE - 1, b"a")
    before = str(fs.snapshot(tag="before").snapshot_id)
    with fs.transaction() as tree:
        ino = tree.resolve_path("disk.img")
        assert ino is not None
        tree.write(ino, HUGE - 1, b"b")  # same size, the last byte differs
    with start(LiveTarget(fs)) as server:
        auth = bearer(server.token)
        params = {"from": before, "to": "live", "path": "disk.img"}
        one = httpx.get(
            server.base_url + "api/diff/file", params=params, headers=auth, timeout=30
        ).json()
        assert (one["status"], one["too_large"], one["hunks"]) == ("modified", True, [])
        params = {"from": before, "to": "live", "patch": "1"}
        body = httpx.get(
            server.base_url + "api/diff", params=params, headers=auth, timeout=30
        ).json()
    assert body["patch"].splitlines() == [
        "diff --git a/disk.img b/disk.img",
        "Binary files a/disk.img and b/disk.img differ (68,719,476,736 -> 68,719,476,736 "
        "bytes, over the 1,048,576-byte limit)",
    ]
    assert json.dumps(body).count("diff --git") == 1
