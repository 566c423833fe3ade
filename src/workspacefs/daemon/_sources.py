"""What a new workspace starts from: nothing, a directory, a ZIP archive or a git snapshot."""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass

from .. import git
from .._errors import InvalidArgumentError, NotFoundError, SnapshotNotFoundError
from ..archive import import_archive
from ..fs import HostMount, InMemoryFilesystem

_WORKSPACE_REF = re.compile(r"^refs/workspacefs/([^/]+)/snapshots/(\d+)$")


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
    if zipfile.is_zipfile(path):
        return Source("archive", path)
    raise InvalidArgumentError("--from takes a directory, a ZIP archive or a git repository", path)


def _only_workspace(repository: str) -> tuple[str, int]:
    """The one workspace with snapshots in ``repository``, and its newest number."""
    newest: dict[str, int] = {}
    for name in git.open_repository(repository).references:
        found = _WORKSPACE_REF.match(name)
        if found:
            workspace, number = found[1], int(found[2])
            newest[workspace] = max(newest.get(workspace, 0), number)
    if not newest:
        raise SnapshotNotFoundError("the repository holds no workspace snapshots", repository)
    if len(newest) > 1:
        raise InvalidArgumentError(
            f"the repository holds {len(newest)} workspaces; name a full ref or commit", repository
        )
    return next(iter(newest.items()))


def load_source(source: Source, mount_point: str) -> InMemoryFilesystem:
    """A new live workspace holding what ``source`` names."""
    if source.kind == "git":
        assert source.path is not None
        try:
            workspace, newest = _only_workspace(source.path)
        except InvalidArgumentError:
            if source.ref is None:
                raise
            workspace, newest = "", 0
        ref = source.ref or str(newest)
        return git.load(source.path, ref, workspace=workspace or None, mount_point=mount_point)
    fs = InMemoryFilesystem(mount_point=mount_point)
    if source.kind == "directory":
        assert source.path is not None
        fs.hydrate_from_host(HostMount(source.path, mount_path="."), allowed_roots=[source.path])
    elif source.kind == "archive":
        assert source.path is not None
        import_archive(fs, source.path)
    return fs
