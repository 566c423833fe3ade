"""The change feed's values: ``ChangeEvent``, its ids, and ``ChangeStream``.

An event says that some paths were added, modified or deleted, and who did
it; a ``denied`` event that an access rule refused a change (the ``Denial``:
path, action, rule, errno, cause); a ``gap`` event says that events were lost
to the reader (it resumed from an id the feed no longer keeps, or from another
run of it) and that it must rescan the workspace. Ids are opaque strings, ``<stream>-<n>``: a feed
numbers its events from 1 in a stream named anew each time it starts, so an
id from an earlier run (a restarted daemon) is told from a current one.

``ChangeStream`` is how a reader takes events, one implementation of the
waiting and the timeout for every source: in process (``InMemoryFilesystem.
events``) and from a daemon (``RemoteFilesystem.events``).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .._errors import InvalidArgumentError
from ..tree import Cause
from ._codec import from_json, to_json
from ._rules import Denial

EventKind = Literal["added", "modified", "deleted", "denied", "gap"]
_KINDS: tuple[EventKind, ...] = ("added", "modified", "deleted", "denied", "gap")


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """Paths that changed the same way by the same causes, or a gap.

    Attributes:
        id: Where a reader resumes from (``events(after=id)``): opaque.
        kind: ``added``, ``modified`` or ``deleted`` (files, symlinks and special
            files, as ``diff`` and ``blame`` count them: a directory changes
            through what it holds); ``denied`` when an access rule refused a change
            (``denial`` says which, of what, and who tried); ``gap`` when events
            were lost to this reader, which must rescan the workspace (then go on from this event).
        paths: The paths, sorted (none for a gap; the refused one for a denial).
        causes: Who made the change, oldest first (a tool call, or a process with
            its command and container); empty when no cause was in effect.
        time: When the feed took the change (UTC; ISO 8601 in JSON).
        denial: For ``denied``: the denial (as ``denials()`` lists it); else None.
    """

    id: str
    kind: EventKind
    paths: tuple[str, ...]
    causes: tuple[Cause, ...]
    time: datetime
    denial: Denial | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``fs.to_json``)."""
        data: dict[str, Any] = to_json(self)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChangeEvent:
        """The event ``to_dict`` wrote; InvalidArgumentError for anything else."""
        event = from_json(cls, data)
        if event.kind not in _KINDS:
            raise InvalidArgumentError(f"unknown change event kind {event.kind!r}", None)
        return event

    def describe(self) -> str:
        """One line per path for people: ``added src/app.py by edit_file call t1``."""
        if self.kind == "gap":
            return "gap: events were lost to this reader; rescan the workspace"
        if self.denial is not None:
            denial = self.denial
            tried = denial.cause.describe() if denial.cause is not None else "unknown"
            return (
                f"denied {denial.action} of {denial.path or '/'} by {tried}: "
                f"{denial.scope} rule {denial.rule.describe()} "
                f"({errno.errorcode.get(denial.errno, denial.errno)})"
            )
        who = "; ".join(cause.describe() for cause in self.causes) or "unknown"
        return "\n".join(f"{self.kind} {path} by {who}" for path in self.paths)


def event_id(stream: str, number: int) -> str:
    """The id of event ``number`` of ``stream``."""
    return f"{stream}-{number}"


def parse_event_id(value: str) -> tuple[str, int]:
    """``(stream, number)`` of an event id; InvalidArgumentError if it is none."""
    stream, _, number = value.rpartition("-")
    if not stream or not number.isdigit() or len(number) > 19 or not stream.isalnum():
        raise InvalidArgumentError(f"malformed event id {value[:80]!r}", None)
    return stream, int(number)


class ChangeStream:
    """Events as they come, from one reader's position on: iterate it (blocking),
    or call ``next_event`` with a timeout; ``last_id`` is where to resume.

    Iteration ends once no event came for ``timeout`` seconds (None: it does
    not), or when the stream is closed. Use it as a context manager, or call
    ``close``, to let go of what it holds (a connection to a daemon).

    Subclasses provide ``_take(deadline)``: the next event, or None once the
    monotonic ``deadline`` passed (None: wait as long as it takes).
    """

    def __init__(self, after: str, timeout: float | None) -> None:
        if timeout is not None and timeout < 0:
            raise InvalidArgumentError("timeout must not be negative", None)
        self.last_id = after
        """The id of the last event read, or of the position the stream started at
        (every event up to it is behind this reader): resume with ``after=``."""
        self._timeout = timeout
        self.closed = False

    def _take(self, deadline: float | None) -> ChangeEvent | None:
        raise NotImplementedError

    def next_event(self, timeout: float | None = None) -> ChangeEvent | None:
        """The next event, waiting at most ``timeout`` seconds (None: as long as it
        takes); None if none came, or if the stream is closed."""
        if self.closed:
            return None
        deadline = None if timeout is None else time.monotonic() + timeout
        event = self._take(deadline)
        if event is not None:
            self.last_id = event.id
        return event

    def __iter__(self) -> Iterator[ChangeEvent]:
        return self

    def __next__(self) -> ChangeEvent:
        event = self.next_event(self._timeout)
        if event is None:
            raise StopIteration
        return event

    def close(self) -> None:
        """Stop reading; iteration ends."""
        self.closed = True

    def __enter__(self) -> ChangeStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
