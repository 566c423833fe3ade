"""``ToolResult``: what every tool call returns, success or failure alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ToolResult(Generic[T]):
    """The outcome of one tool call.

    Attributes:
        message: Text written for a language model: on success what was done
            and how to go on, on failure the path and the cause in one sentence.
        value: The structured result for the caller (None on failure).
        success: False when the call was refused or failed.
    """

    message: str
    value: T | None = None
    success: bool = True

    @classmethod
    def ok(cls, message: str, value: T | None = None) -> ToolResult[T]:
        """A successful result."""
        return cls(message, value, True)

    @classmethod
    def fail(cls, message: str) -> ToolResult[T]:
        """A failed result; ``message`` says what went wrong."""
        return cls(message, None, False)
