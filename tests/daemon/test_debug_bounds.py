"""``workspacefs debug`` on a running workspace with thousands of changes: the heavy routes
stay within their bounds, read the daemon in bulk, and the server stops at SIGTERM even
in the middle of a request."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.daemon import DebugProcess, cli_json, cli_mounted, serve_debug, stop_debug
from workspacefs import connect

FILES = 5_000
HUGE = 64 << 30


@dataclass
class Served:
    mountpoint: Path
    server: DebugProcess
    start: str  # the snapshot taken before every file changed


def path_of(number: int) -> str:
    return f"d{number // 100:03d}/f{number:05d}.txt"


@pytest.fixture(scope="module")
def changed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A workspace of ``FILES`` files, every one changed since the snapshot ``start``."""
    base = tmp_path_factory.mktemp("many")
    source = base / "source"
    for number in range(FILES):
        path = source / path_of(number)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{number}\n")
    mountpoint = base / "ws"
    mountpoint.mkdir()
    with cli_mounted(mountpoint, source):
        cli_json("snapshot", str(mountpoint), "--tag", "start")
        for number in range(FILES):
            (mountpoint / path_of(number)).write_text(f"{number} changed\n")
        yield mountpoint


def start_id(mountpoint: Path) -> str:
    with connect(str(mountpoint)) as fs:
        return str(next(s for s in fs.snapshots() if s.tag == "start").snapshot_id)


@pytest.fixture
def served(changed: Path) -> Iterator[Served]:
    server = serve_debug(changed)
    try:
        yield Served(changed, server, start_id(changed))
    finally:
        stop_debug(server)


def test_patch_of_thousands_of_files_stops_at_max_lines(served: Served) -> None:
    params = {"from": served.start, "to": "live", "patch": "1", "max_lines": "1"}
    body = served.server.get("/api/diff", params=params, timeout=120).json()
    assert len(body["modified"]) == FILES
    assert body["patch"] == f"diff --git a/{path_of(0)} b/{path_of(0)}"
    assert (body["patch_truncated"], body["patch_stopped"]) == (True, "max_lines")


def test_tree_of_a_daemon_is_read_in_bulk(served: Served) -> None:
    whole = served.server.get("/api/filesystem/tree", timeout=120).json()
    assert [entry["path"] for entry in whole] == [path_of(n) for n in range(FILES)]
    page = served.server.get(
        "/api/filesystem/tree", params={"limit": "10", "after": path_of(99)}
    ).json()
    assert [entry["path"] for entry in page[:-1]] == [path_of(n) for n in range(100, 110)]
    assert page[-1] == {"truncated": True, "reason": "limit", "after": path_of(109)}
    listing = served.server.get("/api/snapshots/live/tree", params={"path": "d001"}).json()
    assert [entry["name"] for entry in listing["entries"]][:2] == ["f00100.txt", "f00101.txt"]
    assert len(listing["entries"]) == 100


def test_a_huge_sparse_file_is_shown_by_its_size(served: Served) -> None:
    huge = served.mountpoint / "disk.img"
    huge.touch()
    try:
        os.truncate(huge, HUGE)
        params: dict[str, Any] = {"from": served.start, "to": "live", "path": "disk.img"}
        one = served.server.get("/api/diff/file", params=params, timeout=60).json()
        assert (one["status"], one["too_large"], one["new"]["size"]) == ("added", True, HUGE)
        assert one["unified"].splitlines()[-1] == (
            "Binary files /dev/null and b/disk.img differ (0 -> 68,719,476,736 bytes, "
            "over the 1,048,576-byte limit)"
        )
        shown = served.server.get("/api/snapshots/live/file", params={"path": "disk.img"})
        assert (shown.status_code, shown.json()["error"]) == (413, "too_large")
    finally:
        huge.unlink()


def test_sigterm_stops_the_server_in_the_middle_of_a_request(changed: Path) -> None:
    server = serve_debug(changed)
    try:
        params = {"from": start_id(changed), "to": "live", "patch": "1", "max_lines": "50000"}
        answered: list[object] = []

        def ask() -> None:
            try:
                answered.append(server.get("/api/diff", params=params, timeout=120))
            except httpx.HTTPError as exc:
                answered.append(exc)

        asking = threading.Thread(target=ask)
        asking.start()
        # The request is under way once the server reads the workspace for it.
        threading.Event().wait(1.0)
        assert not answered, "the patch of every file came back too soon to interrupt"
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(15) == 0  # a liveness bound, not a timing
        asking.join(30)
    finally:
        stop_debug(server)
