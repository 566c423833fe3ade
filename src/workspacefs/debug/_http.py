"""The API's HTTP edge: JSON bodies, the error table, query parameters, headers.

Every error is ``{"error": code, "message": text, "status": n, ...}``:

========================================  ======  ===================
what                                      status  code
========================================  ======  ===================
``..`` segment or absolute ``?path=``     400     path_escape
NUL byte, over-long path, bad parameter   400     bad_request
a directory where a file is needed        400     is_directory
a file where a directory is needed        400     not_directory
Host header not this server (``_auth``)   400     bad_host
no token, or a wrong one (``_auth``)      401     unauthorized
unknown snapshot id                       404     unknown_snapshot
missing file or directory, unknown route  404     not_found
wrong method                              405     method_not_allowed
file over the text limit                  413     too_large
binary file                               415     binary
malformed archive or session record       500     malformed_archive
damaged git objects                       500     damaged_snapshot
storage gone (archive deleted, daemon)    503     unavailable
anything else (logged)                    500     internal
========================================  ======  ===================

413 and 415 answer the text views; ``/raw`` serves any file as a download,
and those errors carry its URL.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._errors import (
    BackendUnavailableError,
    InvalidContentError,
    PathEscapeError,
    SnapshotError,
    SnapshotNotFoundError,
)
from ..tree import PATH_MAX
from ._model import TreeEntry

log = logging.getLogger(__name__)

TREE_CHUNK = 2_000
"""Entries per chunk of a streamed tree."""


class JsonResponse(Response):
    """JSON with non-ASCII escaped, so that names which are not UTF-8 (held as
    surrogates) still encode, as ``\\udcxx``."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


class ApiError(Exception):
    """An error the API answers with its own status and code."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra


def error_body(status: int, code: str, message: str, extra: Mapping[str, Any]) -> JsonResponse:
    """The JSON response of an error."""
    return JsonResponse({"error": code, "message": message, "status": status, **extra}, status)


def _classify(exc: BaseException) -> tuple[int, str]:
    # Order matters: the hierarchy's classes inherit several builtins.
    if isinstance(exc, SnapshotNotFoundError):
        return 404, "unknown_snapshot"
    if isinstance(exc, InvalidContentError):
        return 500, "malformed_archive"  # ArchiveError and damaged session records
    if isinstance(exc, SnapshotError):
        return 500, "damaged_snapshot"
    if isinstance(exc, BackendUnavailableError):
        return 503, "unavailable"
    if isinstance(exc, PathEscapeError):
        return 400, "path_escape"
    if isinstance(exc, FileNotFoundError):
        return 404, "not_found"
    if isinstance(exc, IsADirectoryError):
        return 400, "is_directory"
    if isinstance(exc, NotADirectoryError):
        return 400, "not_directory"
    if isinstance(exc, ValueError):
        return 400, "bad_request"
    return 500, "internal"


def exception_response(request: Request, exc: Exception) -> Response:
    """Any exception as a JSON error (Starlette's exception handler signature)."""
    if isinstance(exc, ApiError):
        return error_body(exc.status, exc.code, exc.message, exc.extra)
    if isinstance(exc, HTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "bad_request")
        return error_body(exc.status_code, code, str(exc.detail), {})
    status, code = _classify(exc)
    if status == 500 and code == "internal":
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error_body(status, code, f"{type(exc).__name__}: {exc}", {})
    if isinstance(exc, OSError):
        message = exc.strerror or str(exc)
        extra = {} if exc.filename is None else {"path": exc.filename}
        if status >= 500:
            log.warning("%s %s: %s", request.method, request.url.path, exc)
        return error_body(status, code, message, extra)
    return error_body(status, code, str(exc), {})


def query(request: Request, name: str, default: str | None = None) -> str:
    """A required query parameter (or its default)."""
    value = request.query_params.get(name, default)
    if value is None:
        raise ApiError(400, "bad_request", f"the query parameter {name!r} is required")
    return value


def checked_path(raw: str) -> str:
    """A ``?path=`` value as the targets take it: relative, normalised, "" for the root.

    Anything naming a parent (``..``) or an absolute path is refused outright
    rather than resolved: the UI only sends paths the API gave it.
    """
    if len(raw) > PATH_MAX:
        raise ApiError(400, "bad_request", f"path longer than {PATH_MAX} characters")
    if "\0" in raw:
        raise ApiError(400, "bad_request", "path contains a NUL byte")
    if raw.startswith("/"):
        raise ApiError(400, "path_escape", "absolute paths are not served", path=raw)
    parts = raw.split("/")
    if ".." in parts:
        raise ApiError(400, "path_escape", "paths with '..' are not served", path=raw)
    return "/".join(part for part in parts if part not in ("", "."))


def json_array_chunks(
    files: Iterator[TreeEntry], *, limit: int, stop: Callable[[], str | None]
) -> Iterator[bytes]:
    """The seed's tree, ``[{"path", "size_bytes", "kind"}, ...]``, in chunks of
    ``TREE_CHUNK`` entries (the first chunk opens the array), at most ``limit``
    entries.

    ``stop`` is asked after each chunk for a reason to end early (a deadline).
    A listing cut short, by ``limit`` or by ``stop``, ends with a marker element
    ``{"truncated": true, "reason": ..., "after": <the last path listed>}``: the
    next page is ``?after=`` that path.
    """
    opening, shown, last = b"[", 0, ""
    reason: str | None = None
    while True:
        wanted = min(TREE_CHUNK, limit - shown)
        chunk = list(itertools.islice(files, wanted))
        if chunk:
            text = ",".join(
                json.dumps({"path": e.path, "size_bytes": e.size, "kind": e.kind}) for e in chunk
            )
            yield opening + text.encode("ascii")
            opening, shown, last = b",", shown + len(chunk), chunk[-1].path
        if len(chunk) < wanted:
            break  # the walk is over
        if shown >= limit:
            reason = "limit" if next(files, None) is not None else None
            break
        reason = stop()
        if reason is not None:
            break
    if reason is not None:
        marker = {"truncated": True, "reason": reason, "after": last}
        yield opening + json.dumps(marker).encode("ascii")
        opening = b","
    yield b"[]" if opening == b"[" else b"]"


def positive_int(request: Request, name: str, default: int, cap: int) -> int:
    """A query parameter that must be a positive integer; at most ``cap``."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ApiError(400, "bad_request", f"{name} must be a positive integer")
    return min(int(raw), cap)


def download_url(snapshot: str, path: str) -> str:
    """Where ``/raw`` serves a file."""
    return f"/api/snapshots/{quote(snapshot, safe='')}/raw?path={quote(path, safe='')}"


# Nothing the page needs comes from elsewhere; a workspace file is never run.
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", _CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),  # a live workspace changes under the same URL
]


class SecurityHeaders:
    """Adds the headers above to every response (a plain ASGI middleware, so
    streamed downloads stay streamed)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
