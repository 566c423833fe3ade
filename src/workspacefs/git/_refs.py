"""The ref namespace: refs/workspacefs/<workspace>/{snapshots,meta,tags}/...

Nothing outside ``refs/workspacefs/`` is ever written: the user's branches
and HEAD stay theirs.
"""

from __future__ import annotations

import re

import pygit2

from .._errors import InvalidArgumentError

PREFIX = "refs/workspacefs"
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def valid_ref_part(part: str) -> bool:
    """True if ``part`` can be one component of a ref name here."""
    return bool(_SAFE.match(part)) and not part.endswith(".lock") and ".." not in part


def _check(part: str, what: str) -> str:
    if not valid_ref_part(part):
        raise InvalidArgumentError(f"{what} {part!r} cannot be used in a git ref name", part)
    return part


def snapshot_ref(workspace: str, number: int) -> str:
    """The ref of snapshot ``number`` of ``workspace``."""
    return f"{PREFIX}/{_check(workspace, 'workspace id')}/snapshots/{number}"


def meta_ref(workspace: str, number: int) -> str:
    """The ref keeping the metadata commit of snapshot ``number`` reachable."""
    return f"{PREFIX}/{_check(workspace, 'workspace id')}/meta/{number}"


def tag_ref(workspace: str, tag: str) -> str:
    """The ref naming a tagged snapshot."""
    return f"{PREFIX}/{_check(workspace, 'workspace id')}/tags/{_check(tag, 'tag')}"


def snapshot_numbers(repository: pygit2.Repository, workspace: str) -> list[int]:
    """The numbers of the persisted snapshots of ``workspace``, ascending."""
    prefix = snapshot_ref(workspace, 0)[: -len("0")]
    return sorted(
        int(name[len(prefix) :])
        for name in repository.references
        if name.startswith(prefix) and name[len(prefix) :].isdigit()
    )


def next_number(repository: pygit2.Repository, workspace: str) -> int:
    """The number the next persisted snapshot of ``workspace`` gets."""
    numbers = snapshot_numbers(repository, workspace)
    return numbers[-1] + 1 if numbers else 1
