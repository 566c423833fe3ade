"""Only whoever holds the run's secret, through a Host that names this server, gets in.

Every route of the app (enumerated, so a route added later is covered too) and
any unknown path answer 401 without the token; the token is taken from
``Authorization: Bearer``, from ``?token=`` (which sets an ``HttpOnly;
SameSite=Strict`` cookie) and from that cookie. A Host header naming another
site is refused whatever the bind address, and binding an address other
machines reach needs ``expose``.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from support.daemon import cli, serve_debug, stop_debug
from workspacefs import InMemoryFilesystem, NotPermittedError
from workspacefs.archive import export_archive
from workspacefs.cli import EXIT_FAILED
from workspacefs.debug import LiveTarget, create_app, new_token, start

from .conftest import TOKEN, bearer

NOBODY = 65534


def workspace() -> InMemoryFilesystem:
    """A workspace holding a private key, as a 0600 file in a 0700 directory."""
    fs = InMemoryFilesystem(workspace_id="private")
    fs.mkdir("private")
    fs.write("private/key", "secret key\n")
    with fs.transaction() as tree:
        for path, mode in (("private", 0o700), ("private/key", 0o600)):
            ino = tree.resolve_path(path)
            assert ino is not None
            tree.setattr(ino, mode=mode)
    fs.snapshot(tag="one")
    return fs


@pytest.fixture
def app_client() -> Iterator[TestClient]:
    """A client of the app that sends no token of its own."""
    with TestClient(create_app(LiveTarget(workspace()), token=TOKEN), "http://127.0.0.1") as client:
        yield client


def every_request(client: TestClient) -> list[tuple[str, str]]:
    """(method, path) for every route of the app, its parameters filled in."""
    found = []
    for route in client.app.routes:  # type: ignore[attr-defined]
        assert isinstance(route, Route), route
        path = re.sub(r"{[^}]+}", "live", route.path)
        found += [(method, path) for method in sorted(route.methods or ["GET"])]
    assert len(found) >= 16, found  # the page, its script and style, and the API
    return found


def test_every_route_needs_the_token(app_client: TestClient) -> None:
    for method, path in [*every_request(app_client), ("GET", "/no/such/route")]:
        for headers in ({}, bearer("a-wrong-token-of-some-length"), {"authorization": TOKEN}):
            refused = app_client.request(method, path, headers=headers)
            assert refused.status_code == 401, (method, path, refused.text)
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert refused.headers["x-content-type-options"] == "nosniff"
            if method == "GET":
                assert refused.json()["error"] == "unauthorized"
        wrong = app_client.request(method, path, params={"token": TOKEN[:-1] + "!"})
        assert wrong.status_code == 401, (method, path)
        # The change feed's stream never ends: there, ask for one it refuses (a bad id).
        params = {"after": "not-an-id"} if path == "/api/events" else None
        with_it = app_client.request(method, path, headers=bearer(TOKEN), params=params)
        assert with_it.status_code not in (401, 403), (method, path, with_it.text)
    assert "secret key" not in app_client.get("/api/snapshots/live/raw?path=private/key").text


def test_the_url_token_becomes_a_strict_http_only_cookie(app_client: TestClient) -> None:
    page = app_client.get("/", params={"token": TOKEN})
    assert page.status_code == 200
    cookie = page.headers["set-cookie"]
    assert cookie.startswith(f"workspacefs-debug-80={TOKEN};")
    assert {part.strip().lower() for part in cookie.split(";")[1:]} >= {
        "httponly",
        "samesite=strict",
        "path=/",
    }
    # The client keeps the cookie: the page's own requests carry nothing else.
    raw = app_client.get("/api/snapshots/live/raw", params={"path": "private/key"})
    assert raw.status_code == 200
    assert raw.text == "secret key\n"
    app_client.cookies.clear()
    assert app_client.get("/api/snapshots").status_code == 401
    # A cookie of another server (another port) is not this one's.
    app_client.cookies.set("workspacefs-debug-8765", TOKEN)
    assert app_client.get("/api/snapshots").status_code == 401


def test_a_short_token_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16"):
        create_app(LiveTarget(InMemoryFilesystem()), token="")
    assert len(new_token()) >= 40
    assert new_token() != new_token()


def test_hosts_other_than_this_server_are_refused(app_client: TestClient) -> None:
    for host in ("localhost", "127.0.0.1:8765", "[::1]:8765", "LOCALHOST"):
        answer = app_client.get("/api/target", headers={"host": host, **bearer(TOKEN)})
        assert answer.status_code == 200, host
    for host in ("evil.example", "evil.example:8765", "127.0.0.1.evil.example", "", "a b"):
        refused = app_client.get("/api/target", headers={"host": host, **bearer(TOKEN)})
        assert refused.status_code == 400, host
        assert refused.json()["error"] == "bad_host"


def test_wrong_host_refused_on_a_wildcard_bind() -> None:
    with start(LiveTarget(workspace()), host="0.0.0.0", expose=True) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        port = server.base_url.rsplit(":", 1)[1].rstrip("/")
        auth = bearer(server.token)
        for host in ("evil.example", f"evil.example:{port}", "0.0.0.0"):
            refused = httpx.get(server.base_url + "api/target", headers={"host": host, **auth})
            assert refused.status_code == 400, host
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"{socket.gethostname()}:{port}"):
            answer = httpx.get(server.base_url + "api/target", headers={"host": host, **auth})
            assert answer.status_code == 200, host
        assert httpx.get(server.base_url + "api/target").status_code == 401


def test_an_address_other_machines_reach_needs_expose(tmp_path: Path) -> None:
    fs = InMemoryFilesystem()
    for host in ("0.0.0.0", "::", ""):
        with pytest.raises(NotPermittedError, match="expose"):
            start(LiveTarget(fs), host=host)
    export_archive(fs, tmp_path / "a.fs.zip")
    done = cli("debug", str(tmp_path / "a.fs.zip"), "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == EXIT_FAILED, done.stdout
    assert "--expose" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # it served nothing


def test_the_command_prints_a_url_with_its_token(tmp_path: Path) -> None:
    fs = workspace()
    export_archive(fs, tmp_path / "a.fs.zip")
    server = serve_debug(tmp_path / "a.fs.zip")
    try:
        assert len(server.token) >= 40
        assert httpx.get(server.base + "/api/filesystem/meta").status_code == 401
        page = httpx.get(server.url)  # what a browser opens
        assert page.status_code == 200
        assert "workspacefs debug" in page.text
        answer = server.get("/api/filesystem/file", params={"path": "private/key"})
        assert answer.json()["content"] == "secret key\n"
    finally:
        stop_debug(server)
    again = serve_debug(tmp_path / "a.fs.zip")
    try:
        assert again.token != server.token  # a secret per run
    finally:
        stop_debug(again)


CURL = shutil.which("curl")


def curl_as_nobody(url: str) -> subprocess.CompletedProcess[str]:
    """``curl URL`` as another user (nobody): its status code, then its body."""
    assert CURL is not None
    as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    return subprocess.run(
        [*as_nobody, CURL, "-s", "-w", "\n%{http_code}", url],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
        cwd="/",
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as another user")
@pytest.mark.skipif(CURL is None, reason="curl is missing")
def test_another_user_gets_nothing_without_the_token() -> None:
    with start(LiveTarget(workspace())) as server:
        route = server.base_url + "api/snapshots/live/raw?path=private/key"
        refused = curl_as_nobody(route)
        assert refused.returncode == 0, refused.stderr
        assert refused.stdout.rsplit("\n", 1)[1] == "401"
        assert "secret key" not in refused.stdout
        # The port itself is open to every local user: the token is what keeps them out.
        allowed = curl_as_nobody(route + f"&token={server.token}")
        assert allowed.stdout.rsplit("\n", 1) == ["secret key\n", "200"]
