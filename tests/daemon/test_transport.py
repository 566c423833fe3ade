"""The client's transport: HTTP/1.1 over a Unix socket from a pool of kept-alive
connections (``daemon._transport``), against real servers: the standard library's, whose
connection handling a test can drive, and the daemon's own."""

from __future__ import annotations

import http.server
import json
import os
import socketserver
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.daemon import Daemons
from workspacefs.daemon import DaemonUnreachableError, connect
from workspacefs.daemon._transport import UnixHTTPPool


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Counts the connections it accepts; ``closed`` is set when one ends."""

    daemon_threads = True

    def __init__(self, path: str) -> None:
        super().__init__(path, _Handler)
        self.path = path
        self.connections = 0
        self.close_after_answer = False
        self.closed = threading.Event()

    def shutdown_request(self, request: object) -> None:
        super().shutdown_request(request)  # type: ignore[arg-type]
        self.closed.set()  # once the socket is closed, not when its handler ends


class _Handler(http.server.BaseHTTPRequestHandler):
    """Echoes the JSON body back; with ``close_after_answer``, then drops the connection
    without saying so first, as a server does with one idle past its keep-alive timeout."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        answer = json.dumps({"path": self.path, "body": json.loads(body)}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)
        self.wfile.flush()
        self.close_connection = self.server.close_after_answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[_Server]:
    served = _Server(str(tmp_path / "s.sock"))
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        served.shutdown()
        served.server_close()
        thread.join()


def _pool(server: _Server) -> UnixHTTPPool:
    return UnixHTTPPool(server.path, timeout=10, connect_timeout=5)


def _post(pool: UnixHTTPPool, n: int) -> object:
    status, content = pool.post(f"/v/{n}", json.dumps({"n": n}).encode(), "application/json")
    assert status == 200
    return json.loads(content)


def test_one_caller_reuses_one_connection(server: _Server) -> None:
    pool = _pool(server)
    pool.connect()
    for n in range(5):
        assert _post(pool, n) == {"path": f"/v/{n}", "body": {"n": n}}
    assert server.connections == 1
    pool.close()


def test_a_connection_the_server_closed_while_idle_is_not_reused(server: _Server) -> None:
    # Reused, it would fail the next request (the server never reads it): the pool
    # sees the end of file first and connects anew.
    server.close_after_answer = True
    pool = _pool(server)
    assert _post(pool, 1) == {"path": "/v/1", "body": {"n": 1}}
    assert server.closed.wait(10)
    assert _post(pool, 2) == {"path": "/v/2", "body": {"n": 2}}
    assert server.connections == 2
    pool.close()


def test_threads_sharing_a_pool_each_get_their_own_answers(server: _Server) -> None:
    pool = _pool(server)
    wrong: list[object] = []

    def work(base: int) -> None:
        for n in range(base, base + 50):
            answer = _post(pool, n)
            if answer != {"path": f"/v/{n}", "body": {"n": n}}:
                wrong.append(answer)

    threads = [threading.Thread(target=work, args=(1000 * i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert 1 <= server.connections <= 8  # one a concurrent caller, kept for reuse
    pool.close()


def test_a_refused_connection_says_why(tmp_path: Path) -> None:
    pool = UnixHTTPPool(str(tmp_path / "none.sock"), timeout=1, connect_timeout=1)
    with pytest.raises(FileNotFoundError):
        pool.connect()


# -- against the daemon ------------------------------------------------------------------


def test_threads_sharing_a_remote_filesystem(daemons: Daemons) -> None:
    record = daemons.start()
    wrong: list[str] = []
    with connect(record.socket) as fs:

        def work(i: int) -> None:
            for n in range(20):
                fs.write(f"t{i}/{n}.txt", f"{i} {n}\n")
                if fs.read(f"t{i}/{n}.txt").content != f"{i} {n}\n":
                    wrong.append(f"t{i}/{n}.txt")

        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert wrong == []
        assert sorted(os.listdir(record.mountpoint)) == [f"t{i}" for i in range(6)]


@pytest.mark.slow
def test_a_client_idle_past_the_daemons_keep_alive_still_answers(daemons: Daemons) -> None:
    record = daemons.start()
    with connect(record.socket) as fs:
        fs.write("a.txt", "one\n")
        time.sleep(6)  # hypercorn closes a connection idle for 5 s
        assert fs.read("a.txt").content == "one\n"


def test_a_stopped_daemon_is_unreachable(daemons: Daemons) -> None:
    record = daemons.start()
    fs = connect(record.socket)
    other = connect(record.socket)
    fs.unmount()
    with pytest.raises(DaemonUnreachableError):
        other.exists("a.txt")
    other.close()


def test_a_full_listen_backlog_is_waited_out(tmp_path: Path) -> None:
    # A Unix socket's connect fails at once (EAGAIN) while the server's backlog is
    # full: callers connecting together before the server accepts must all get in.
    class Slow(_Server):
        request_queue_size = 1

    served = Slow(str(tmp_path / "s.sock"))
    pool = _pool(served)
    answers: list[object] = []
    threads = [
        threading.Thread(target=lambda n=n: answers.append(_post(pool, n))) for n in range(6)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.3)  # the callers meet the full backlog before anything is accepted
    server_thread = threading.Thread(target=served.serve_forever, daemon=True)
    server_thread.start()
    try:
        for thread in threads:
            thread.join(10)
        assert sorted(answers, key=str) == sorted(
            ({"path": f"/v/{n}", "body": {"n": n}} for n in range(6)), key=str
        )
    finally:
        served.shutdown()
        served.server_close()
        server_thread.join()
        pool.close()
