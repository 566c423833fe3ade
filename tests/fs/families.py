"""A hypothesis state machine over a family of forks, for the fork and fast-forward tests.

It keeps the workspaces of one family (the origin and its forks) and a dict
model of each, and writes, deletes and forks; subclasses add their own rules
and check each workspace against its model.
"""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from workspacefs import InMemoryFilesystem

PATHS = ["a", "b", "d/a", "d/b", "e/f/g"]
DATA = st.binary(max_size=70_000)  # past one chunk: shared chunk lists get copied


class FamilyMachine(RuleBasedStateMachine):
    """Workspaces of one family (``spaces``) and their models (``models``)."""

    MAX_SPACES = 6
    """Forks are made while there are fewer workspaces than this."""

    def __init__(self) -> None:
        super().__init__()
        self.spaces: list[InMemoryFilesystem] = [InMemoryFilesystem(memory_budget=1 << 30)]
        self.models: list[dict[str, bytes]] = [{}]

    def _pick(self, index: int) -> int:
        return index % len(self.spaces)

    @rule(index=st.integers(0, 20), path=st.sampled_from(PATHS), data=DATA)
    def write(self, index: int, path: str, data: bytes) -> None:
        i = self._pick(index)
        self.spaces[i].write_bytes(path, data)
        self.models[i][path] = data

    @rule(index=st.integers(0, 20), path=st.sampled_from(PATHS))
    def delete(self, index: int, path: str) -> None:
        i = self._pick(index)
        if path in self.models[i]:
            self.spaces[i].delete(path)
            del self.models[i][path]

    @precondition(lambda self: len(self.spaces) < self.MAX_SPACES)
    @rule(index=st.integers(0, 20))
    def fork(self, index: int) -> None:
        i = self._pick(index)
        self.spaces.append(self.spaces[i].fork())
        self.models.append(dict(self.models[i]))
