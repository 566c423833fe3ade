"""Bounded capture of a command's output: the head and the tail, and a count of the rest.

A command may print gigabytes (``yes``, a runaway log). Its output is read as
it comes and never held whole: the first ``head`` bytes are kept, then a
rolling window of the last ``tail`` bytes, and everything between is counted
and dropped. Memory stays at ``head + 2 * tail`` bytes whatever the command
prints.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Output:
    """What was kept of one stream.

    Attributes:
        text: The kept bytes decoded (UTF-8, undecodable bytes replaced), with a
            notice where the middle was cut.
        total_bytes: How many bytes the command wrote to the stream.
        cut_bytes: How many of them were dropped from the middle.
    """

    text: str
    total_bytes: int
    cut_bytes: int

    @property
    def truncated(self) -> bool:
        """True if some of the output was dropped."""
        return self.cut_bytes > 0


def cut_notice(cut: int) -> str:
    """The line put where output was dropped."""
    return f"\n[... {cut:,} bytes of output cut; the first and last parts are shown ...]\n"


class Capture:
    """Collects one stream, keeping at most ``limit`` bytes (half head, half tail).

    Args:
        limit: Bytes kept in all; 0 keeps nothing but the count.
    """

    __slots__ = ("_head", "_head_limit", "_tail", "_tail_limit", "_total")

    def __init__(self, limit: int) -> None:
        self._head_limit = (limit + 1) // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0

    @property
    def total_bytes(self) -> int:
        """Bytes seen so far."""
        return self._total

    def feed(self, data: bytes) -> None:
        """Take the next piece of the stream."""
        self._total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data or not self._tail_limit:
            return
        self._tail += data
        # Trim only once the window has doubled, so each byte is moved O(1) times.
        if len(self._tail) > 2 * self._tail_limit:
            del self._tail[: len(self._tail) - self._tail_limit]

    def result(self) -> Output:
        """The kept output, with a notice where bytes were dropped."""
        tail = bytes(self._tail[-self._tail_limit :]) if self._tail_limit else b""
        head = self._head.decode("utf-8", errors="replace")
        if self._total == len(self._head) + len(tail):
            return Output(head + tail.decode("utf-8", errors="replace"), self._total, 0)
        # The cut may split a multi-byte character: drop its orphaned continuation bytes.
        tail = tail.lstrip(_CONTINUATION)
        cut = self._total - len(self._head) - len(tail)
        text = head + cut_notice(cut) + tail.decode("utf-8", errors="replace")
        return Output(text, self._total, cut)


_CONTINUATION = bytes(range(0x80, 0xC0))
