"""Serving the app: ``serve`` until Ctrl-C, or ``start`` in a background thread.

Hypercorn on trio, the loop the rest of the project uses (the FUSE layer,
the daemon). Bound to 127.0.0.1 unless told otherwise; an address other
machines reach only with ``expose=True`` (``--expose``). Each run makes its
own secret, and the URL it reports carries it (``_auth``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
import webbrowser
from collections.abc import Callable, Sequence
from functools import partial
from urllib.parse import urlsplit

import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve

from .._errors import BackendUnavailableError, NotPermittedError
from ._app import create_app
from ._auth import ANY_ADDRESS, is_loopback, new_token
from ._target import DebugTarget

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765


def allowed_hosts_for(host: str) -> list[str]:
    """The Host names a server bound to ``host`` answers, besides the localhost names
    and the address a request arrives at: ``host`` itself, or for a wildcard bind
    (0.0.0.0, ::) this machine's names."""
    if host in ANY_ADDRESS:
        return list(dict.fromkeys([socket.gethostname(), socket.getfqdn()]))
    return [host]


def check_exposure(host: str, expose: bool) -> None:
    """Refuse to bind an address other machines may reach unless ``expose`` says so.

    Raises:
        NotPermittedError: ``host`` is not a loopback address and ``expose`` is false.
    """
    if not expose and not is_loopback(host):
        raise NotPermittedError(
            f"refusing to serve the debug UI on {host or 'every address'!r}, which other "
            "machines can reach: anyone there who learns the URL reads every file of the "
            "workspace. Pass --expose (expose=True) to do it anyway, or bind 127.0.0.1"
        )


def base_url(bound: str) -> str:
    """Where a server that reports ``bound`` (hypercorn's ``http://host:port``) is
    reached from this machine: a wildcard bind through the loopback address."""
    parts = urlsplit(bound)
    if parts.hostname in ANY_ADDRESS:
        loopback = "[::1]" if parts.hostname == "::" else "127.0.0.1"
        return f"{parts.scheme}://{loopback}:{parts.port}/"
    return f"{bound}/"


def page_url(base: str, token: str) -> str:
    """The URL to open: the page at ``base``, with the secret."""
    return f"{base}?token={token}"


def check_port(host: str, port: int) -> None:
    """Raise the ``OSError`` of a port that cannot be bound (EADDRINUSE, say), here,
    before the server starts: hypercorn reports it from inside its loop instead."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as hypercorn does
        probe.bind((host, port))


def _config(host: str, port: int, quiet: bool) -> Config:
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    if quiet:
        config.loglevel = "WARNING"
    return config


def serve(
    target: DebugTarget,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    open_browser: bool = False,
    ready: Callable[[str], None] | None = None,
    expose: bool = False,
    token: str | None = None,
) -> None:
    """Serve the debug UI for ``target`` until SIGINT (Ctrl-C) or SIGTERM, then return.

    Call it from the main thread (signals are delivered there); elsewhere use
    ``start``.

    Args:
        target: What to show.
        host: The interface to bind; 127.0.0.1 keeps it on this machine.
        port: The TCP port (0: any free one).
        open_browser: Open the page in the default browser once it serves.
        ready: Called with the page's URL, which carries the secret, once the
            server listens.
        expose: Allow ``host`` to be an address other machines reach.
        token: The secret (default: a new one, ``new_token()``).

    Raises:
        NotPermittedError: ``host`` is not a loopback address and ``expose`` is false.
    """
    check_exposure(host, expose)
    check_port(host, port)
    target.warm()
    stopping = threading.Event()
    token = new_token() if token is None else token
    app = create_app(target, token=token, allowed_hosts=allowed_hosts_for(host), stopping=stopping)
    config = _config(host, port, quiet=ready is not None)

    async def main() -> None:
        stop = trio.Event()
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                # hypercorn types ASGI messages as TypedDicts, Starlette as plain dicts.
                serving = partial(hypercorn_serve, app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
                binds: list[str] = await nursery.start(serving)
                url = page_url(base_url(binds[0]), token)
                if ready is not None:
                    ready(url)
                if open_browser:
                    # webbrowser may start a program and wait for it: not on the loop.
                    nursery.start_soon(partial(trio.to_thread.run_sync, webbrowser.open, url))
                async for _ in signals:
                    # Requests in flight answer with what they have at once (their
                    # handlers run in threads, which no cancellation reaches), then
                    # the server closes; hypercorn cancels what is left after
                    # ``graceful_timeout``.
                    stopping.set()
                    stop.set()
                    break

    trio.run(main)


class DebugServer:
    """The debug UI served from a background thread (for tests, notebooks, or an
    agent process showing its own workspace); ``start()`` makes one and starts it.

    ``url`` is the page to open (it carries the secret, ``token``); programs
    call ``base_url`` with ``Authorization: Bearer <token>``.

    Raises:
        NotPermittedError: ``host`` is not a loopback address and ``expose`` is false.
    """

    def __init__(
        self,
        target: DebugTarget,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        allowed_hosts: Sequence[str] = (),
        expose: bool = False,
        token: str | None = None,
    ) -> None:
        check_exposure(host, expose)
        self._stopping = threading.Event()
        self.token = new_token() if token is None else token
        self._app = create_app(
            target,
            token=self.token,
            allowed_hosts=[*allowed_hosts_for(host), *allowed_hosts],
            stopping=self._stopping,
        )
        self._config = _config(host, port, quiet=True)
        self._address = (host, port)
        self._started = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._bound: str | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="workspacefs-debug", daemon=True)

    @property
    def url(self) -> str:
        """The page's URL with the secret, e.g. ``http://127.0.0.1:41234/?token=...``."""
        return page_url(self.base_url, self.token)

    @property
    def base_url(self) -> str:
        """Where the server answers, without the secret: ``http://127.0.0.1:41234/``."""
        assert self._bound is not None, "start() returns a started server"
        return base_url(self._bound)

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
        finally:
            self._started.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        stop = self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            serving = partial(
                hypercorn_serve,
                self._app,  # type: ignore[arg-type]  # TypedDict messages vs plain dicts
                self._config,
                shutdown_trigger=stop.wait,
            )
            binds: list[str] = await nursery.start(serving)
            self._bound = binds[0]
            self._started.set()

    def start(self, timeout: float = 10.0) -> None:
        """Start serving; return once the server listens.

        Raises:
            OSError: The port cannot be bound (EADDRINUSE: it is taken).
            BackendUnavailableError: It did not start within ``timeout`` seconds.
        """
        check_port(*self._address)
        self._thread.start()
        if not self._started.wait(timeout) or self._bound is None:
            self.close()
            raise BackendUnavailableError(f"the debug server did not start: {self._error!r}", None)

    def close(self) -> None:
        """Stop serving and wait for the thread (idempotent)."""
        self._stopping.set()
        if self._token is not None and self._stop is not None and self._thread.is_alive():
            with contextlib.suppress(trio.RunFinishedError):  # it stopped meanwhile
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        if self._thread.is_alive():
            self._thread.join(10)

    def __enter__(self) -> DebugServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start(
    target: DebugTarget,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 10.0,
    expose: bool = False,
) -> DebugServer:
    """Serve ``target`` from a background thread; returns once it listens.

    Close the returned server (or use it as a context manager) to stop it;
    open its ``url`` (which carries the run's secret).

    Raises:
        NotPermittedError: ``host`` is not a loopback address and ``expose`` is false.
    """
    server = DebugServer(target, host=host, port=port, expose=expose)
    server.start(timeout)
    return server
