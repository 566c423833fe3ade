"""Which refs a push or fetch may write: never one the receiving side already keeps.

A remote is someone else's repository: its ``snapshots/1`` or ``tags/v1`` may
name anything, and a ref that is replaced takes the snapshot it kept out of
reach (and, once ``git gc`` runs, out of existence). So refs travel one way
only, into names the receiving side does not use:

* a **snapshot** (``<ns>/snapshots/<n>``) travels with its metadata commit (the
  one its ``Workspacefs-Meta`` trailer names, which the sender's ``meta/<n>``
  must hold, so it stays reachable); it keeps its number if the receiving side
  has no snapshot or metadata ref of that number, and otherwise gets the next
  free one. A snapshot the receiving side already keeps (under any number) is
  left alone, so moving refs again takes nothing twice;
* a **tag** is taken if its name is free and it names a snapshot the receiving
  side keeps (or takes now); a tag the receiving side holds is kept;
* **any other ref** is taken if its name is free.

Whatever is not taken is reported with the reason (``RefRefused``). Deciding
is pure: ``plan`` reads ref maps and asks ``inspect`` what a commit is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pygit2
from pygit2.enums import ObjectType

from .._errors import LimitExceededError
from ..fs import RefRefused, RefWritten
from ._limits import DEFAULT_LOAD_LIMITS
from ._load import trailers
from ._records import sized

_NUMBERED = re.compile(r"^(?P<base>.+)/(?P<kind>snapshots|meta)/(?P<number>[0-9]{1,18})$")
_TAG = re.compile(r"^(?P<base>.+)/tags/(?P<tag>[^/]+)$")

Inspect = Callable[[pygit2.Oid], pygit2.Oid | None]
"""A snapshot commit -> the metadata commit it names (None: it names none).
Raises ``NotWholeError`` (with the reason) for what cannot be taken."""


class NotWholeError(Exception):
    """A ref the receiving side cannot keep whole; the message says why."""


@dataclass
class _Namespace:
    """One ``<ns>``'s numbered snapshots, metadata and tags on one side."""

    snapshots: dict[int, pygit2.Oid] = field(default_factory=dict)
    metas: dict[int, pygit2.Oid] = field(default_factory=dict)
    tags: dict[str, pygit2.Oid] = field(default_factory=dict)


def _split(refs: Mapping[str, pygit2.Oid]) -> tuple[dict[str, _Namespace], dict[str, pygit2.Oid]]:
    """(namespaces by base, the refs that belong to none)."""
    spaces: dict[str, _Namespace] = {}
    others: dict[str, pygit2.Oid] = {}
    for name, oid in refs.items():
        if numbered := _NUMBERED.match(name):
            space = spaces.setdefault(numbered["base"], _Namespace())
            number = int(numbered["number"])
            (space.snapshots if numbered["kind"] == "snapshots" else space.metas)[number] = oid
        elif tag := _TAG.match(name):
            spaces.setdefault(tag["base"], _Namespace()).tags[tag["tag"]] = oid
        else:
            others[name] = oid
    return spaces, others


@dataclass(frozen=True, slots=True)
class Plan:
    """The refs to write (in order: metadata before its snapshot, tags last), the
    sender's refs refused, and how many the receiving side holds already."""

    writes: tuple[RefWritten, ...]
    refused: tuple[RefRefused, ...]
    unchanged: int


def plan(
    sending: Mapping[str, pygit2.Oid], receiving: Mapping[str, pygit2.Oid], inspect: Inspect
) -> Plan:
    """What moving ``sending``'s refs to the side holding ``receiving`` may write."""
    theirs, their_others = _split(sending)
    ours, _ = _split(receiving)
    writes: list[RefWritten] = []
    refused: list[RefRefused] = []
    unchanged = 0
    for base, sent in sorted(theirs.items()):
        done = _namespace(base, sent, ours.get(base, _Namespace()), inspect)
        writes += done.writes
        refused += done.refused
        unchanged += done.unchanged
    for name, oid in sorted(their_others.items()):
        held = receiving.get(name)
        if held is None:
            writes.append(RefWritten(name, name, str(oid)))
        elif held == oid:
            unchanged += 1
        else:
            reason = f"kept: the receiving side's {name} is {held}"
            refused.append(RefRefused(name, str(oid), reason))
    return Plan(tuple(writes), tuple(refused), unchanged)


def _namespace(base: str, sent: _Namespace, held: _Namespace, inspect: Inspect) -> Plan:
    """The plan for one namespace: snapshots (with their metadata), then tags."""
    kept = {oid: number for number, oid in held.snapshots.items()}  # commit -> its number here
    used = set(held.snapshots) | set(held.metas)
    writes: list[RefWritten] = []
    refused: list[RefRefused] = []
    unchanged = 0
    moved: list[tuple[int, pygit2.Oid, pygit2.Oid | None]] = []  # taken, but numbered anew
    for number, oid in sorted(sent.snapshots.items()):
        source = f"{base}/snapshots/{number}"
        if oid in kept:
            unchanged += 1 + (number in sent.metas)
            continue
        try:
            meta = inspect(oid)
            if meta is not None and sent.metas.get(number) != meta:
                raise NotWholeError(f"its metadata commit {meta} is not the sender's meta/{number}")
        except NotWholeError as exc:
            refused.append(RefRefused(source, str(oid), f"not taken: {exc}"))
            continue
        if number in used:
            moved.append((number, oid, meta))
        else:
            writes += _snapshot(base, number, number, oid, meta)
        used.add(number)
        kept[oid] = number
    fresh = max(used, default=0) + 1
    for number, oid, meta in moved:
        writes += _snapshot(base, number, fresh, oid, meta)
        kept[oid] = fresh
        fresh += 1
    for tag, oid in sorted(sent.tags.items()):
        name = f"{base}/tags/{tag}"
        where = f"snapshots/{kept[oid]}" if oid in kept else None
        mine = held.tags.get(tag)
        if mine == oid:
            unchanged += 1
        elif mine is not None:
            theirs = f"; the sender's is {where} here" if where else ""
            reason = f"kept: the receiving side's tag names {mine}{theirs}"
            refused.append(RefRefused(name, str(oid), reason))
        elif where is None:
            refused.append(RefRefused(name, str(oid), "not taken: it names no snapshot taken"))
        else:
            writes.append(RefWritten(name, name, str(oid)))
    return Plan(tuple(writes), tuple(refused), unchanged)


def _snapshot(
    base: str, number: int, target: int, oid: pygit2.Oid, meta: pygit2.Oid | None
) -> list[RefWritten]:
    """The writes taking the sender's snapshot ``number`` as ``target``, metadata first."""
    found = []
    if meta is not None:
        found.append(RefWritten(f"{base}/meta/{target}", f"{base}/meta/{number}", str(meta)))
    found.append(RefWritten(f"{base}/snapshots/{target}", f"{base}/snapshots/{number}", str(oid)))
    return found


def inspector(repository: pygit2.Repository) -> Inspect:
    """``Inspect`` on the commits ``repository`` holds (a fetch's have arrived by then).

    Headers are read first: a ref may name an object of any kind and size.
    """
    odb = repository.odb

    def commit(oid: pygit2.Oid, what: str) -> pygit2.Commit:
        if oid not in odb:
            raise NotWholeError(f"{what} {oid} was not sent")
        try:
            sized(odb, oid, ObjectType.COMMIT, what, DEFAULT_LOAD_LIMITS)
        except (ValueError, LimitExceededError) as exc:
            raise NotWholeError(str(exc)) from None
        found = repository[oid]
        assert isinstance(found, pygit2.Commit)
        return found

    def inspect(oid: pygit2.Oid) -> pygit2.Oid | None:
        named = trailers(commit(oid, "the commit").message).get("Workspacefs-Meta")
        if named is None:
            return None
        try:
            meta = pygit2.Oid(hex=named.strip())
        except ValueError:
            raise NotWholeError(f"its metadata commit {named!r} is not an object id") from None
        commit(meta, "its metadata commit")
        return meta

    return inspect
