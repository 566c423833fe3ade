"""What a new workspace starts from: nothing, a directory, a ZIP archive or a git snapshot."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .._errors import InvalidArgumentError, NotFoundError


@dataclass(frozen=True, slots=True)
class Source:
    """A parsed ``--from`` value.

    ``kind`` is ``empty``, ``directory``, ``archive`` or ``git``; for ``git``,
    ``ref`` is what follows ``#`` (None: the newest snapshot).
    """

    kind: str
    path: str | None = None
    ref: str | None = None

    @property
    def repository(self) -> str | None:
        """The repository a git source loads from (persisting back there is incremental)."""
        return self.path if self.kind == "git" else None


def _is_bare_repository(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(
        os.path.join(path, "objects")
    )


def parse_source(value: str | None) -> Source:
    """Read ``--from``: ``DIR``, ``FILE.zip``, ``REPO.git`` or ``REPO.git#REF``.

    Relative paths are made absolute here, in the caller's directory.

    Raises:
        NotFoundError: The path does not exist.
        InvalidArgumentError: It is none of the above.
    """
    if value is None:
        return Source("empty")
    path, sep, ref = value.partition("#")
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise NotFoundError("--from: no such file or directory", path)
    if sep or (os.path.isdir(path) and _is_bare_repository(path)):
        if not _is_bare_repository(path):
            raise InvalidArgumentError("--from REPO#REF needs a bare git repository", path)
        return Source("git", path, ref or None)
    if os.path.isdir(path):
        return Source("directory", path)
    import zipfile  # here: a source that is a directory (the usual one) never needs it

    if zipfile.is_zipfile(path):
        return Source("archive", path)
    raise InvalidArgumentError("--from takes a directory, a ZIP archive or a git repository", path)
