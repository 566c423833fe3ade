"""Every file an agent meets is readable: text of any size and encoding through
read_file (bounded pages), anything else through read_bytes (media, base64, hex)."""

from __future__ import annotations

import base64
import codecs
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workspacefs import InMemoryFilesystem, Limits
from workspacefs.tools import (
    FileBytes,
    TextPage,
    ToolContext,
    ToolResult,
    detect_encoding,
    filesystem_tools,
)
from workspacefs.tools._messages import LONG_LINE
from workspacefs.tools._pages import PAGE_CHARS, read_text

from .conftest import MakeWorkspace


def png(width: int, height: int) -> bytes:
    """A real PNG image (red pixels)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    rows = b"".join(b"\0" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


LATIN1 = "# café naïve\nprint('Übergröße')\n"
CP1252 = "\u201cquoted\u201d \u2013 dash \u20ac sign\n"  # cp1252 punctuation
UNICODE = "héllo wörld ✓\nsecond line\n"

ENCODED = {
    "latin1.py": (LATIN1.encode("latin-1"), "Latin-1 (ISO-8859-1)", LATIN1),
    "cp1252.txt": (CP1252.encode("cp1252"), "Windows-1252", CP1252),
    "utf16le.txt": (
        codecs.BOM_UTF16_LE + UNICODE.encode("utf-16-le"),
        "UTF-16 (little-endian, with BOM)",
        UNICODE,
    ),
    "utf16be.txt": (
        codecs.BOM_UTF16_BE + UNICODE.encode("utf-16-be"),
        "UTF-16 (big-endian, with BOM)",
        UNICODE,
    ),
    "utf16.txt": (UNICODE.encode("utf-16-le"), "UTF-16 (little-endian, no BOM)", UNICODE),
    "utf32.txt": (
        codecs.BOM_UTF32_LE + UNICODE.encode("utf-32-le"),
        "UTF-32 (little-endian, with BOM)",
        UNICODE,
    ),
    "bom8.txt": (codecs.BOM_UTF8 + UNICODE.encode(), "UTF-8 with BOM", UNICODE),
}


def _numbered(text: str) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), 1))


@pytest.mark.parametrize("name", sorted(ENCODED))
def test_read_file_shows_text_in_its_encoding(make: MakeWorkspace, name: str) -> None:
    data, label, text = ENCODED[name]
    ws = make({name: data})
    result = ws.call("read_file", path=name)
    assert result.success, result.message
    assert result.message.startswith(_numbered(text))
    assert isinstance(result.value, TextPage)
    assert result.value.encoding == label
    assert result.value.total_lines == len(text.splitlines())
    assert f"[The file is {label} text, shown decoded; edit_file keeps its encoding.]" in (
        result.message
    )


def test_utf8_with_a_stray_byte_shows_it_marked(make: MakeWorkspace) -> None:
    data = "naïve ✓ über\n".encode() * 3 + b"caf\xe9\n"
    ws = make({"joined.txt": data})
    result = ws.call("read_file", path="joined.txt")
    assert result.success, result.message
    assert "     4\tcaf\ufffd" in result.message
    assert isinstance(result.value, TextPage)
    assert result.value.replaced == 1
    assert "1 byte sequence on this page that do not decode as UTF-8 is shown as \ufffd" in (
        result.message
    )
    assert "read_bytes" in result.message


def test_a_real_replacement_character_is_not_counted(make: MakeWorkspace) -> None:
    ws = make({"r.txt": "naïve ✓ bad: \ufffd\n".encode() + b"caf\xe9\n"})
    result = ws.call("read_file", path="r.txt")
    assert isinstance(result.value, TextPage)
    assert result.value.replaced == 1  # the file's own U+FFFD is text, the lone 0xE9 is not


def test_binary_is_refused_naming_read_bytes(make: MakeWorkspace) -> None:
    ws = make({"blob.bin": bytes(range(256)) * 4, "a.png": png(2, 2)})
    for path in ("blob.bin", "a.png"):
        message = ws.fail("read_file", path=path)
        assert message.startswith(f"Cannot read `{path}` as text: it is a binary file (")
        assert "Use read_bytes to read it" in message
        assert "read_bytes" in filesystem_tools(ws.fs).names


# -- edits keep the encoding -----------------------------------------------------------


@pytest.mark.parametrize("name", ["latin1.py", "cp1252.txt", "utf16be.txt", "utf16.txt"])
def test_edit_file_keeps_the_encoding(make: MakeWorkspace, name: str) -> None:
    data, label, text = ENCODED[name]
    ws = make({name: data})
    old = text.splitlines()[0]
    new = old.upper()
    result = ws.call("edit_file", path=name, old_string=old, new_string=new)
    assert result.success, result.message
    encoding = detect_encoding(data, whole=True)
    assert encoding is not None
    assert ws.fs.read_bytes(name).content == encoding.encode(text.replace(old, new))
    page = ws.call("read_file", path=name).value
    assert isinstance(page, TextPage)
    assert page.encoding == label


def test_edit_refuses_what_the_encoding_cannot_hold(make: MakeWorkspace) -> None:
    data, _, _ = ENCODED["latin1.py"]
    ws = make({"latin1.py": data})
    message = ws.fail("edit_file", path="latin1.py", old_string="café", new_string="café ✓")
    assert message.startswith("Cannot edit `latin1.py`: it is Latin-1 (ISO-8859-1) text, ")
    assert "'✓' (U+2713)" in message
    assert "write_file" in message
    assert ws.fs.read_bytes("latin1.py").content == data


def test_edit_refuses_a_file_with_bytes_that_do_not_decode(make: MakeWorkspace) -> None:
    data = "naïve ✓ über\n".encode() * 3 + b"caf\xe9\n"
    ws = make({"joined.txt": data})
    message = ws.fail("edit_file", path="joined.txt", old_string="caf", new_string="coffee")
    assert "1 byte sequence in it does not decode as UTF-8" in message
    assert ws.fs.read_bytes("joined.txt").content == data


# -- paging ------------------------------------------------------------------------------


def _call(fs: object, name: str, **arguments: object) -> ToolResult[object]:
    return filesystem_tools(fs).call(  # type: ignore[arg-type]
        name,
        arguments,
        context=ToolContext(filesystem=fs),  # type: ignore[arg-type]
    )


def _expected(text: str, first: int, limit: int) -> tuple[list[str], int, bool]:
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    page, chars = [], 0
    for line in lines[first - 1 : first - 1 + limit]:
        shown = (
            line
            if len(line) <= LONG_LINE
            else (f"{line[:LONG_LINE]}... [{len(line) - LONG_LINE:,} more characters]")
        )
        page.append(shown)
        chars += len(shown)
        if chars >= PAGE_CHARS:
            break
    return page, len(lines), first - 1 + len(page) < len(lines)


_LINE = st.one_of(
    st.text(alphabet="ab \té✓\r", max_size=12),
    st.integers(LONG_LINE - 2, LONG_LINE + 3).map(lambda n: "x" * n),
)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(_LINE, max_size=40),
    ending=st.sampled_from(["", "\n", "\r\n"]),
    block=st.integers(3, 64),
    first=st.integers(1, 45),
    limit=st.integers(1, 50),
    crlf=st.booleans(),
)
def test_pages_streamed_in_small_blocks_match_the_file(
    lines: list[str], ending: str, block: int, first: int, limit: int, crlf: bool
) -> None:
    text = ("\r\n" if crlf else "\n").join(lines) + (ending if lines else "")
    data = text.encode()
    fs = InMemoryFilesystem(limits=Limits(max_read_bytes=block))
    fs.write_bytes("f.txt", data)
    page = read_text(fs, "f.txt", first, limit)
    assert isinstance(page, TextPage)
    want, total, more = _expected(text, first, limit)
    assert list(page.lines) == want
    assert page.total_lines == total
    assert page.more == more
    # The backend's own paging (one read) shows the same page.
    whole = InMemoryFilesystem()
    whole.write_bytes("f.txt", data)
    result = _call(whole, "read_file", path="f.txt", offset=first, limit=limit)
    if want:
        assert isinstance(result.value, TextPage)
        assert list(result.value.lines) == want


def test_a_file_over_the_count_limit_is_paged_without_counting() -> None:
    fs = InMemoryFilesystem()
    line = b"%07d: " + b"x" * 90 + b"\n"  # 100 bytes a line
    block = b"".join(line % i for i in range(100_000))  # 10 MB
    fs.write_bytes("big.log", block)
    fs.write_bytes("big.log", block.replace(b": x", b": y"), mode="append")
    first = _call(fs, "read_file", path="big.log", limit=2)
    assert first.success, first.message
    assert first.message.startswith("     1\t0000000: xxx")
    assert (
        "[Showing lines 1-2 of a 20,000,000-byte file; more follow (a file this large is not "
        'counted). To continue: read_file(path="big.log", offset=3, limit=2)]'
    ) in first.message
    last = _call(fs, "read_file", path="big.log", offset=199_999, limit=5)
    assert last.success, last.message
    assert last.message.startswith("199999\t0099998: yxx")
    assert "[Showing lines 199,999-200,000 of 200,000; end of file.]" in last.message
    past = _call(fs, "read_file", path="big.log", offset=200_001)
    assert past.message == "Cannot read `big.log` from line 200,001: it has only 200,000 lines."


def test_a_page_is_bounded_in_characters() -> None:
    fs = InMemoryFilesystem()
    fs.write_bytes("wide.txt", (b"y" * 1_000 + b"\n") * 1_000)
    result = _call(fs, "read_file", path="wide.txt")
    assert isinstance(result.value, TextPage)
    assert len(result.value.lines) == PAGE_CHARS // 1_000
    assert f"(a page holds {PAGE_CHARS:,} characters)" in result.message
    assert "offset=257, limit=2000" in result.message


def test_one_huge_line_is_cut_as_it_streams() -> None:
    fs = InMemoryFilesystem(limits=Limits(max_read_bytes=1 << 16))
    fs.write_bytes("min.js", b"a" * 3_000_000 + b"\r\nend\n")
    page = read_text(fs, "min.js", 1, 10)
    assert isinstance(page, TextPage)
    assert page.lines == (
        "a" * LONG_LINE + f"... [{3_000_000 - LONG_LINE:,} more characters]",
        "end",
    )


# -- read_bytes ----------------------------------------------------------------------------


def test_read_bytes_returns_an_image_as_media(make: MakeWorkspace) -> None:
    image = png(3, 2)
    ws = make({"img/a.png": image})
    result = ws.call("read_bytes", path="img/a.png")
    assert result.success, result.message
    assert (
        result.message == f"`img/a.png`: image/png, {len(image)} bytes, attached as image content."
    )
    assert [(a.mime_type, a.data) for a in result.attachments] == [("image/png", image)]
    assert isinstance(result.value, FileBytes)
    assert result.value.data == image


def test_read_bytes_base64_and_hex_ranges(make: MakeWorkspace) -> None:
    blob = bytes(range(256)) * 4
    ws = make({"blob.bin": blob})
    result = ws.call("read_bytes", path="blob.bin", offset=10, limit=100)
    assert result.success, result.message
    head, body, _, more = result.message.split("\n")
    assert head == "`blob.bin`: bytes 10-109 of 1,024 bytes, as base64:"
    assert base64.b64decode(body) == blob[10:110]
    assert more == (
        '[914 more bytes. To continue: read_bytes(path="blob.bin", offset=110, limit=100, '
        'format="base64")]'
    )
    dump = ws.ok("read_bytes", path="blob.bin", offset=0x40, limit=20, format="hex")
    assert dump.splitlines()[1:3] == [
        "00000040: 4041 4243 4445 4647 4849 4a4b 4c4d 4e4f  @ABCDEFGHIJKLMNO",
        "00000050: 5051 5253                                PQRS",
    ]


def test_read_bytes_refusals_name_what_to_do(make: MakeWorkspace) -> None:
    big = png(1, 1)[:16] + bytes(4_000_000)
    ws = make({"huge.png": big, "b.bin": b"\x00" * 10})
    message = ws.fail("read_bytes", path="huge.png")
    assert message.startswith("Cannot show `huge.png` as an image: it is 4,000,016 bytes")
    assert 'read_bytes with format="base64" or "hex" reads it in parts' in message
    assert "over the 196,608 bytes" in ws.fail("read_bytes", path="b.bin", limit=200_000)
    assert ws.fail("read_bytes", path="missing").startswith("Cannot read `missing`: no such")
