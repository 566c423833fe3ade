"""The control API: a Starlette app serving every verb of the table at ``/v3/<verb>``,
and the change feed at ``GET /v3/events`` (server-sent events, ``_events``).

Every request body and answer is JSON (``_wire``); the body holds the verb's
arguments by name (``_verbs``: the table says which, and how each is
written), and ``at`` for a view of a snapshot. A success is
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

from .._errors import InvalidArgumentError, LimitExceededError
from ..fs import Cause, Limits, attributed
from ._events import events_response
from ._verbs import VERBS, Verb
from ._wire import JSON_TYPE, PREFIX, Json, dumps, encode_error, loads
from ._workspace import Workspace

log = logging.getLogger(__name__)


def _answer(status: int, payload: object, background: BackgroundTask | None = None) -> Response:
    return Response(dumps(payload), status, media_type=JSON_TYPE, background=background)


def _failure(exc: BaseException) -> Response:
    status, payload = encode_error(exc)
    if status >= 500:
        log.error("request failed", exc_info=exc)
    return _answer(status, payload)


def _attributed(workspace: Workspace, verb: Verb[Any, Any], body: Json) -> Any:
    """Run ``verb`` in this (worker) thread, attributed to the body's cause."""
    cause = body.pop("cause", None)
    with attributed(None if cause is None else Cause.from_dict(cause)):
        return workspace.call(verb, body)


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


def create_app(
    workspace: Workspace,
    shutdown: Callable[[], Awaitable[None]],
    stopping: Callable[[], bool] = lambda: False,
) -> Starlette:
    """The control API over ``workspace``; a verb that stops the daemon (``unmount``)
    calls ``shutdown`` once answered, and the change feed's streams end once
    ``stopping()`` is true."""
    most = _max_body(workspace.fs.limits)

    async def events(request: Request) -> Response:
        try:
            return await events_response(request, workspace, stopping)
        except Exception as exc:
            return _failure(exc)

    async def endpoint(request: Request) -> Response:
        try:
            name = request.path_params["verb"]
            verb = VERBS.get(name)
            if verb is None:
                raise InvalidArgumentError(
                    f"no verb {name!r}; this daemon's verbs are {', '.join(sorted(VERBS))}", None
                )
            body = loads(await _body(request, most))
            if not isinstance(body, dict):
                raise InvalidArgumentError("the request body must be a JSON object", None)
            result = await anyio.to_thread.run_sync(_attributed, workspace, verb, body)
        except Exception as exc:
            return _failure(exc)
        return _answer(200, {"result": result}, BackgroundTask(shutdown) if verb.stops else None)

    async def not_found(request: Request, exc: Exception) -> Response:
        message = f"no endpoint {request.method} {request.url.path}; this daemon speaks {PREFIX}"
        return _failure(InvalidArgumentError(message, None))

    # GET too: the verbs that take nothing read well from curl (``GET /v3/status``).
    routes = [
        Route(PREFIX + "/events", events, methods=["GET"]),
        Route(PREFIX + "/{verb}", endpoint, methods=["GET", "POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
