"""Who the debug UI answers: a per-run secret on every request, and only its own Host names.

The UI serves every file of a workspace, whatever its mode, and the command
lines of its history: as much as the workspace's owner can read. So, as
Jupyter does, each run makes a secret (``new_token``), the command prints the
page's URL with it (``/?token=...``), and every route asks for it. A browser
that opens that URL is given an ``HttpOnly; SameSite=Strict`` cookie, so the
page's own requests carry the secret and no script (nor another site) reads
it; a program sends ``Authorization: Bearer <token>`` or ``?token=``.
Anything else is a 401, on every path, before routing.

The Host check keeps another site's page, whose name an attacker re-points
at this machine (DNS rebinding), from talking to the server with the
victim's browser: only the localhost names, the names the server was told,
and the address the request arrived at are served, whatever the bind
address.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._errors import InvalidArgumentError
from ._http import error_body

TOKEN_BYTES = 32
"""Random bytes in a run's secret (``secrets.token_urlsafe``)."""
MIN_TOKEN_LENGTH = 16
"""The shortest secret ``create_app`` accepts."""
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
"""Host names always served: this machine's loopback names."""
ANY_ADDRESS = ("0.0.0.0", "::", "")
"""Bind addresses that mean every interface."""


def new_token() -> str:
    """A fresh secret for one run of the UI (URL-safe, 256 bits)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def check_token(token: str) -> str:
    """``token`` if it is long enough to be a secret.

    Raises:
        InvalidArgumentError: It is shorter than ``MIN_TOKEN_LENGTH``.
    """
    if len(token) < MIN_TOKEN_LENGTH:
        raise InvalidArgumentError(
            f"the debug UI's token must be at least {MIN_TOKEN_LENGTH} characters"
        )
    return token


def cookie_name(scope: Scope) -> str:
    """The cookie holding the secret. Browsers keep one cookie jar per host name,
    whatever the port, so the port is in the name: two servers on one machine
    do not overwrite each other's."""
    server = scope.get("server")
    port = server[1] if server and server[1] is not None else 0
    return f"workspacefs-debug-{port}"


def _same(presented: str | None, expected: bytes) -> bool:
    if not presented:
        return False
    return hmac.compare_digest(presented.encode("utf-8", "surrogateescape"), expected)


def _bearer(authorization: str | None) -> str | None:
    if authorization is None:
        return None
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


class TokenRequired:
    """Answers 401 to any request without the secret (a plain ASGI middleware,
    around the router, so no route, present or future, is served without it)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token
        self._expected = token.encode("utf-8", "surrogateescape")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        name = cookie_name(scope)
        if _same(request.cookies.get(name), self._expected) or _same(
            _bearer(request.headers.get("authorization")), self._expected
        ):
            await self.app(scope, receive, send)
            return
        if not _same(request.query_params.get("token"), self._expected):
            response = error_body(
                401,
                "unauthorized",
                "this debug UI needs its token: open the URL `workspacefs debug` printed "
                "(it ends in ?token=...), or send 'Authorization: Bearer <token>'",
                {},
            )
            response.headers["www-authenticate"] = 'Bearer realm="workspacefs debug"'
            await response(scope, receive, send)
            return
        # The URL's token: from now on the browser sends the cookie instead (the page
        # then drops the token from its address bar).
        cookie = f"{name}={self._token}; Path=/; HttpOnly; SameSite=Strict".encode()

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (b"set-cookie", cookie)]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def _host_of(header: str | None) -> str | None:
    """The host name of a Host header, lower case, IPv6 without brackets; None if malformed."""
    if not header:
        return None
    try:
        parts = urlsplit(f"//{header}")
        host, _ = parts.hostname, parts.port  # the port raises ValueError unless a number
    except ValueError:
        return None
    if not host or parts.username is not None or parts.path or parts.query or parts.fragment:
        return None
    return host


def _bare(name: str) -> str:
    return name.strip("[]").lower()


class HostRequired:
    """Answers 400 unless the Host header names this server: a localhost name, one
    of ``names``, or the very address the request arrived at."""

    def __init__(self, app: ASGIApp, names: Iterable[str]) -> None:
        self.app = app
        self._names = frozenset(_bare(name) for name in (*LOCAL_HOSTS, *names))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        host = _host_of(Request(scope).headers.get("host"))
        server = scope.get("server")
        arrived = _bare(str(server[0])) if server else None
        if host is not None and (host in self._names or host == arrived):
            await self.app(scope, receive, send)
            return
        response = error_body(400, "bad_host", "this server does not answer that Host", {})
        await response(scope, receive, send)


def is_loopback(host: str) -> bool:
    """True if every address ``host`` names is a loopback address (127.0.0.0/8, ::1)."""
    if host in ANY_ADDRESS:
        return False
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False  # a name that resolves to nothing binds nothing either
    addresses = {info[4][0] for info in found}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)
