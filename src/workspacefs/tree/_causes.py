"""Who changed the tree: ``Cause``, and the context it is taken from.

Every mutation of the live tree records the cause in effect in the context
that makes it (a ``contextvars.ContextVar``): a thread, a trio task or an
asyncio task each has its own, so two callers never attribute each other's
changes. Callers set it with ``attributed`` around a group of operations; the
FUSE handlers set it per request (``set_cause``), as one worker task serves
request after request and every request that changes the tree sets its own.

A cause is small and JSON-ready (``to_dict``/``from_dict``): the tree keeps
one reference per changed inode per version, and persistence writes it out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any, Literal

from .._errors import InvalidArgumentError
from ._redact import redact_command, redact_text

CAUSE_VARIABLE = "WORKSPACEFS_CAUSE"
"""The environment variable through which a process tells the mount which call it
works for (JSON: ``tool``, ``call_id``, ``label``); the sandbox sets it on each
command, and the mount reads it once per process (``Cause.from_environment``)."""

MAX_TEXT = 4096
"""The longest string field a cause holds (longer ones are cut, see ``Cause.bounded``)."""
MAX_ARGUMENTS = 64
"""The most command-line arguments a cause holds."""

CauseKind = Literal["call", "process", "unknown"]

_FIELDS = ("tool", "call_id", "label", "pid", "command", "container", "uid")


@dataclass(frozen=True, slots=True)
class Cause:
    """Who made a change: an API or tool call, or a process writing through the mount.

    A call sets ``tool`` (the tool's name), ``call_id`` (the caller's id for
    the call, e.g. the model's tool-call id) and/or ``label`` (free text: a
    command line, "import", a person's name). A process writing through the
    mount has ``pid`` (its process id, as the mount's pid namespace sees it),
    ``command`` (its command line), ``container`` (the id of the Podman or
    Docker container whose cgroup it runs in) and ``uid``; a process started
    for a call (a sandbox command) has the call's fields too.

    Attributes:
        tool: The tool's name.
        call_id: The caller's id for the call.
        label: Free text for people.
        pid: The writing process.
        command: Its command line (argv), cut to ``MAX_ARGUMENTS`` arguments.
        container: The container id (64 hex digits) from the process's cgroup.
        uid: The writing user.
    """

    tool: str | None = None
    call_id: str | None = None
    label: str | None = None
    pid: int | None = None
    command: tuple[str, ...] = ()
    container: str | None = None
    uid: int | None = None
    # ``redacted``'s answer, kept with the cause: a tree asks on every change the
    # cause makes, and a process's cause (one object) makes many.
    _redacted: Cause | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def kind(self) -> CauseKind:
        """``process`` (a process wrote through the mount), ``call`` (an API or tool
        call), or ``unknown`` (a process the mount could not name)."""
        if self.pid is not None:
            return "process"
        if self.tool is not None or self.call_id is not None or self.label is not None:
            return "call"
        return "unknown"

    @classmethod
    def call(
        cls, tool: str | None = None, call_id: str | None = None, label: str | None = None
    ) -> Cause:
        """The cause of an API or tool call."""
        return cls(tool=tool, call_id=call_id, label=label).bounded()

    def bounded(self) -> Cause:
        """This cause with every string cut to ``MAX_TEXT`` characters and the command
        to ``MAX_ARGUMENTS`` arguments (what a process can make arbitrarily long)."""
        command = tuple(arg[:MAX_TEXT] for arg in self.command[:MAX_ARGUMENTS])
        tool, call_id, label, container = (
            None if text is None else text[:MAX_TEXT]
            for text in (self.tool, self.call_id, self.label, self.container)
        )
        return Cause(tool, call_id, label, self.pid, command, container, self.uid)

    def redacted(self) -> Cause:
        """This cause as history keeps it: its command line and label with their
        secrets masked (``redact_command``, ``redact_text``); itself if they hold
        none. What a tree records, unless its workspace keeps full command lines."""
        done = self._redacted
        if done is None:
            command = redact_command(self.command)
            label = None if self.label is None else redact_text(self.label)
            if command == self.command and label == self.label:
                done = self
            else:
                done = Cause(
                    self.tool, self.call_id, label, self.pid, command, self.container, self.uid
                )
                object.__setattr__(done, "_redacted", done)
            object.__setattr__(self, "_redacted", done)
        return done

    def with_call(self, call: Cause | None) -> Cause:
        """This cause with the call fields (tool, call id, label) of ``call`` where it
        has none."""
        if call is None:
            return self
        return Cause(
            self.tool if self.tool is not None else call.tool,
            self.call_id if self.call_id is not None else call.call_id,
            self.label if self.label is not None else call.label,
            self.pid,
            self.command,
            self.container,
            self.uid,
        )

    def describe(self) -> str:
        """One line for people: ``edit_file call toolu_01 (label)`` or
        ``pid 4242 `npm install` in container 1a2b3c4d5e6f uid 1000``."""
        parts = []
        if self.tool is not None:
            parts.append(self.tool)
        if self.call_id is not None:
            parts.append(f"call {self.call_id}")
        if self.label is not None:
            label = self.label.translate(_VISIBLE)
            parts.append(f"({label})" if parts else label)
        if self.pid is not None:
            parts.append(f"pid {self.pid}")
        if self.command:
            line = " ".join(self.command).translate(_VISIBLE)
            parts.append(f"`{line[:157] + '...' if len(line) > 160 else line}`")
        if self.container is not None:
            parts.append(f"in container {self.container[:12]}")
        if self.uid is not None:
            parts.append(f"uid {self.uid}")
        return " ".join(parts) or "unknown"

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set, JSON-ready (``command`` as a list)."""
        data: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if value is None or value == ():
                continue
            data[name] = list(value) if name == "command" else value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cause:
        """The cause ``to_dict`` wrote; InvalidArgumentError for anything else (it may
        come from another process)."""
        if not isinstance(data, Mapping):
            raise InvalidArgumentError("a cause must be a JSON object", None)
        unknown = set(data) - set(_FIELDS)
        if unknown:
            raise InvalidArgumentError(f"unknown cause fields {sorted(unknown)}", None)
        fields: dict[str, Any] = {}
        for name in ("tool", "call_id", "label", "container"):
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise InvalidArgumentError(f"cause field {name!r} must be a string", None)
            fields[name] = value
        for name in ("pid", "uid"):
            value = data.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise InvalidArgumentError(f"cause field {name!r} must be an integer", None)
            fields[name] = value
        command = data.get("command", ())
        if not isinstance(command, list | tuple) or not all(isinstance(a, str) for a in command):
            raise InvalidArgumentError("cause field 'command' must be a list of strings", None)
        return cls(**fields, command=tuple(command)).bounded()

    @classmethod
    def from_environment(cls, value: str | None) -> Cause | None:
        """The call a process says it works for, from the value of ``CAUSE_VARIABLE``
        (None if unset or unreadable: a process's word is a hint, never an error)."""
        if not value:
            return None
        try:
            data = json.loads(value)
            if not isinstance(data, dict):
                return None
            cause = cls.from_dict({k: v for k, v in data.items() if k in _CALL_FIELDS})
        except (ValueError, InvalidArgumentError, RecursionError):  # nested past the parser
            return None
        return cause if cause.kind == "call" else None

    def environment(self) -> str:
        """The value of ``CAUSE_VARIABLE`` that hands this cause's call fields to a process."""
        return json.dumps(
            {k: v for k, v in self.to_dict().items() if k in _CALL_FIELDS}, separators=(",", ":")
        )


_CALL_FIELDS = ("tool", "call_id", "label")
_VISIBLE = {code: f"\\x{code:02x}" for code in range(32)} | {10: "\\n", 9: "\\t"}
"""Control characters as escapes: a description is one line."""

CURRENT: ContextVar[Cause | None] = ContextVar("workspacefs_cause", default=None)
"""The cause in effect in this context; set it with ``attributed`` (or ``set_cause``)."""


def current_cause() -> Cause | None:
    """The cause changes made now in this context are attributed to."""
    return CURRENT.get()


class _Attributed:
    """``attributed``'s block: a class, not a generator, as every tool call enters one
    (half the cost of ``contextlib.contextmanager``'s machinery)."""

    __slots__ = ("_cause", "_token")

    def __init__(self, cause: Cause | None) -> None:
        self._cause = cause
        self._token: Token[Cause | None] | None = None

    def __enter__(self) -> Cause | None:
        self._token = CURRENT.set(self._cause)
        return self._cause

    def __exit__(self, *exc_info: object) -> None:
        assert self._token is not None
        CURRENT.reset(self._token)


def attributed(cause: Cause | None) -> AbstractContextManager[Cause | None]:
    """Attribute every change made in this context (thread, task) to ``cause`` until
    the block ends; blocks nest, the innermost wins (None: no cause)."""
    return _Attributed(cause)


def set_cause(cause: Cause | None) -> None:
    """Make ``cause`` this context's cause until the next call.

    For loops that serve one request after another in one context (the FUSE
    handlers), where each request that changes the tree sets its own first;
    everyone else uses ``attributed``.
    """
    CURRENT.set(cause)
