"""Which text encoding a file's bytes are in, or that they are not text.

No detection library is a dependency, and agents meet few encodings: UTF-8
(most source), UTF-8/16/32 with a byte-order mark (Windows tools), and the
8-bit Western encodings of older files (Latin-1, Windows' cp1252). So the
detection is small and ordered, each step a C-speed scan of the sample:

1. a byte-order mark names the encoding;
2. no NUL and valid UTF-8 (a sequence cut by the sample's end allowed): UTF-8;
3. NULs at every other byte and none between (ASCII-range text without a
   BOM): UTF-16 in that byte order; any other NUL: binary;
4. mostly valid UTF-8 with a few bad sequences (a file joined from two): UTF-8,
   the bad sequences shown as U+FFFD and counted;
5. text-looking bytes (hardly a control byte, ``TEXT_CONTROLS`` aside):
   cp1252 if its C1 range holds only what cp1252 defines there, else Latin-1;
6. anything else is binary.

Decoding with ``MARKED`` turns every undecodable sequence into the lone
surrogate ``MARK``, which no strict decoder produces, so replacements are
counted exactly (``shown``) and never confused with a U+FFFD in the file.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

MARKED = "workspacefs.marked"
"""The codec error handler that writes ``MARK`` for each undecodable sequence."""
MARK = "\udfff"
REPLACEMENT = "\ufffd"

_CONTROLS = bytes(b for b in range(32) if b not in b"\t\n\v\f\r\b\x1a\x1b") + b"\x7f"
TEXT_CONTROLS = "tab, line ends, form feed, backspace, ESC and SUB"
"""The control bytes text may hold (``_CONTROLS`` are the others)."""
_CP1252_HOLES = b"\x81\x8d\x8f\x90\x9d"  # C1 bytes cp1252 leaves undefined
_C1 = bytes(range(0x80, 0xA0))


def _marked(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return MARK, error.end


codecs.register_error(MARKED, _marked)


@dataclass(frozen=True, slots=True)
class TextEncoding:
    """How a file's text is encoded.

    Attributes:
        codec: The Python codec that decodes it (after the BOM).
        label: Its name as messages show it.
        bom: The byte-order mark the file starts with (b"" if none).
    """

    codec: str
    label: str
    bom: bytes = b""

    @property
    def is_utf8(self) -> bool:
        """Plain UTF-8 without a BOM: what the protocol's text verbs read and write."""
        return self.codec == "utf-8" and not self.bom

    def decode(self, data: bytes) -> str:
        """``data`` (without the BOM) as text, undecodable sequences as ``MARK``."""
        return data.decode(self.codec, MARKED)

    def encode(self, text: str) -> bytes:
        """``text`` in this encoding, BOM first; UnicodeEncodeError if it cannot hold it."""
        return self.bom + text.encode(self.codec)


UTF8 = TextEncoding("utf-8", "UTF-8")

_BOMS = tuple(
    (bom, TextEncoding(codec, label, bom))
    for bom, codec, label in (  # UTF-32's marks first: UTF-32-LE's starts with UTF-16-LE's
        (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32 (little-endian, with BOM)"),
        (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32 (big-endian, with BOM)"),
        (codecs.BOM_UTF8, "utf-8", "UTF-8 with BOM"),
        (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16 (little-endian, with BOM)"),
        (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16 (big-endian, with BOM)"),
    )
)
_UTF16_LE = TextEncoding("utf-16-le", "UTF-16 (little-endian, no BOM)")
_UTF16_BE = TextEncoding("utf-16-be", "UTF-16 (big-endian, no BOM)")
_LATIN1 = TextEncoding("latin-1", "Latin-1 (ISO-8859-1)")
_CP1252 = TextEncoding("cp1252", "Windows-1252")


def _valid_utf8(sample: bytes, whole: bool) -> bool:
    if sample.isascii():  # a word at a time: most source files end here
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=whole)
    except UnicodeDecodeError:
        return False
    return True


def _utf16(sample: bytes) -> TextEncoding | None:
    """BOM-less UTF-16 of mostly ASCII-range text: one byte order's NULs at every
    other place, the other's hardly anywhere."""
    if len(sample) < 4:
        return None
    pairs = len(sample) // 2
    even, odd = sample[0 : 2 * pairs : 2].count(0), sample[1 : 2 * pairs : 2].count(0)
    for zeros, others, encoding in ((odd, even, _UTF16_LE), (even, odd, _UTF16_BE)):
        if zeros * 10 >= pairs * 7 and others * 50 <= pairs:
            text = sample[: 2 * pairs].decode(encoding.codec, MARKED)
            if MARK not in text and _looks_like_text(text.encode("utf-8", "replace")):
                return encoding
    return None


def _looks_like_text(sample: bytes) -> bool:
    """Hardly a control byte (``TEXT_CONTROLS`` aside): at most one in 200."""
    controls = len(sample) - len(sample.translate(None, _CONTROLS))
    return controls * 200 <= len(sample)


def _mostly_utf8(sample: bytes) -> bool:
    """True if ``sample`` is UTF-8 with fewer bad sequences than good multi-byte
    characters (a file joined from two). Two C-speed decodes: a Python error
    handler called per bad byte of a Latin-1 file would cost 40 times more."""
    kept = sample.decode("utf-8", "ignore")
    literal = kept.count(REPLACEMENT)  # the file's own U+FFFDs
    bad = sample.decode("utf-8", "replace").count(REPLACEMENT) - literal
    good = len(kept) - len(kept.encode("ascii", "ignore"))
    return good > bad


def detect_encoding(sample: bytes, *, whole: bool) -> TextEncoding | None:
    """The encoding of a file whose first bytes are ``sample``; None if it is binary.

    Args:
        sample: The file's bytes (its start, if not ``whole``).
        whole: ``sample`` is the whole file (a multi-byte character cut at its
            end is then an error, not the edge of the sample).
    """
    for bom, encoding in _BOMS:
        if sample.startswith(bom):
            return encoding
    if b"\0" in sample:
        return _utf16(sample)
    if _valid_utf8(sample, whole):
        return UTF8
    if _mostly_utf8(sample):
        return UTF8  # the bad sequences are marked where they are shown
    if not _looks_like_text(sample):
        return None
    if sample.translate(None, _C1) != sample:  # C1 bytes: cp1252's punctuation, if defined
        return _LATIN1 if sample.translate(None, _CP1252_HOLES) != sample else _CP1252
    return _LATIN1


def shown(text: str) -> tuple[str, int]:
    """``text`` as shown to a model: each ``MARK`` as U+FFFD; and how many there were."""
    marks = text.count(MARK)
    return (text.replace(MARK, REPLACEMENT), marks) if marks else (text, 0)
