"""A stand-in for the agent framework the specifications are written against.

The seeds' examples use a prompt framework's names (``Prompt``,
``PromptTemplate``, ``MarkdownSection``, ``Session`` with typed slices,
``append_all``, ``InProcessEventBus``). workspacefs depends on no framework,
so the conformance tier imports these from here: the smallest code that
behaves as the seeds describe it, and nothing of workspacefs itself. The
seeds' own code for ``Prompt.filesystem()`` is copied as written.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from workspacefs.tools import WorkspaceSection

OutputT = TypeVar("OutputT")
T = TypeVar("T")

Reducer = Callable[[tuple[Any, ...], Any], tuple[Any, ...]]


def append_all(items: tuple[Any, ...], item: Any) -> tuple[Any, ...]:
    """The reducer that keeps every value appended to a slice."""
    return (*items, item)


class InProcessEventBus:
    """An event bus that delivers nothing anywhere (the tests need none)."""


@dataclass(frozen=True)
class Snapshot:
    """A session's slices at one moment."""

    slices: Mapping[type[Any], tuple[Any, ...]]
    snapshot_id: str | None = None


class _Slice(Generic[T]):
    def __init__(self, session: Session, kind: type[T]) -> None:
        self._session = session
        self._kind = kind

    def register(self, kind: type[Any], reducer: Reducer) -> None:
        self._session._reducers[(self._kind, kind)] = reducer

    def append(self, item: T) -> None:
        self.dispatch(item)

    def dispatch(self, event: Any) -> None:
        reducer = self._session._reducers.get((self._kind, type(event)), append_all)
        slices = self._session._slices
        slices[self._kind] = reducer(slices.get(self._kind, ()), event)

    def all(self) -> tuple[Any, ...]:
        return self._session._slices.get(self._kind, ())


class Session:
    """Typed slices of state, snapshotted and rolled back as a whole."""

    def __init__(
        self, *, bus: InProcessEventBus | None = None, tags: Mapping[str, str] | None = None
    ) -> None:
        self.bus = bus or InProcessEventBus()
        self.tags = dict(tags or {})
        self.session_id = uuid.uuid4()
        self._slices: dict[type[Any], tuple[Any, ...]] = {}
        self._reducers: dict[tuple[type[Any], type[Any]], Reducer] = {}
        self._named: dict[str, Snapshot] = {}

    def __getitem__(self, kind: type[T]) -> _Slice[T]:
        return _Slice(self, kind)

    def mutate(self, kind: type[T]) -> _Slice[T]:
        return _Slice(self, kind)

    def snapshot(self, snapshot_id: str | None = None) -> Snapshot:
        taken = Snapshot(copy.copy(self._slices), snapshot_id)
        if snapshot_id is not None:
            self._named[snapshot_id] = taken
        return taken

    def restore(self, snapshot: Snapshot) -> None:
        self._slices = dict(snapshot.slices)

    def rollback(self, snapshot: Snapshot | str) -> None:
        self.restore(self._named[snapshot] if isinstance(snapshot, str) else snapshot)


@dataclass
class MarkdownSection:
    """A prompt section with a title, a key and a template."""

    title: str = ""
    key: str = ""
    template: str = ""
    tools: tuple[Any, ...] = ()
    children: list[Any] = field(default_factory=list)


@dataclass
class PromptTemplate:
    """A prompt's sections."""

    ns: str
    key: str
    sections: list[Any]


class Prompt(Generic[OutputT]):
    """A prompt over a template; ``filesystem()`` is the seeds' code as written."""

    def __init__(self, template: PromptTemplate) -> None:
        self.template = template

    def filesystem(self) -> Any:
        """Return the filesystem from the workspace section, if present."""
        section = self._find_workspace_section()
        if section is None:
            return None
        return section.filesystem

    def _find_workspace_section(self) -> WorkspaceSection | None:
        """Locate the workspace section in the template tree."""
        for section in self.template.sections:
            if isinstance(section, WorkspaceSection):
                return section
            # Recursively search children
            found = self._search_children(section)
            if found is not None:
                return found
        return None

    def _search_children(self, section: Any) -> WorkspaceSection | None:
        for child in getattr(section, "children", ()):
            if isinstance(child, WorkspaceSection):
                return child
            found = self._search_children(child)
            if found is not None:
                return found
        return None

    def render(self) -> RenderedPrompt[OutputT]:
        return RenderedPrompt(self)


@dataclass
class RenderedPrompt(Generic[OutputT]):
    """A prompt as sent to a model."""

    prompt: Prompt[OutputT]
    deadline: Any = None


def sections_of(template: PromptTemplate) -> Iterable[Any]:
    """Every section of a template, depth first."""
    pending = list(template.sections)
    while pending:
        section = pending.pop(0)
        yield section
        pending[:0] = getattr(section, "children", [])
