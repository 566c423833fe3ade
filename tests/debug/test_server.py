"""The server for real: a background thread, and ``workspacefs debug``."""

from __future__ import annotations

import errno
import gc
import socket
from pathlib import Path

import httpx
import pytest

from support.daemon import cli, serve_debug, stop_debug
from workspacefs import InMemoryFilesystem
from workspacefs.archive import export_archive
from workspacefs.cli import EXIT_FAILED
from workspacefs.debug import LiveTarget, start
from workspacefs.debug._server import allowed_hosts_for

from .conftest import bearer


def test_background_server_serves_over_tcp_then_stops() -> None:
    fs = InMemoryFilesystem()
    fs.write("a.txt", "a\n")
    snapshot = fs.snapshot(tag="one")
    with start(LiveTarget(fs)) as server:
        assert server.url == f"{server.base_url}?token={server.token}"
        assert server.base_url.startswith("http://127.0.0.1:")
        route = f"api/snapshots/{snapshot.snapshot_id}/file?path=a.txt"
        response = httpx.get(server.base_url + route, headers=bearer(server.token))
        assert response.json()["content"] == "a\n"
        page = httpx.get(server.url)
        assert "workspacefs debug" in page.text
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url, timeout=2)


def test_allowed_hosts() -> None:
    assert allowed_hosts_for("127.0.0.1") == ["127.0.0.1"]
    assert allowed_hosts_for("10.1.2.3") == ["10.1.2.3"]
    assert socket.gethostname() in allowed_hosts_for("0.0.0.0")  # never "*"


def test_command_serves_an_archive_until_interrupted(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    fs.write("notes.md", "# notes\n")
    export_archive(fs, tmp_path / "run.fs.zip")
    server = serve_debug(tmp_path / "run.fs.zip")
    try:
        meta = server.get("/api/filesystem/meta").json()
        assert meta["manifest"]["file_count"] == 1
        file = server.get("/api/filesystem/file?path=notes.md").json()
        assert file["content"] == "# notes\n"
    finally:
        stop_debug(server)
    assert server.process.returncode == 0  # Ctrl-C is how it is meant to stop


def test_command_refuses_what_it_cannot_show(tmp_path: Path) -> None:
    (tmp_path / "junk.fs.zip").write_bytes(b"not a zip")
    for target, message in (
        (tmp_path / "missing.zip", "no such file or directory"),
        (tmp_path / "junk.fs.zip", "malformed archive"),
    ):
        done = cli("debug", str(target), "--port", "0")
        assert done.returncode == EXIT_FAILED, done.stderr
        assert message in done.stderr
        assert "Traceback" not in done.stderr


def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    export_archive(fs, tmp_path / "a.zip")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError) as raised:
            start(LiveTarget(fs), port=port)
        assert raised.value.errno == errno.EADDRINUSE
        done = cli("debug", str(tmp_path / "a.zip"), "--port", str(port))
        assert done.returncode == EXIT_FAILED
        assert "Address already in use" in done.stderr
        assert "Traceback" not in done.stderr


def test_a_download_cut_short_is_closed_not_left_to_the_collector() -> None:
    # Starlette left a streamed body a client stopped reading to the garbage collector
    # (trio warns of an async generator not exhausted); closed now, it warns of nothing.
    fs = InMemoryFilesystem()
    fs.write_bytes("big.bin", b"x" * (16 << 20))
    with start(LiveTarget(fs)) as server:
        url = f"{server.base_url}api/snapshots/live/raw?path=big.bin"
        with httpx.stream("GET", url, headers=bearer(server.token)) as answer:
            assert next(answer.iter_bytes())
        # The server notices the disconnect on its own time: a request after it ends
        # when the first one did.
        assert httpx.get(server.base_url + "api/target", headers=bearer(server.token)).is_success
    gc.collect()
