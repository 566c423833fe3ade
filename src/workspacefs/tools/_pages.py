"""Pages of lines of a text file of any size and encoding, read in bounded blocks.

The protocol's ``read`` decodes UTF-8 only and a file up to its read limit
(16 MiB) only, since it decodes the whole file. ``read_text`` has neither
bound: it reads the file with ``read_bytes`` a block at a time, decodes the
blocks with the encoding the first block shows (``detect_encoding``), skips
whole blocks of lines by counting their line ends, and keeps only the page:
at most ``limit`` lines and ``PAGE_CHARS`` characters, each line cut at
``LONG_LINE`` characters as it streams past (a minified file's one line of
50 MB costs no more memory than a block). A file up to ``COUNT_LIMIT`` bytes
is read to its end, so the page says how many lines it has; a larger one
says its size instead. So one call reads at most the file up to its page
(and up to ``COUNT_LIMIT``), and answers a bounded page.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from ..fs import DEFAULT_LIMITS, Filesystem
from ._encoding import MARK, MARKED, REPLACEMENT, detect_encoding
from ._messages import LONG_LINE

BLOCK = 1 << 20
"""Bytes read per ``read_bytes`` call."""
PAGE_CHARS = 256_000
"""Most characters of file text one page shows (about 64k tokens)."""
COUNT_LIMIT = 16 << 20
"""Files up to this size are read to their end to count their lines."""


@dataclass(frozen=True, slots=True)
class TextPage:
    """A page of lines of a text file, as ``read_file`` shows it.

    Attributes:
        path: The file.
        encoding: The encoding it was decoded from, as messages name it.
        first_line: The number of the page's first line (1-based).
        lines: The page's lines without their ends (``\\n``, ``\\r\\n``); a line
            over ``LONG_LINE`` characters is cut, saying how much was left out.
        total_lines: The file's line count; None if it was not counted (a file
            over ``COUNT_LIMIT`` bytes).
        size_bytes: The file's size; None if the backend paged it without saying.
        more: Lines follow the page.
        replaced: Byte sequences of the page that do not decode, shown as U+FFFD.
    """

    path: str
    encoding: str
    first_line: int
    lines: tuple[str, ...]
    total_lines: int | None
    size_bytes: int | None
    more: bool
    replaced: int = 0

    @property
    def last_line(self) -> int:
        """The number of the page's last line (``first_line - 1`` if it is empty)."""
        return self.first_line + len(self.lines) - 1


@dataclass(frozen=True, slots=True)
class BinaryFile:
    """What ``read_text`` answers for a file that is not text."""

    path: str
    size_bytes: int


def block_size(fs: Filesystem) -> int:
    """Bytes one ``read_bytes`` of ``fs`` may return, up to ``BLOCK``."""
    limits = getattr(fs, "limits", DEFAULT_LIMITS)  # a daemon's client has the defaults
    return min(BLOCK, limits.max_read_bytes)


def cut_line(line: str, length: int) -> str:
    """A line of ``length`` characters of which ``line`` holds the first (all if it is
    short), as pages show it: cut at ``LONG_LINE``, saying how much was left out."""
    if length <= LONG_LINE:
        return line
    return f"{line[:LONG_LINE]}... [{length - LONG_LINE:,} more characters]"


class _Cutter:
    """Cuts decoded text, fed in pieces, into the page's lines: ``skip`` lines are
    passed over (their line ends counted a piece at a time), then up to ``limit``
    lines or ``PAGE_CHARS`` characters are kept, then line ends are only counted."""

    def __init__(self, skip: int, limit: int) -> None:
        self.skip = skip
        self.limit = limit
        self.seen = 0  # complete lines passed
        self.page: list[str] = []
        self.chars = 0
        self.full = False  # the page is complete
        self.more = False  # text follows the page
        self._head = ""  # the start of the current line (up to LONG_LINE + 1 characters)
        self._length = 0  # the current line's length so far
        self._open = False  # the text fed so far ends inside a line
        self._cr = False  # the current line ends with \r so far

    def feed(self, text: str) -> None:
        """Take the next piece of the file's text."""
        if not text:
            return
        pos = 0
        if self.skip:
            pos = self._skip(text)
        if not self.skip and not self.full:
            pos = self._collect(text, pos)
        if self.full and pos < len(text):
            self.more = True
            self.seen += text.count("\n", pos)
            self._open = not text.endswith("\n")

    def _skip(self, text: str) -> int:
        """Pass over lines before the page: where the page starts in ``text``."""
        ends = text.count("\n")
        if ends < self.skip:
            self.seen += ends
            self.skip -= ends
            self._open = not text.endswith("\n")
            return len(text)
        pos = 0
        for _ in range(self.skip):
            pos = text.index("\n", pos) + 1
        self.seen += self.skip
        self.skip = 0
        self._open = False
        return pos

    def _collect(self, text: str, pos: int) -> int:
        """Take lines of the page from ``text[pos:]``; where it stopped."""
        end = len(text)
        while pos < end:
            newline = text.find("\n", pos)
            stop = end if newline < 0 else newline
            room = LONG_LINE + 1 - len(self._head)
            if room > 0:
                self._head += text[pos : min(stop, pos + room)]
            self._length += stop - pos
            if stop > pos:
                self._cr = text[stop - 1] == "\r"
            self._open = True
            if newline < 0:
                return end
            self._end_line()
            pos = newline + 1
            if self.full:
                return pos
        return pos

    def _end_line(self) -> None:
        head, length = self._head, self._length
        if self._cr:  # CRLF: the model sees no \r
            head, length = head[: length - 1], length - 1
        line = cut_line(head, length)
        self.page.append(line)
        self.chars += len(line)
        self.seen += 1
        self._head, self._length, self._open, self._cr = "", 0, False, False
        if len(self.page) >= self.limit or self.chars >= PAGE_CHARS:
            self.full = True

    def finish(self) -> None:
        """The file ended: a last line without a line end is a line too."""
        if not self._open:
            return
        if self.skip or self.full:
            self.seen += 1
        else:
            self._cr = False  # a \r that ends the file ends no line: it is shown
            self._end_line()


def read_text(fs: Filesystem, path: str, first: int, limit: int) -> TextPage | BinaryFile:
    """Lines ``first`` (1-based) onwards of the text file ``path``, at most ``limit``
    of them and ``PAGE_CHARS`` characters; or ``BinaryFile`` if it is not text.

    Raises:
        OSError, ValueError: As ``read_bytes`` raises them (no such file, a directory,
            outside the workspace, ...).
    """
    size = block_size(fs)
    head = fs.read_bytes(path, offset=0, limit=size)
    encoding = detect_encoding(head.content, whole=not head.truncated)
    if encoding is None:
        return BinaryFile(head.path, head.size_bytes)
    counting = head.size_bytes <= COUNT_LIMIT
    cutter = _Cutter(first - 1, limit)
    decoder = codecs.getincrementaldecoder(encoding.codec)(errors=MARKED)
    data, offset, truncated = head.content[len(encoding.bom) :], len(head.content), head.truncated
    while True:
        cutter.feed(decoder.decode(data, final=not truncated))
        if not truncated or (cutter.full and not counting):
            break
        block = fs.read_bytes(path, offset=offset, limit=size)
        data, truncated = block.content, block.truncated and bool(block.content)
        offset += len(data)
    if truncated:
        cutter.more = True  # stopped before the end
    else:
        cutter.finish()
    lines, replaced = cutter.page, sum(line.count(MARK) for line in cutter.page)
    if replaced:
        lines = [line.replace(MARK, REPLACEMENT) for line in lines]
    return TextPage(
        path=head.path,
        encoding=encoding.label,
        first_line=first,
        lines=tuple(lines),
        total_lines=None if truncated else cutter.seen,
        size_bytes=head.size_bytes,
        more=cutter.more,
        replaced=replaced,
    )
