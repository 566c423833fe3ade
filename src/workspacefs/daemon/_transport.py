"""HTTP/1.1 over a Unix socket, with the standard library: the client's transport.

``http.client`` speaks everything the control API needs (a POST with a JSON body,
one kept-alive connection at a time) and loads in milliseconds. httpx would load
its own command line (rich's syntax highlighting, click), httpcore and, through
httpcore, trio and anyio: more than 100 ms of every ``workspacefs`` command that
reaches a daemon (benchmarks/bench_cli.py prints the import costs).
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
import time
from collections.abc import Mapping


class _UnixConnection(http.client.HTTPConnection):
    """One HTTP/1.1 connection to a Unix socket (``http.client`` connects over TCP)."""

    def __init__(self, path: str, timeout: float | None, connect_timeout: float) -> None:
        super().__init__("workspacefs", timeout=timeout)
        self.path = path
        self.connect_timeout = connect_timeout

    def connect(self) -> None:
        # A Unix socket with a timeout is non-blocking, and its connect does not wait
        # for room in a full listen backlog (many threads connecting at once): it fails
        # with EAGAIN at once, so that is retried until the connect timeout.
        deadline = time.monotonic() + self.connect_timeout
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.settimeout(self.connect_timeout)
                sock.connect(self.path)
                sock.settimeout(self.timeout)
            except BlockingIOError:
                sock.close()
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.001)
                continue
            except BaseException:
                sock.close()
                raise
            self.sock = sock
            return


def open_stream(
    path: str,
    target: str,
    headers: Mapping[str, str],
    *,
    timeout: float | None,
    connect_timeout: float,
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """GET ``target`` on a connection of its own, for an answer read as it comes (a
    stream of events); the connection and its response, whose body is unread.

    Raises:
        OSError: The connection failed.
        http.client.HTTPException: The answer was no HTTP.
    """
    connection = _UnixConnection(path, timeout, connect_timeout)
    try:
        connection.request("GET", target, headers=dict(headers))
        return connection, connection.getresponse()
    except BaseException:
        connection.close()
        raise


def _reusable(connection: _UnixConnection) -> bool:
    """An idle connection the server has not closed: the server closes one idle past its
    keep-alive timeout, and then the socket polls readable (at end of file)."""
    if connection.sock is None:
        return False
    poller = select.poll()  # not select(): any descriptor number, however high
    poller.register(connection.sock, select.POLLIN)
    return not poller.poll(0)


class UnixHTTPPool:
    """Kept-alive HTTP/1.1 connections to the server at one Unix socket: a request takes
    an idle one (or makes one) and gives it back once its answer is read, so threads
    sharing the pool each get their own and a lone caller reuses one.

    Args:
        path: The socket.
        timeout: Seconds to wait for an answer (None: as long as it takes).
        connect_timeout: Seconds to wait for a connection.
    """

    def __init__(self, path: str, *, timeout: float | None, connect_timeout: float) -> None:
        self.path = path
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._idle: list[_UnixConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def connect(self) -> None:
        """Open a connection now and keep it for the first request.

        Raises:
            OSError: The socket refuses it (its errno says why).
        """
        connection = self._new()
        connection.connect()
        self._give_back(connection)

    def post(self, target: str, body: bytes, content_type: str) -> tuple[int, bytes]:
        """POST ``body`` to ``target``; the answer's status and body.

        Raises:
            OSError: The connection failed (``TimeoutError`` past ``timeout``).
            http.client.HTTPException: The answer was no HTTP.
        """
        connection = self._take()
        try:
            connection.request("POST", target, body=body, headers={"content-type": content_type})
            response = connection.getresponse()
            content = response.read()
        except BaseException:
            connection.close()  # whatever was half sent or half read is lost with it
            raise
        if response.will_close:
            connection.close()
        else:
            self._give_back(connection)
        return response.status, content

    def close(self) -> None:
        """Close the idle connections; one in use closes when its request ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _new(self) -> _UnixConnection:
        return _UnixConnection(self.path, self._timeout, self._connect_timeout)

    def _take(self) -> _UnixConnection:
        with self._lock:
            while self._idle:
                connection = self._idle.pop()
                if _reusable(connection):
                    return connection
                connection.close()
        return self._new()  # connects when the request is sent

    def _give_back(self, connection: _UnixConnection) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(connection)
                return
        connection.close()
