"""Where a symlink leads, judged against the tree it lives in, never by its text alone.

A link's text can look harmless and still lead out: with ``d/u -> ..``, the
link ``pw -> d/u/d/u/../../../../etc/passwd`` reads as ``etc/passwd`` inside
the root, yet the kernel, following ``d/u`` each time, climbs above the root.
Imports and hydration judge every link by resolving it the kernel's way
against the tree being built:

* ``INSIDE``: it resolves inside the root, or dangles, or loops;
* ``DECLARED_OUT``: it leads out, and says so: its own target, or that of a
  link it passes through, is absolute or climbs above the root as written
  (a venv's ``bin/python -> /usr/bin/python3``, ``out -> ../build``);
* ``HIDDEN_ESCAPE``: it reads as staying inside, but following the tree's
  links climbs above the root. Nothing legitimate needs that; it is refused.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from ._backend import Kind
from ._resolve import MAX_SYMLINK_HOPS

Lookup = Callable[[str], tuple[Kind, str | None] | None]
"""What the tree holds at a path (relative, ``/``-separated): its kind and, for
a symlink, its target; None if nothing is there."""


class LinkReach(enum.Enum):
    """Where a symlink leads (see the module docstring)."""

    INSIDE = "inside"
    DECLARED_OUT = "declared out"
    HIDDEN_ESCAPE = "hidden escape"


def leaves_as_written(link: str, target: str) -> bool:
    """True if ``target``, read as text from the link at ``link``, leaves the root."""
    if target.startswith("/"):
        return True
    depth = link.count("/")  # the directories above the link
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def link_reach(link: str, target: str, lookup: Lookup) -> LinkReach:
    """Where the symlink at ``link`` (a path in the tree) with ``target`` leads."""
    if leaves_as_written(link, target):
        return LinkReach.DECLARED_OUT
    current = link.split("/")[:-1]
    pending = target.split("/")[::-1]
    hops = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not current:
                return LinkReach.HIDDEN_ESCAPE
            current.pop()
            continue
        path = "/".join([*current, part])
        found = lookup(path)
        if found is None:
            return LinkReach.INSIDE  # dangles
        kind, next_target = found
        if kind is Kind.SYMLINK:
            if next_target is None:
                return LinkReach.INSIDE
            if leaves_as_written(path, next_target):
                return LinkReach.DECLARED_OUT
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                return LinkReach.INSIDE  # a loop leads nowhere
            pending.extend(next_target.split("/")[::-1])
        elif kind is Kind.DIRECTORY:
            current.append(part)
        else:
            return LinkReach.INSIDE  # a file: the end, or ENOTDIR
    return LinkReach.INSIDE
