"""``workspacefs mount --from REPO.git#REF`` of a snapshot too large to build before
serving (11,000 files): the mount serves at once and lists the rest in the
background; ``ls -R``, ``cat`` and writes work whatever the listing has reached; the
workspace is kept in its store once listed, the loaded snapshot with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.daemon import cli_json, cli_ok, stop
from support.large_repos import content, large_repo, os_walk_files
from support.polling import eventually
from workspacefs.daemon import MountRecord, connect


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return large_repo(tmp_path_factory.mktemp("large") / "repo.git")


def _mount(mountpoint: Path, *options: str) -> MountRecord:
    mountpoint.mkdir(exist_ok=True)
    return MountRecord.from_dict(cli_json("mount", str(mountpoint), *options))  # type: ignore[arg-type]


def _hydration(mountpoint: Path) -> dict[str, object]:
    facts = json.loads(cli_ok("status", str(mountpoint), "--json"))["hydration"]
    assert isinstance(facts, dict)
    return facts


def test_it_serves_at_once_and_is_kept_once_listed(repo: Path, tmp_path: Path) -> None:
    point = tmp_path / "ws"
    record = _mount(point, "--name", "large", "--from", f"{repo}#v1")
    try:
        assert (point / "package.json").read_bytes() == content("package.json")
        assert (point / "data/d61/f8.bin").read_bytes() == content("data/d61/f8.bin")
        files = os_walk_files(point)  # ls -R, whatever the hydration has listed meanwhile
        assert len(files) == 11_027
        eventually(lambda: _hydration(point)["state"] == "done", 60, "hydrated")
        assert _hydration(point)["unlisted"] == 0
        assert "hydration   done: 11,1" in cli_ok("status", str(point))
        with connect(point) as fs:
            assert [s.tag for s in fs.snapshots()] == ["v1"]
    finally:
        stop(record)
    again = _mount(point, "--name", "large")  # resumed from its store
    try:
        assert os_walk_files(point) == files
        assert (point / "src/p9/m9.py").read_bytes() == content("src/p9/m9.py")
        with connect(point) as fs:
            assert [s.tag for s in fs.snapshots()] == ["v1"]
    finally:
        stop(again)


def test_a_write_while_it_lists_is_kept_with_everything(repo: Path, tmp_path: Path) -> None:
    point = tmp_path / "ws"
    record = _mount(point, "--name", "written", "--from", f"{repo}#v1")
    try:
        (point / "data/d3/new.txt").write_text("written at once\n")  # lists the rest first
        assert _hydration(point)["unlisted"] == 0
        with connect(point) as fs:
            [loaded] = fs.snapshots()
            assert fs.diff(loaded).added == ("data/d3/new.txt",)
    finally:
        stop(record)
    again = _mount(point, "--name", "written")
    try:
        assert (point / "data/d3/new.txt").read_text() == "written at once\n"
        assert len(os_walk_files(point)) == 11_028
    finally:
        stop(again)
