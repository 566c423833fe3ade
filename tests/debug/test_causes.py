"""Who changed what, as the debug API shows it: live workspaces (in this process and
through the protocol alone) and persisted git history; archives record no causes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workspacefs import ArchiveSnapshots, Cause, InMemoryFilesystem, attributed, git
from workspacefs.debug import DebugTarget, LiveTarget, open_target

from .conftest import ProtocolOnly, client_for, json_of

A = Cause.call("write_file", "toolu_a")
B = Cause.call("edit_file", "toolu_b")
P = Cause(pid=9, command=("make",), container="d" * 64, uid=0)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[InMemoryFilesystem, Path]:
    root = tmp_path_factory.mktemp("causes")
    fs = InMemoryFilesystem(workspace_id="causes")
    archives = ArchiveSnapshots(fs, root / "archives")
    with attributed(A):
        fs.write("src/app.py", "1\n")
        fs.write("README", "r\n")
    steps = [fs.snapshot(tag="start")]
    archives.snapshot("start")
    with attributed(B):
        fs.write("src/app.py", "2\n")
    with attributed(P):
        fs.write("build/app", "bin")
    steps.append(fs.snapshot(tag="middle"))
    with attributed(P):
        fs.write("src/app.py", "3\n")
        fs.delete("README")
    steps.append(fs.snapshot(tag="last"))
    archives.snapshot("last")
    for snapshot in steps:
        git.persist(fs, snapshot, root / "repo.git")
    return fs, root


@pytest.fixture(params=["live", "protocol", "git"])
def client(
    request: pytest.FixtureRequest, history: tuple[InMemoryFilesystem, Path]
) -> Iterator[Any]:
    fs, root = history
    target: DebugTarget
    if request.param == "live":
        target = LiveTarget(fs)
    elif request.param == "protocol":
        target = LiveTarget(ProtocolOnly(fs))
    else:
        target = open_target(root / "repo.git")
    with client_for(target) as found:
        yield found
    target.close()


def ids(client: Any) -> dict[str, str]:
    snapshots = json_of(client.get("/api/snapshots"))["snapshots"]
    return {s["tag"]: s["id"] for s in snapshots if s["tag"]}


def texts(causes: list[dict[str, Any]]) -> list[str]:
    return [cause["text"] for cause in causes]


def test_the_timeline_says_who_made_each_snapshot(client: Any) -> None:
    found = json_of(client.get("/api/causes"))
    assert found["attributed"] is True
    tags = ids(client)
    snapshots = found["snapshots"]
    assert texts(snapshots[tags["start"]]["causes"]) == [A.describe()]
    assert sorted(texts(snapshots[tags["middle"]]["causes"])) == sorted(
        [B.describe(), P.describe()]
    )
    assert texts(snapshots[tags["last"]]["causes"]) == [P.describe()]
    assert snapshots[tags["last"]]["more"] == 0


def test_one_snapshots_changes_with_their_causes(client: Any) -> None:
    tags = ids(client)
    body = json_of(client.get(f"/api/snapshots/{tags['middle']}/changes"))
    assert body["base"] == tags["start"]
    changes = body["changes"]
    assert sorted(changes) == ["build/app", "src/app.py"]
    assert changes["src/app.py"]["kind"] == "modified"
    assert texts(changes["src/app.py"]["causes"]) == [B.describe()]
    (process,) = changes["build/app"]["causes"]
    assert (process["kind"], process["pid"], process["container"]) == ("process", 9, "d" * 64)


def test_a_diff_names_who_changed_each_file(client: Any) -> None:
    tags = ids(client)
    body = json_of(client.get("/api/diff", params={"from": tags["start"], "to": tags["last"]}))
    assert {path: texts(c) for path, c in body["causes"].items()} == {
        "src/app.py": [B.describe(), P.describe()],
        "build/app": [P.describe()],
        "README": [P.describe()],
    }
    back = json_of(client.get("/api/diff", params={"from": tags["last"], "to": tags["start"]}))
    assert "causes" not in back  # not a way history went: nothing to say


def test_archives_record_no_causes(history: tuple[InMemoryFilesystem, Path]) -> None:
    _, root = history
    target = open_target(root / "archives")
    with client_for(target) as client:
        assert json_of(client.get("/api/causes")) == {"attributed": False, "snapshots": {}}
        snapshot = json_of(client.get("/api/snapshots"))["snapshots"][0]["id"]
        missing = client.get(f"/api/snapshots/{snapshot}/changes")
        assert missing.status_code == 404
        assert json_of(missing)["error"] == "not_attributed"
        assert client.get("/api/snapshots/nonesuch/changes").status_code == 404
    target.close()
