"""``read_bytes``: any file's bytes, an image or a sound as media the model takes in.

read_file shows text; everything else comes here. An image (PNG, JPEG, GIF,
WebP) or a sound (WAV, MP3, OGG, FLAC), known by its first bytes, not its
name, is returned whole as an ``Attachment`` (MCP image or audio content), up
to ``MAX_MEDIA_BYTES``; any other range of bytes as base64 or a hex dump,
bounded per call, the message naming the call that reads on.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ..fs import Filesystem
from ._context import ToolContext
from ._files import PATH_HELP
from ._messages import count, failure, quote
from ._pages import block_size
from ._result import Attachment, ToolResult
from ._tool import Tool, ToolAnnotations, ToolParams, served

MAX_MEDIA_BYTES = 3_932_160
"""The largest image or sound returned as media: 5 MiB once base64-encoded, what model
APIs take per image."""
DEFAULT_BYTES = 65_536
MAX_BYTES: dict[str, int] = {"base64": 196_608, "hex": 65_536}
"""Most bytes one call returns in each format (about 262,000 characters either way)."""

_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (8, b"WEBP", "image/webp"),
    (8, b"WAVE", "audio/wav"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\xff\xfb", "audio/mpeg"),
    (0, b"\xff\xf3", "audio/mpeg"),
    (0, b"OggS", "audio/ogg"),
    (0, b"fLaC", "audio/flac"),
)


def media_type(head: bytes) -> str | None:
    """The MIME type of an image or sound that starts with ``head``, else None."""
    for at, signature, mime in _SIGNATURES:
        if head.startswith(signature, at) and (at == 0 or head.startswith(b"RIFF")):
            return mime
    return None


class ReadBytesParams(ToolParams):
    """Arguments of ``read_bytes``."""

    path: str = Field(description=PATH_HELP)
    offset: int = Field(0, ge=0, description="First byte to read (0-based).")
    limit: int = Field(
        DEFAULT_BYTES,
        ge=1,
        description=(
            f"Most bytes to read (at most {MAX_BYTES['base64']:,} as base64, "
            f"{MAX_BYTES['hex']:,} as hex). An image or sound is read whole."
        ),
    )
    format: Literal["auto", "base64", "hex"] = Field(
        "auto",
        description=(
            "auto: an image or sound file as media the model sees or hears, any other "
            "file as base64; base64 or hex (a dump like `xxd`): the bytes themselves."
        ),
    )


@dataclass(frozen=True, slots=True)
class FileBytes:
    """What ``read_bytes`` read.

    Attributes:
        path: The file.
        offset: Where the bytes start.
        data: The bytes.
        size_bytes: The file's size.
        mime_type: The media type of an image or sound, else None.
    """

    path: str
    offset: int
    data: bytes
    size_bytes: int
    mime_type: str | None = None

    @property
    def more(self) -> bool:
        """Bytes follow the ones read."""
        return self.offset + len(self.data) < self.size_bytes


def hex_dump(data: bytes, offset: int) -> str:
    """``data`` as ``xxd`` shows it: offset, 16 bytes in groups of two, printable ASCII."""
    lines = []
    for start in range(0, len(data), 16):
        row = data[start : start + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in row)
        lines.append(f"{offset + start:08x}: {row.hex(' ', -2):<39}  {text}")
    return "\n".join(lines)


def _read(fs: Filesystem, path: str, offset: int, size: int) -> tuple[bytes, int, str]:
    """``size`` bytes at ``offset`` in blocks the backend allows; the file's size and path."""
    block, parts, total, resolved = block_size(fs), [], 0, path
    while True:
        got = fs.read_bytes(path, offset=offset, limit=min(block, size))
        parts.append(got.content)
        total, resolved = got.size_bytes, got.path
        offset += len(got.content)
        size -= len(got.content)
        if size <= 0 or not got.truncated or not got.content:
            return b"".join(parts), total, resolved


def read_bytes(params: ReadBytesParams, *, context: ToolContext) -> ToolResult[FileBytes]:
    """An image or sound as media, or a range of any file's bytes as base64 or hex."""
    fs, path = context.workspace(), params.path
    form = params.format
    try:
        head = fs.read_bytes(path, offset=0, limit=min(16, block_size(fs)))
        mime = media_type(head.content)
        if form == "auto" and mime is not None and params.offset == 0:
            return _media(fs, path, mime, head.size_bytes)
        form = "base64" if form == "auto" else form
        if params.limit > MAX_BYTES[form]:
            return ToolResult.fail(
                f"Cannot read {quote(path)}: limit={params.limit:,} is over the "
                f"{MAX_BYTES[form]:,} bytes one call returns as {form}; read it in parts."
            )
        data, size, resolved = _read(fs, path, params.offset, params.limit)
    except (OSError, ValueError) as exc:
        return ToolResult.fail(failure("read", path, exc))
    read = FileBytes(resolved, params.offset, data, size, mime)
    end = params.offset + len(data)
    kind = f", {mime}" if mime else ""
    if not data:
        return ToolResult.ok(
            f"{quote(path)} has {count(size, 'byte')}{kind}: nothing at offset {params.offset:,}.",
            read,
        )
    body = (
        base64.b64encode(data).decode("ascii") if form == "base64" else hex_dump(data, read.offset)
    )
    head_line = (
        f"{quote(path)}: bytes {params.offset:,}-{end - 1:,} of {count(size, 'byte')}{kind}, "
        f"as {form}:"
    )
    text = f"{head_line}\n{body}"
    if read.more:
        call = (
            f"read_bytes(path={json.dumps(path)}, offset={end}, limit={params.limit}, "
            f'format="{form}")'
        )
        text += f"\n\n[{count(size - end, 'more byte')}. To continue: {call}]"
    return ToolResult.ok(text, read)


def _media(fs: Filesystem, path: str, mime: str, size: int) -> ToolResult[FileBytes]:
    kind = mime.split("/")[0]
    if size > MAX_MEDIA_BYTES:
        return ToolResult.fail(
            f"Cannot show {quote(path)} as {'an' if kind == 'image' else 'a'} {kind}: it is "
            f"{count(size, 'byte')} ({mime}), over the {MAX_MEDIA_BYTES:,} bytes one call "
            'returns as media. read_bytes with format="base64" or "hex" reads it in parts.'
        )
    data, size, resolved = _read(fs, path, 0, size)
    read = FileBytes(resolved, 0, data, size, mime)
    return ToolResult.ok(
        f"{quote(path)}: {mime}, {count(size, 'byte')}, attached as {kind} content.",
        read,
        attachments=(Attachment(mime, data),),
    )


READ_BYTES = served(
    Tool(
        name="read_bytes",
        description=(
            "Read a file that is not text. An image (PNG, JPEG, GIF, WebP) or sound (WAV, MP3, "
            "OGG, FLAC) comes back as media you can see or hear. Any other file, or format="
            '"base64"/"hex", gives a range of its bytes (offset, limit) as base64 or an `xxd`-'
            "style hex dump; the message names the call that reads on. Use read_file for text."
        ),
        params=ReadBytesParams,
        handler=read_bytes,
        annotations=ToolAnnotations(
            read_only=True, destructive=False, idempotent=True, title="Read bytes or media"
        ),
    )
)
