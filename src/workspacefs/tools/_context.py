"""``ToolContext``: what a tool handler gets besides its parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from ..fs import DEFAULT_LIMITS, Filesystem

NO_FILESYSTEM = "No filesystem available in this context."
"""What a tool that needs a workspace answers a context without one (the seeds' words)."""


class NoFilesystemError(RuntimeError):
    """A tool that needs a workspace was called with a context that holds none.

    A ``RuntimeError`` (the seeds' "backend unavailable"), not an ``OSError``: no
    path is at fault, so handlers that word filesystem errors let it through to
    ``Tool.invoke``, which answers ``NO_FILESYSTEM``.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """The world a tool call runs in.

    Only ``filesystem`` is needed by this package's tools. The other fields
    are the ones agent frameworks carry (seeds 000-003); they are typed loosely
    so any framework can fill them with its own objects, and a tool defined
    elsewhere (a shell tool, say) can read them. Every field defaults to None,
    as in the seeds: a tool that needs a workspace and finds none fails with
    ``NO_FILESYSTEM`` rather than raising.

    Attributes:
        filesystem: The workspace the tools act on, or None. A view over one
            (an object whose ``backend`` is a ``Filesystem``, as
            ``workspacefs.minimal``'s 8-method views are) serves too: the tools
            act on that backend (``workspace``).
        call_id: The caller's id for this call (e.g. the model's tool-call id):
            every change the call makes is attributed to the tool and this id
            (see ``Tool.invoke``), so ``blame`` can name the call.
        prompt: The framework's prompt object, if any.
        rendered_prompt: The prompt as sent to the model, if any.
        adapter: The model adapter making the call, if any.
        session: The agent session, if any.
        deadline: When the call should give up (framework-defined), if any.
        budget_tracker: The framework's budget tracker, if any.
    """

    filesystem: Filesystem | None = None
    call_id: str | None = None
    prompt: Any = None
    rendered_prompt: Any = None
    adapter: Any = None
    session: Any = None
    deadline: Any = None
    budget_tracker: Any = None

    def workspace(self) -> Filesystem:
        """The ``Filesystem`` the tools act on: ``filesystem``, or the backend of a view.

        Raises:
            NoFilesystemError: The context holds none (``Tool.invoke`` answers it
                with a failed result saying so).
        """
        found: object = self.filesystem
        if found is not None and not _is_filesystem(found):
            found = getattr(found, "backend", None)
        if found is None or not _is_filesystem(found):
            raise NoFilesystemError(NO_FILESYSTEM)
        return cast(Filesystem, found)


_FILESYSTEM_TYPES: dict[type, bool] = {}


def _is_filesystem(found: object) -> bool:
    """True if ``found`` has the ``Filesystem`` protocol's members, judged once per
    type: checking a runtime protocol walks its members (0.04 ms), and every tool
    call asks."""
    kind = type(found)
    known = _FILESYSTEM_TYPES.get(kind)
    if known is None:
        known = _FILESYSTEM_TYPES[kind] = isinstance(found, Filesystem)
    return known


def read_cap(filesystem: Filesystem) -> int:
    """The most bytes a tool reads of one file at once: the backend's read limit
    (``read_bytes`` with no limit reads a whole file, however large)."""
    return int(getattr(filesystem, "limits", DEFAULT_LIMITS).max_read_bytes)
