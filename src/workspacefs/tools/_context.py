"""``ToolContext``: what a tool handler gets besides its parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..fs import Filesystem


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """The world a tool call runs in.

    Only ``filesystem`` is needed by this package's tools. The other fields
    are the ones agent frameworks carry (seed 000); they are typed loosely so
    any framework can fill them with its own objects, and a tool defined
    elsewhere (a shell tool, say) can read them.

    Attributes:
        filesystem: The workspace the tools act on.
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

    filesystem: Filesystem
    call_id: str | None = None
    prompt: Any = None
    rendered_prompt: Any = None
    adapter: Any = None
    session: Any = None
    deadline: Any = None
    budget_tracker: Any = None
