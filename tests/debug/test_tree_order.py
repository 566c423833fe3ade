"""The whole tree comes out sorted by path on every target, streamed in chunks."""

from __future__ import annotations

import json
from pathlib import Path

from workspacefs import InMemoryFilesystem, git
from workspacefs.archive import export_archive
from workspacefs.debug import LiveTarget, open_target

from .conftest import client_for

# Names where a directory's own order ("a/") and its name ("a") disagree with "a-b".
TRICKY = ["a-b.txt", "a/x.txt", "a/y/z.txt", "a.txt", "a0/q", "b", "é/è", "Z", "a b"]


def test_every_target_lists_files_sorted_by_path(tmp_path: Path) -> None:
    fs = InMemoryFilesystem(workspace_id="order")
    for number, path in enumerate(TRICKY):
        fs.write(path, str(number))
    snapshot = fs.snapshot()
    git.persist(fs, snapshot, tmp_path / "repo.git")
    export_archive(fs, tmp_path / "ws.zip")
    for target in (
        LiveTarget(fs),
        open_target(tmp_path / "repo.git"),
        open_target(tmp_path / "ws.zip"),
    ):
        listed = json.loads(client_for(target).get("/api/filesystem/tree").text)
        assert [entry["path"] for entry in listed] == sorted(TRICKY), target.info().kind
        walked = [entry.path for entry in target.walk(target.snapshots()[0].id)]
        assert set(walked) == {*TRICKY, "a", "a/y", "a0", "é"}
        for directory in ("a", "a/y", "a0", "é"):  # parents come before their children
            assert walked.index(directory) < min(
                walked.index(p) for p in walked if p.startswith(directory + "/")
            )


def test_a_tree_longer_than_a_chunk_is_one_json_array() -> None:
    fs = InMemoryFilesystem()
    paths = [f"d{i % 7}/f{i:05d}" for i in range(4_500)]
    with fs.transaction() as tree:
        for path in paths:
            directory, _, name = path.partition("/")
            parent = tree.make_dirs(directory, 0o755, 0, 0)
            tree.write(tree.create(parent, name, 0o644, 0, 0), 0, b"x")
    response = client_for(LiveTarget(fs)).get("/api/filesystem/tree")
    assert response.headers["content-type"] == "application/json"
    assert [entry["path"] for entry in json.loads(response.text)] == sorted(paths)
    empty = client_for(LiveTarget(InMemoryFilesystem())).get("/api/filesystem/tree")
    assert json.loads(empty.text) == []
