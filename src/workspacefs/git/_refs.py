"""The ref layout, in one place: everything lives under ``refs/workspacefs/``.

* ``<workspace>/{snapshots,meta}/<n>`` and ``<workspace>/tags/<tag>``: persisted
  snapshots of a workspace (a host directory's ``git`` snapshots use the
  workspace name ``host``); a ``:`` in a tag, which git refuses in ref names
  (``UndoableToolset`` tags ``undo:<tool>:<call>``), is ``%3A`` in its ref;
* ``sessions/<session>/snapshots/<n>``: shadow snapshots of a user's working copy;
* ``branches/<session>/<name>``: writable worktrees made from those.

Snapshot numbers count from 1; the next one is one past the highest ref.
Nothing outside ``refs/workspacefs/`` is ever written: the user's branches
and HEAD stay theirs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pygit2

from .._errors import InvalidArgumentError
from ..fs import check_tag

PREFIX = "refs/workspacefs"
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def valid_ref_part(part: str) -> bool:
    """True if ``part`` can be one component of a ref name here."""
    return bool(_SAFE.match(part)) and not part.endswith(".lock") and ".." not in part


def tag_ref_part(tag: str) -> str:
    """The ref component naming ``tag``: the tag, its ``:`` written ``%3A``.

    A tag keeps the rule ``fs.check_tag`` checks when the snapshot is taken:
    what a ref component may hold, and ``:``, the separator tags use for
    namespaces. No tag holds ``%``, so no two tags share a ref.

    Raises:
        InvalidArgumentError: Any other tag (a record from elsewhere may hold one).
    """
    return check_tag(tag).replace(":", "%3A")


def _check(part: str, what: str) -> str:
    if not valid_ref_part(part):
        raise InvalidArgumentError(f"{what} {part!r} cannot be used in a git ref name", part)
    return part


@dataclass(frozen=True, slots=True)
class RefNamespace:
    """One namespace of numbered snapshot refs: ``<base>/snapshots/<n>``,
    ``<base>/meta/<n>`` and ``<base>/tags/<tag>``."""

    base: str

    @classmethod
    def for_workspace(cls, workspace: str) -> RefNamespace:
        """``refs/workspacefs/<workspace>``; refuses names git cannot hold."""
        return cls(f"{PREFIX}/{_check(workspace, 'workspace id')}")

    @classmethod
    def for_session(cls, session_id: str) -> RefNamespace:
        """``refs/workspacefs/sessions/<session>`` (the provider checks the id)."""
        return cls(f"{PREFIX}/sessions/{session_id}")

    def snapshot(self, number: int) -> str:
        """The ref of snapshot ``number``."""
        return f"{self.base}/snapshots/{number}"

    def meta(self, number: int) -> str:
        """The ref keeping the metadata commit of snapshot ``number`` reachable."""
        return f"{self.base}/meta/{number}"

    def tag(self, tag: str) -> str:
        """The ref naming a tagged snapshot; refuses tags git cannot hold
        (see ``tag_ref_part``)."""
        return f"{self.base}/tags/{tag_ref_part(tag)}"

    def relative(self, name: str) -> str:
        """A ref named relative to the namespace, e.g. ``snapshots/3``."""
        return f"{self.base}/{name}"

    def numbers(self, repository: pygit2.Repository) -> list[int]:
        """The numbers of the snapshots in ``repository``, ascending."""
        prefix = f"{self.base}/snapshots/"
        return sorted(
            int(name[len(prefix) :])
            for name in repository.references
            if name.startswith(prefix) and name[len(prefix) :].isdigit()
        )

    def next_number(self, repository: pygit2.Repository) -> int:
        """The number the next snapshot gets."""
        numbers = self.numbers(repository)
        return numbers[-1] + 1 if numbers else 1


def branch_prefix(session_id: str) -> str:
    """Where the worktree branches of a shadow session live (ends with ``/``)."""
    return f"{PREFIX}/branches/{session_id}/"


def branch_ref(session_id: str, name: str) -> str:
    """The ref of a shadow session's worktree branch ``name``."""
    return branch_prefix(session_id) + name
