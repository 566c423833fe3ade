"""The control API: a Starlette app, one route per verb, under ``/v2``.

Every request body and answer is JSON (``_wire``). A success is
``{"result": ...}`` with status 200; a failure is ``{"error": {...}}`` with
400 (the verb refused: the class, errno, message and path to rebuild it) or
500 (a bug, logged here). Each verb runs in a worker thread, attributed to
the body's ``cause`` (a ``Cause.to_dict``), if it has one: what the verb
changes is then blamed on the client's call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._errors import InvalidArgumentError, LimitExceededError, MountedInsideError
from ..fs import Cause, Limits, attributed
from ..fuse import refuse_if_mounted_inside
from ._wire import JSON_TYPE, PREFIX, Json, dumps, encode_error, loads
from ._workspace import Workspace

log = logging.getLogger(__name__)

Handler = Callable[[Json, Request], Any]


def _answer(status: int, payload: object, background: BackgroundTask | None = None) -> Response:
    return Response(dumps(payload), status, media_type=JSON_TYPE, background=background)


def _failure(exc: BaseException) -> Response:
    status, payload = encode_error(exc)
    if status >= 500:
        log.error("request failed", exc_info=exc)
    return _answer(status, payload)


def _attributed(handler: Handler, body: Json, request: Request) -> Any:
    """Run ``handler`` in this (worker) thread, attributed to the body's cause."""
    cause = body.pop("cause", None)
    with attributed(None if cause is None else Cause.from_dict(cause)):
        return handler(body, request)


def _max_body(limits: Limits) -> int:
    """The largest request body a verb needs: ``write_bytes``' largest content in
    base64, or ``write``'s largest text with every character escaped (``\\uXXXX``, two
    of them for a character outside the BMP), and 1 MiB for the rest."""
    return max(4 * -(-limits.max_write_bytes // 3), 12 * limits.max_write_chars) + (1 << 20)


async def _body(request: Request, most: int) -> bytes:
    """The request's body, refused past ``most`` bytes. A body is held whole and then
    decoded (JSON, base64) at a few times its size, outside the memory budget: a larger
    one is refused unread when its length is declared, else once that much came in."""
    declared = request.headers.get("content-length")  # h11 has checked it is a number
    if declared is not None and int(declared) > most:
        raise _too_large(int(declared), most)
    kept: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > most:
            raise _too_large(size, most)
        kept.append(chunk)
    return b"".join(kept)


def _too_large(size: int, most: int) -> LimitExceededError:
    return LimitExceededError(
        f"request body of {size:,} bytes or more, over the limit of {most:,} "
        "(what a call's largest content needs)",
        None,
    )


def _endpoint(handler: Handler, most: int) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            body = loads(await _body(request, most))
            if not isinstance(body, dict):
                raise InvalidArgumentError("the request body must be a JSON object", None)
            result = await anyio.to_thread.run_sync(_attributed, handler, body, request)
        except Exception as exc:
            return _failure(exc)
        return _answer(200, {"result": result})

    return endpoint


def create_app(workspace: Workspace, shutdown: Callable[[], Awaitable[None]]) -> Starlette:
    """The control API over ``workspace``; ``/v2/unmount`` calls ``shutdown`` once answered,
    or refuses (``MountedInsideError``) while something is mounted inside the mount point."""
    w = workspace
    most = _max_body(w.fs.limits)

    async def unmount(request: Request) -> Response:
        try:
            # A lazy unmount would take a workspace mounted inside along, daemon and all.
            refuse_if_mounted_inside(w.info.mountpoint)
        except MountedInsideError as exc:
            return _failure(exc)
        return _answer(200, {"result": {"pid": w.info.pid}}, BackgroundTask(shutdown))

    async def not_found(request: Request, exc: Exception) -> Response:
        message = f"no endpoint {request.method} {request.url.path}; this daemon speaks {PREFIX}"
        return _failure(InvalidArgumentError(message, None))

    def route(path: str, handler: Handler, method: str = "POST") -> Route:
        return Route(PREFIX + path, _endpoint(handler, most), methods=[method])

    routes = [
        route("/info", lambda a, r: w.describe(), "GET"),
        route("/status", lambda a, r: w.status(), "GET"),
        route("/fs/{verb}", lambda a, r: w.call(r.path_params["verb"], a)),
        route("/snapshots", lambda a, r: w.snapshots(), "GET"),
        route("/snapshots", lambda a, r: w.snapshot(a.get("tag"))),
        route("/snapshots/current", lambda a, r: w.current(), "GET"),
        route("/snapshots/delete", lambda a, r: w.delete_snapshot(a["snapshot"])),
        route("/snapshots/prune", lambda a, r: w.prune(a)),
        route("/space", lambda a, r: w.space(), "GET"),
        route("/restore", lambda a, r: w.restore(a["snapshot"], a.get("if_unchanged_since"))),
        route("/diff", lambda a, r: w.diff(a["base"], a.get("target"))),
        route("/changes", lambda a, r: w.changes(a.get("snapshot"))),
        route("/blame", lambda a, r: w.blame(a["path"], a.get("snapshot"))),
        route("/export", lambda a, r: w.export(a["path"], a.get("at"))),
        route("/import", lambda a, r: w.import_(a["path"], a.get("limits"))),
        route(
            "/persist",
            lambda a, r: w.persist(
                a.get("snapshot"), a.get("tag"), a.get("remote"), a.get("max_file_bytes")
            ),
        ),
        route("/push", lambda a, r: w.push(a["url"])),
        route("/forks", lambda a, r: w.list_forks(), "GET"),
        route("/forks", lambda a, r: w.fork(a.get("name"), a.get("snapshot"))),
        route("/forks/drop", lambda a, r: w.drop_fork(a["name"])),
        route(
            "/forks/merge",
            lambda a, r: w.merge_fork(
                a["name"], bool(a.get("dry_run", False)), bool(a.get("markers", False))
            ),
        ),
        route("/fetch", lambda a, r: w.fetch(a["url"])),
        Route(PREFIX + "/unmount", unmount, methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
