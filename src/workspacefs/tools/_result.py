"""``ToolResult``: what every tool call returns, success or failure alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Attachment:
    """Media a result carries besides its message: an image or a sound the model
    takes in as such (MCP's image and audio content).

    Attributes:
        mime_type: What the data is, e.g. ``image/png``.
        data: The file's bytes.
    """

    mime_type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class ToolResult(Generic[T]):
    """The outcome of one tool call.

    Attributes:
        message: Text written for a language model: on success what was done
            and how to go on, on failure the path and the cause in one sentence.
        value: The structured result for the caller (None on failure).
        success: False when the call was refused or failed.
        attachments: Media to show the model after the message (``read_bytes``
            of an image); a framework without media support can ignore them,
            the message says what they are.
    """

    message: str
    value: T | None = None
    success: bool = True
    attachments: tuple[Attachment, ...] = ()

    @classmethod
    def ok(
        cls, message: str, value: T | None = None, *, attachments: tuple[Attachment, ...] = ()
    ) -> ToolResult[T]:
        """A successful result."""
        return cls(message, value, True, attachments)

    @classmethod
    def fail(cls, message: str) -> ToolResult[T]:
        """A failed result; ``message`` says what went wrong."""
        return cls(message, None, False)
