"""``create_app``: the debug UI's ASGI app (Starlette) over one ``DebugTarget``.

Routes (all GET; errors as in ``_http``); every one, and any unknown path,
needs the run's secret and a Host header naming this server first (``_auth``):

* ``/`` the page, ``/app.js`` and ``/app.css`` its script and style;
* ``/api/target``, ``/api/snapshots``, ``/api/snapshots/{id}`` (details);
* ``/api/snapshots/{id}/tree?path=`` one directory;
* ``/api/snapshots/{id}/file?path=[&against={id}]`` a text file, with the lines
  that differ from ``against`` when given;
* ``/api/snapshots/{id}/raw?path=`` any file, as a download;
* ``/api/diff?from=&to=[&patch=1]`` the paths that changed (and a unified diff),
  with who changed each where the target records it;
* ``/api/causes`` who made each snapshot's changes, for the timeline, and
  ``/api/snapshots/{id}/changes`` one snapshot's changes with their causes;
* ``/api/diff/file?from=&to=&path=`` one file's hunks;
* ``/api/trials`` a live workspace's best-of-N trials (``available`` False where
  the target runs none), each attempt's result, changes and output tails;
* ``/api/events[?after=]`` a live workspace's change feed, relayed as server-sent
  events (each cause with its ``text``), resumed from ``Last-Event-ID``;
* seed 003's ``/api/filesystem/meta``, ``/api/filesystem/tree[?limit=&after=]``
  and ``/api/filesystem/file?path=``, on the newest snapshot unless ``?snapshot=``.

Handlers are plain functions: Starlette runs them in worker threads, so a
slow archive or git read never blocks the event loop. The heavy ones (a
patch, the whole tree) are bounded by their parameters and by a deadline
per request, and answer with what they have, marked as cut short, when it
passes or when the server is stopping; no file over ``TEXT_LIMIT`` is read
for a text view or a patch.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from importlib import resources
from typing import Any
from urllib.parse import quote

import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._errors import BackendUnavailableError, NotFoundError
from ..daemon import (
    SSE_KEEPALIVE,
    ClosingStreamingResponse,
    EventStreamResponse,
    sse_frame,
    sse_position,
)
from ..fs import (
    PATCH_LINE_LIMIT,
    ChangeStream,
    PatchSource,
    Trial,
    build_patch,
    file_patch,
    to_json,
)
from ..tree import PATH_MAX
from ._auth import HostRequired, TokenRequired, check_token
from ._http import (
    ApiError,
    JsonResponse,
    SecurityHeaders,
    checked_path,
    download_url,
    exception_response,
    json_array_chunks,
    positive_int,
    query,
)
from ._live import LiveTarget
from ._model import PathAttribution, SnapshotSummary, TreeEntry, cause_json, merged
from ._target import DebugTarget
from ._text import Hunk, changed_lines, decode_text, hunks, split_lines

log = logging.getLogger(__name__)

TIMELINE_CAUSES = 3
"""Causes the timeline shows per snapshot (the rest are counted)."""
TEXT_LIMIT = 1 << 20
"""Largest file shown as text (bigger ones: 413, and a download)."""
PATCH_LINES = 2_000
"""Lines ``/api/diff?patch=1`` returns unless ``max_lines`` says otherwise."""
MAX_PATCH_LINES = 50_000
"""The most ``max_lines`` may ask for."""
TREE_LIMIT = 1_000_000
"""Most files one ``/api/filesystem/tree`` answer lists (and the most ``limit`` may ask for)."""
REQUEST_SECONDS = 10.0
"""How long a heavy request works before it answers with what it has, marked so."""

RELAY_WAIT = 0.5
"""Seconds the change feed's relay waits for an event before it looks whether the
server stops (a relay holds a worker thread while it waits)."""
RELAY_KEEPALIVE = 15.0
"""Seconds an idle relay waits before a comment line."""

_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
}


def _static(name: str) -> bytes:
    return (resources.files(__package__) / "static" / name).read_bytes()


class _Api:
    """The handlers, bound to one target."""

    def __init__(
        self, target: DebugTarget, request_seconds: float, stopping: threading.Event
    ) -> None:
        self.target = target
        self.request_seconds = request_seconds
        self.stopping = stopping

    def _deadline(self) -> _Deadline:
        return _Deadline(time.monotonic() + self.request_seconds, self.stopping)

    def _source(self, snapshot: str) -> PatchSource:
        """One side of a patch: a live target's state is read by one reader (so one
        request freezes the live tree once and looks a snapshot up once)."""
        if isinstance(self.target, LiveTarget):
            reader = self.target.reader(snapshot)
            return _Source(reader.stat, reader.read)
        return _Source(partial(self.target.stat, snapshot), partial(self.target.read, snapshot))

    # -- helpers -----------------------------------------------------------------------

    def _newest(self) -> SnapshotSummary:
        snapshots = self.target.snapshots(space=False)
        if not snapshots:
            raise ApiError(404, "unknown_snapshot", "the target holds no snapshots")
        return snapshots[-1]

    def _summary(self, snapshot: str, *, space: bool = False) -> SnapshotSummary:
        for summary in self.target.snapshots(space=space):
            if summary.id == snapshot:
                return summary
        raise ApiError(404, "unknown_snapshot", "no such snapshot", snapshot=snapshot)

    def _text(self, snapshot: str, path: str) -> tuple[TreeEntry, str | None]:
        """A file's entry and text (None for a symlink); 413/415 for what is no text."""
        entry = self.target.stat(snapshot, path)
        if entry.kind == "directory":
            raise ApiError(400, "is_directory", "is a directory", path=path)
        if entry.kind == "symlink":
            return entry, None
        if entry.kind != "file":
            raise ApiError(415, "binary", "not a regular file", path=path)
        if entry.size > TEXT_LIMIT:
            raise ApiError(
                413,
                "too_large",
                f"{entry.size:,} bytes, over the {TEXT_LIMIT:,}-byte limit for text",
                path=path,
                size=entry.size,
                limit=TEXT_LIMIT,
                download=download_url(snapshot, path),
            )
        text = decode_text(self.target.read(snapshot, path, TEXT_LIMIT))
        if text is None:
            raise ApiError(
                415,
                "binary",
                "binary file (a NUL byte, or not UTF-8)",
                path=path,
                size=entry.size,
                download=download_url(snapshot, path),
            )
        return entry, text

    def _version(self, snapshot: str, path: str) -> _Version:
        """One side of a comparison: absent, text (a symlink's is its target, as git
        shows a link), or not text."""
        try:
            entry, text = self._text(snapshot, path)
        except NotFoundError:
            return _Version(None, "", "absent")
        except ApiError as exc:
            if exc.code not in ("binary", "too_large"):
                raise
            return _Version(self.target.stat(snapshot, path), None, exc.code)
        if text is None:
            return _Version(entry, entry.target or "", "text")
        return _Version(entry, text, "text")

    # -- the UI's routes ---------------------------------------------------------------

    def target_info(self, request: Request) -> Response:
        return JsonResponse(self.target.info().to_json())

    def snapshots(self, request: Request) -> Response:
        found = self.target.snapshots()
        return JsonResponse({"snapshots": [s.to_json() for s in found]})

    def snapshot(self, request: Request) -> Response:
        snapshot = request.path_params["snapshot"]
        summary = self._summary(snapshot, space=True)
        return JsonResponse({"snapshot": summary.to_json(), **self.target.details(snapshot)})

    def tree(self, request: Request) -> Response:
        snapshot = request.path_params["snapshot"]
        path = checked_path(query(request, "path", ""))
        entries = self.target.list(snapshot, path)
        return JsonResponse(
            {"snapshot": snapshot, "path": path, "entries": [e.to_json() for e in entries]}
        )

    def file(self, request: Request) -> Response:
        snapshot = request.path_params["snapshot"]
        path = checked_path(query(request, "path"))
        against = request.query_params.get("against")
        entry, text = self._text(snapshot, path)
        lines = split_lines(f"-> {entry.target}" if text is None else text)
        body: dict[str, Any] = {
            "snapshot": snapshot,
            **entry.to_json(),
            "content": text,
            "line_count": len(lines),
            "download": None if text is None else download_url(snapshot, path),
        }
        if against is not None and against != snapshot:
            self._summary(against)  # an unknown id is a 404, not "every line changed"
            other = self._version(against, path)
            old = None if other.text is None else split_lines(other.text)
            comparable = old is not None and max(len(old), len(lines)) <= PATCH_LINE_LIMIT
            body["against"] = against
            body["against_status"] = other.why
            body["changed_lines"] = (
                changed_lines(old, lines) if old is not None and comparable else None
            )
        return JsonResponse(body)

    def raw(self, request: Request) -> Response:
        snapshot = request.path_params["snapshot"]
        path = checked_path(query(request, "path"))
        entry = self.target.stat(snapshot, path)
        if entry.kind == "directory":
            raise ApiError(400, "is_directory", "is a directory", path=path)
        if entry.kind != "file":
            raise ApiError(404, "not_found", "not a regular file", path=path)
        blocks = _until(self.target.blocks(snapshot, path), self.stopping)
        name = quote(entry.name or "file", safe="")
        return ClosingStreamingResponse(
            blocks,
            media_type="application/octet-stream",
            headers={
                "content-disposition": f"attachment; filename*=UTF-8''{name}",
                "content-length": str(entry.size),
            },
        )

    def causes(self, request: Request) -> Response:
        found: dict[str, Any] = {}
        for summary in self.target.snapshots(space=False):
            attribution = self.target.attribution(summary.id)
            if attribution is None:
                return JsonResponse({"attributed": False, "snapshots": {}})
            shown, more = attribution.causes(TIMELINE_CAUSES)
            found[summary.id] = {"causes": shown, "more": more}
        return JsonResponse({"attributed": True, "snapshots": found})

    def changes(self, request: Request) -> Response:
        snapshot = request.path_params["snapshot"]
        self._summary(snapshot)
        attribution = self.target.attribution(snapshot)
        if attribution is None:
            raise ApiError(404, "not_attributed", "this target records no causes")
        return JsonResponse({"snapshot": snapshot, **attribution.to_json()})

    def _path_causes(self, base: str, target: str) -> dict[str, PathAttribution] | None:
        """Who changed each path from ``base`` to ``target``: the steps from ``target``
        back to ``base``, united; None if the target records no causes or ``base``
        is not an earlier state of ``target``."""
        steps: list[Mapping[str, PathAttribution]] = []
        current: str | None = target
        most = len(self.target.snapshots(space=False))  # each step goes back one snapshot
        while current is not None and current != base and len(steps) <= most:
            attribution = self.target.attribution(current)
            if attribution is None:
                return None
            steps.append(attribution.paths)
            current = attribution.base
        return merged(steps) if current == base else None

    def diff(self, request: Request) -> Response:
        deadline = self._deadline()
        base, target = query(request, "from"), query(request, "to")
        changes = self.target.diff(base, target)
        body: dict[str, Any] = {"from": base, "to": target, **changes.to_json()}
        who = self._path_causes(base, target)
        if who is not None:
            changed = {*changes.added, *changes.modified, *changes.deleted}
            body["causes"] = {
                path: [dict(cause) for cause in found.causes]
                for path, found in who.items()
                if path in changed
            }
        if request.query_params.get("patch") in ("1", "true", "yes"):
            limit = positive_int(request, "max_lines", PATCH_LINES, MAX_PATCH_LINES)
            paths = sorted({*changes.added, *changes.modified, *changes.deleted})
            before, after = self._source(base), self._source(target)
            patch = build_patch(
                before, after, paths, max_lines=limit, expired=deadline.expired, limit=TEXT_LIMIT
            )
            body["patch"] = "\n".join(patch.lines)
            body["patch_truncated"] = patch.truncated
            stopped: str | None = patch.stopped
            if stopped == "deadline":  # or the server stopping: say which
                stopped = deadline.reason() or stopped
            body["patch_stopped"] = stopped
            body["patch_files_left_out"] = patch.files_left_out
        return JsonResponse(body)

    def diff_file(self, request: Request) -> Response:
        base, target = query(request, "from"), query(request, "to")
        path = checked_path(query(request, "path"))
        old, new = self._version(base, path), self._version(target, path)
        if old.entry is None and new.entry is None:
            self._summary(base)  # unknown snapshot ids say so, rather than "no such file"
            self._summary(target)
            raise ApiError(404, "not_found", "no such file in either snapshot", path=path)
        found: list[Hunk] = []
        too_large = "too_large" in (old.why, new.why)
        if old.text is not None and new.text is not None:
            old_lines, new_lines = split_lines(old.text), split_lines(new.text)
            too_large = max(len(old_lines), len(new_lines)) > PATCH_LINE_LIMIT
            if not too_large:
                found = hunks(old_lines, new_lines)
        if old.entry is None or new.entry is None:
            status = "added" if old.entry is None else "deleted"
        elif old.entry.mode != new.entry.mode or old.entry.kind != new.entry.kind:
            status = "modified"
        elif old.text is not None and new.text is not None:
            status = "unchanged" if old.text == new.text else "modified"
        else:  # no text to compare: the target's own diff knows, without reading bytes
            status = self.target.diff(base, target).status(path)
        return JsonResponse(
            {
                "from": base,
                "to": target,
                "path": path,
                "status": status,
                "old": None if old.entry is None else old.entry.to_json(),
                "new": None if new.entry is None else new.entry.to_json(),
                "binary": "binary" in (old.why, new.why),
                "too_large": too_large,
                "downloads": {
                    "old": download_url(base, path) if _is_file(old.entry) else None,
                    "new": download_url(target, path) if _is_file(new.entry) else None,
                },
                "hunks": [hunk.to_json() for hunk in found],
                "unified": "\n".join(
                    file_patch(path, self._source(base), self._source(target), limit=TEXT_LIMIT)
                ),
            }
        )

    # -- the live view's change feed ----------------------------------------------------

    def events(self, request: Request) -> Response:
        if not (isinstance(self.target, LiveTarget) and self.target.watchable):
            raise ApiError(404, "not_live", "this target does not change: it has no change feed")
        after = request.headers.get("last-event-id") or request.query_params.get("after")
        stream = self.target.events(after or None)  # a bad id is a 400, before the stream
        return EventStreamResponse(self._relay(stream))

    async def _relay(self, stream: ChangeStream) -> AsyncGenerator[bytes, None]:
        """The feed's events as frames, each cause with its text for the page, until
        the server stops or the feed ends (a daemon that stopped: the page retries).
        Each wait for an event holds a worker thread for at most ``RELAY_WAIT``."""
        try:
            yield sse_position(stream.last_id, retry_ms=1000)
            quiet = time.monotonic()
            while not self.stopping.is_set():
                event = await anyio.to_thread.run_sync(stream.next_event, RELAY_WAIT)
                if event is not None:
                    shown = {**event.to_dict(), "causes": [cause_json(c) for c in event.causes]}
                    yield sse_frame(event.id, json.dumps(shown, separators=(",", ":")).encode())
                    quiet = time.monotonic()
                elif stream.closed:
                    return
                elif time.monotonic() - quiet >= RELAY_KEEPALIVE:
                    yield SSE_KEEPALIVE
                    quiet = time.monotonic()
        except BackendUnavailableError as exc:
            log.info("the change feed ended: %s", exc)
        finally:
            stream.close()

    # -- seed 003 ----------------------------------------------------------------------

    def _seed_snapshot(self, request: Request) -> str | None:
        """The snapshot asked for, else the newest; None if the target holds none (a
        session dump without its archive), which the seed answers with no manifest,
        an empty tree and no file."""
        snapshot = request.query_params.get("snapshot")
        if snapshot is not None:
            return snapshot
        snapshots = self.target.snapshots(space=False)
        return snapshots[-1].id if snapshots else None

    def trials(self, request: Request) -> Response:
        found = self.target.trials() if isinstance(self.target, LiveTarget) else None
        if found is None:
            return JsonResponse({"available": False, "trials": []})
        return JsonResponse({"available": True, "trials": [_trial_json(t) for t in found]})

    def filesystem_meta(self, request: Request) -> Response:
        snapshot = self._seed_snapshot(request)
        if snapshot is None:
            return JsonResponse(None)
        summary = self._summary(snapshot, space=True)
        details = self.target.details(snapshot)
        # The seed's answer is the manifest itself; an archive's is spread at the top
        # (without its per-file maps), other targets' summary gives the same keys.
        manifest = details.get("manifest", {})
        return JsonResponse(
            {
                "created_at": None
                if summary.created_at is None
                else summary.created_at.isoformat(),
                "file_count": summary.file_count,
                "total_bytes": summary.total_bytes,
                **{k: v for k, v in manifest.items() if k not in _PER_FILE},
                "target": self.target.info().to_json(),
                "snapshot": summary.to_json(),
                **details,
            }
        )

    def filesystem_tree(self, request: Request) -> Response:
        snapshot = self._seed_snapshot(request)
        if snapshot is None:
            return JsonResponse([])
        limit = positive_int(request, "limit", TREE_LIMIT, TREE_LIMIT)
        after = query(request, "after", "")
        if len(after) > PATH_MAX or "\0" in after:
            raise ApiError(400, "bad_request", "after must be a path the tree listed")
        deadline = self._deadline()
        walked = self.target.walk(snapshot, after=after)
        files = (entry for entry in walked if entry.kind != "directory")
        chunks = json_array_chunks(files, limit=limit, stop=deadline.reason)
        # The first chunk is made before the response starts, so that an error there
        # still gets its status; the rest streams while the tree is walked.
        first = next(chunks)
        return ClosingStreamingResponse(_chain(first, chunks), media_type="application/json")

    def filesystem_file(self, request: Request) -> Response:
        snapshot = self._seed_snapshot(request)
        path = checked_path(query(request, "path"))
        if snapshot is None:
            raise ApiError(404, "not_found", "the target holds no files", path=path)
        entry, text = self._text(snapshot, path)
        return JsonResponse(
            {
                "path": path,
                "snapshot": snapshot,
                "kind": entry.kind,
                "size_bytes": entry.size,
                "content": text,
                "target": entry.target,
            }
        )


_PER_FILE = frozenset({"mtimes", "sizes"})
"""A manifest's maps with one entry per file: not for a summary."""


@dataclass(frozen=True, slots=True)
class _Version:
    """One side of a comparison; ``text`` is None when ``why`` is binary or too_large."""

    entry: TreeEntry | None
    text: str | None
    why: str  # absent, text, binary, too_large

    def name(self, path: str, side: str) -> str:
        """How a unified diff names this side."""
        return "/dev/null" if self.entry is None else f"{side}/{path}"


def _trial_json(trial: Trial) -> dict[str, Any]:
    """A trial as the page reads it: its JSON form, and which attempt is best."""
    best = trial.best
    return {**to_json(trial, Trial), "best": None if best is None else best.id}


def _is_file(entry: TreeEntry | None) -> bool:
    return entry is not None and entry.kind == "file"


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _until(blocks: Iterator[bytes], stopping: threading.Event) -> Iterator[bytes]:
    """``blocks`` until the server stops (a download of any size ends then)."""
    for block in blocks:
        if stopping.is_set():
            return
        yield block


@dataclass(frozen=True, slots=True)
class _Deadline:
    """When a heavy request stops working: at ``end`` (``time.monotonic``), or as soon
    as the server is stopping."""

    end: float
    stopping: threading.Event

    def reason(self) -> str | None:
        """``stopping``, ``deadline``, or None while the request may go on."""
        if self.stopping.is_set():
            return "stopping"
        return "deadline" if time.monotonic() >= self.end else None

    def expired(self) -> bool:
        """True once the request should answer with what it has."""
        return self.reason() is not None


@dataclass(frozen=True, slots=True)
class _Source:
    """One state of a target as one side of a patch (``PatchSource``)."""

    stat: Callable[[str], TreeEntry]
    read: Callable[[str, int], bytes]

    def entry(self, path: str) -> TreeEntry | None:
        try:
            return self.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None


_EXPECTED = (ApiError, HTTPException, OSError, ValueError, LookupError)
"""Errors answered inside the middleware stack, so they get its headers too;
``Exception`` is the last resort (logged, 500)."""


def create_app(
    target: DebugTarget,
    *,
    token: str,
    allowed_hosts: Sequence[str] = (),
    request_seconds: float = REQUEST_SECONDS,
    stopping: threading.Event | None = None,
) -> Starlette:
    """The debug UI's ASGI app over ``target``.

    Args:
        target: What to show.
        token: The secret every request must carry (``new_token()``; at least
            16 characters): ``?token=`` (which also sets a cookie),
            ``Authorization: Bearer``, or the cookie; anything else is a 401.
        allowed_hosts: Host names served besides 127.0.0.1, localhost, ::1 and
            the address a request arrives at; any other Host is a 400.
        request_seconds: How long a heavy request (a patch, the whole tree) works
            before it answers with what it has, marked as cut short.
        stopping: Set when the server stops: requests under way then answer at
            once with what they have, and downloads end.
    """
    api = _Api(target, request_seconds, stopping or threading.Event())
    pages = {path: (_static(name), media) for path, (name, media) in _STATIC.items()}

    def page(request: Request) -> Response:
        body, media = pages[request.url.path]
        return Response(body, media_type=media)

    routes = [Route(path, page) for path in pages]
    routes += [
        Route("/api/target", api.target_info),
        Route("/api/snapshots", api.snapshots),
        Route("/api/snapshots/{snapshot}", api.snapshot),
        Route("/api/snapshots/{snapshot}/tree", api.tree),
        Route("/api/snapshots/{snapshot}/file", api.file),
        Route("/api/snapshots/{snapshot}/raw", api.raw),
        Route("/api/diff", api.diff),
        Route("/api/causes", api.causes),
        Route("/api/snapshots/{snapshot}/changes", api.changes),
        Route("/api/diff/file", api.diff_file),
        Route("/api/trials", api.trials),
        Route("/api/events", api.events),
        Route("/api/filesystem/meta", api.filesystem_meta),
        Route("/api/filesystem/tree", api.filesystem_tree),
        Route("/api/filesystem/file", api.filesystem_file),
    ]
    return Starlette(
        routes=routes,
        # Outermost first: every answer gets the headers; a wrong Host or a missing
        # token is answered before routing, so no route can be reached without both.
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(HostRequired, names=allowed_hosts),
            Middleware(TokenRequired, token=check_token(token)),
        ],
        exception_handlers={
            **dict.fromkeys(_EXPECTED, exception_response),
            Exception: exception_response,
        },
    )
