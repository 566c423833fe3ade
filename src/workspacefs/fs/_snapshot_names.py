"""How people name a snapshot: by tag, id or id prefix, and its short label; and the
one rule for the names people give (tags, forks, try-runs).

The command line, the agent tools and the debug UI all show and accept
snapshots this way; the rule lives here so that a name one of them prints is
one every other accepts, with the same error when it names nothing.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

from .._errors import InvalidArgumentError, SnapshotNotFoundError
from ..tree import NAME_MAX
from ._snapshots import FilesystemSnapshot

MAX_NAME = 128
"""The longest name (``check_name``) or tag (``check_tag``), in characters."""

_ALLOWED = re.compile(r"[A-Za-z0-9._-]")
_ALL_ALLOWED = {  # by ``colons``: a whole name of allowed characters, checked at once
    False: re.compile(r"[A-Za-z0-9._-]*"),
    True: re.compile(r"[A-Za-z0-9._:-]*"),
}

MIN_ID_PREFIX = 4
"""Shortest id prefix accepted (ids are shown by their first ``SHORT_ID_LENGTH`` characters)."""

SHORT_ID_LENGTH = 8
"""Characters of an id that labels show."""

_SHORT_NAME = 2 * SHORT_ID_LENGTH
"""An id at most this long is a name (an archive's id), shown whole."""

SnapshotSelector = str | uuid.UUID | FilesystemSnapshot
"""A snapshot named by tag, full id, id prefix or its record (``find_snapshot``)."""


def find_snapshot(
    records: Sequence[FilesystemSnapshot], selector: SnapshotSelector
) -> FilesystemSnapshot:
    """The snapshot ``selector`` names among ``records`` (oldest first).

    A record is itself; a UUID is the record with that id. A string is a tag
    (the newest snapshot with it), else a full id or an id prefix of at least
    ``MIN_ID_PREFIX`` characters (case and surrounding blanks ignored) that
    exactly one record's id starts with.

    Raises:
        SnapshotNotFoundError: Nothing, or more than one snapshot, matches.
        InvalidArgumentError: ``selector`` is none of these (a path, say).
    """
    if isinstance(selector, FilesystemSnapshot):
        return selector
    if isinstance(selector, uuid.UUID):
        found = [r for r in records if r.snapshot_id == selector]
    elif not isinstance(selector, str):
        # A path (seed 003's ``restore(archive_path)``) or any other value: said so,
        # rather than failing inside the lookup.
        raise InvalidArgumentError(
            f"a snapshot is named by its record, id, id prefix or tag, not by "
            f"{type(selector).__name__} {str(selector)[:200]!r}; an archive is restored "
            "with import_archive",
            None,
        )
    else:
        found = [r for r in records if r.tag == selector][-1:]
        key = selector.strip().lower()
        if not found and len(key) >= MIN_ID_PREFIX:
            found = [r for r in records if str(r.snapshot_id).startswith(key)]
    if len(found) == 1:
        return found[0]
    name = str(selector)
    if found:
        raise SnapshotNotFoundError(f"id prefix matches {len(found)} snapshots", name)
    raise SnapshotNotFoundError("no snapshot has this tag or id", name)


def short_id(snapshot_id: uuid.UUID | str) -> str:
    """An id as labels show it: a UUID's first ``SHORT_ID_LENGTH`` characters; a short
    name (an archive's id, ``live``) whole."""
    text = str(snapshot_id)
    return text if len(text) <= _SHORT_NAME else text[:SHORT_ID_LENGTH]


def snapshot_label(record: FilesystemSnapshot) -> str:
    """``1a2b3c4d (tag)``: the short id, and the tag if there is one."""
    tag = f" ({record.tag})" if record.tag else ""
    return f"{short_id(record.snapshot_id)}{tag}"


def _refusal(name: str, colons: bool) -> str | None:
    """Why ``name`` breaks the rule (None: it keeps it)."""
    if not name:
        return "is empty"
    if len(name) > MAX_NAME:
        return f"is longer than {MAX_NAME} characters"
    if not _ALL_ALLOWED[colons].fullmatch(name):  # which: a character at a time
        bad = sorted({c for c in name if not _ALLOWED.match(c) and not (colons and c == ":")})
        return f"holds {', '.join(repr(c) for c in bad)}"
    if not name[0].isalnum():
        return "must start with a letter or digit"
    if ".." in name:
        return "holds '..'"
    if name.endswith(".lock"):
        return "must not end with '.lock'"
    if name.endswith("."):
        return "must not end with '.'"
    return None


def check_name(name: str, what: str = "name") -> str:
    """``name`` if it can name a fork or a try-run (``what`` says which, for the error).

    One rule, checked where a name is given: 1 to ``MAX_NAME`` ASCII letters,
    digits, ``.``, ``_`` and ``-``, starting with a letter or digit, without
    ``..``, not ending in ``.`` or ``.lock``. Whatever keeps it is a git ref
    component, a file name (never ``.snapshots`` or ``.forks``), a word a
    table shows on one line and a path ``podman -v`` takes.

    Raises:
        InvalidArgumentError: It breaks the rule; the message says how.
    """
    why = _refusal(name, colons=False)
    if why is not None:
        raise InvalidArgumentError(
            f"{what} {name!r} {why}: a {what} is 1 to {MAX_NAME} letters, digits, '.', '_' "
            "or '-', starting with a letter or digit",
            name,
        )
    return name


def check_tag(tag: str) -> str:
    """``tag`` if it can tag a snapshot: ``check_name``'s rule, with ``:`` allowed too
    (tags use it as a namespace separator: ``undo:<tool>:<call id>``; a git ref
    spells it ``%3A``, and the whole must fit a file name), and not all digits
    (``load(repo, "3")`` is snapshot number 3).

    Raises:
        InvalidArgumentError: It cannot; the message says why.
    """
    why = _refusal(tag, colons=True)
    if why is None and tag.isdigit():
        why = "is a number, which names a persisted snapshot by its number"
    if why is None and len(tag) + 2 * tag.count(":") > NAME_MAX:
        why = f"is longer than {NAME_MAX} bytes as a git ref (each ':' is '%3A')"
    if why is not None:
        raise InvalidArgumentError(
            f"tag {tag!r} {why}: a tag is 1 to {MAX_NAME} letters, digits, '.', '_', '-' "
            "or ':', starting with a letter or digit",
            tag,
        )
    return tag
