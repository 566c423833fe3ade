"""A daemon's change feed under load, for tests: tool calls at once over the socket, and
readers that follow the feed in a thread -- one that reads everything on one connection,
and one that keeps dropping its connection mid-stream and resuming from its last id."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from workspacefs import Cause
from workspacefs.daemon import connect
from workspacefs.fs import ChangeEvent, ChangeStream
from workspacefs.tools import ToolContext, filesystem_tools


def tool_calls(socket: str, calls: int) -> None:
    """``calls`` write_file calls at once through the agent tools over ``connect``,
    each with its own call id (``call-<n>``, writing ``calls/<n>.txt``), from 32 threads."""
    with connect(socket) as fs:
        tools = filesystem_tools(fs)

        def call(n: int) -> None:
            context = ToolContext(filesystem=fs, call_id=f"call-{n}")
            arguments = {"path": f"calls/{n}.txt", "content": f"{n}\n"}
            result = tools.call("write_file", arguments, context=context)
            assert result.success, result.message

        with ThreadPoolExecutor(32) as pool:
            list(pool.map(call, range(calls)))


class FeedReader:
    """Follows the change feed of the daemon at ``socket`` in a thread, from now on,
    until ``finish``: then until it has been quiet for ``quiet`` seconds.

    With ``leave_every``, the reader drops its connection after every that many events
    (closing the stream mid-stream: what the client had received but not yet handed
    out is gone with it), while the writers go on, and opens a new one from the last
    id it read (``resumes`` counts them).
    """

    def __init__(self, socket: str, *, leave_every: int | None = None, quiet: float = 2.0):
        self.events: list[ChangeEvent] = []
        self.resumes = 0
        self._socket = socket
        self._leave_every = leave_every
        self._quiet = quiet
        self._done = threading.Event()
        self._error: BaseException | None = None
        with connect(socket) as fs:
            self._stream: ChangeStream = fs.events()  # the position: before any write
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        stream = self._stream
        try:
            taken = 0
            while (event := stream.next_event(self._quiet)) is not None or not self._done.is_set():
                if event is None:
                    continue
                self.events.append(event)
                taken += 1
                if self._leave_every is not None and taken % self._leave_every == 0:
                    stream.close()
                    with connect(self._socket) as fs:
                        stream = self._stream = fs.events(after=stream.last_id)
                    self.resumes += 1
        except BaseException as exc:
            self._error = exc
        finally:
            stream.close()

    def finish(self, timeout: float = 300) -> list[ChangeEvent]:
        """Once the writers are done: every event read, once the feed has been quiet."""
        self._done.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the reader did not finish"
        if self._error is not None:
            raise self._error
        return self.events


def causes_by_path(events: Iterable[ChangeEvent]) -> dict[str, set[Cause]]:
    """Each path the events name, with every cause they gave it; no gap among them, and
    each path added first, then (a batch later, if a batch ended between its making and
    its writing) modified."""
    found: dict[str, set[Cause]] = {}
    for event in events:
        assert event.kind != "gap", "events were lost"
        for path in event.paths:
            assert event.kind == ("modified" if path in found else "added"), (path, event)
            found.setdefault(path, set()).update(event.causes)
    return found
