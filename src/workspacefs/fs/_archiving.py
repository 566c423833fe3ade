"""Where the in-memory backends' ``export_archive``/``import_archive`` methods go.

The archive format lives in the ``archive`` package, a layer above this one,
so these methods cannot import it. The archive package registers its verbs
here when it is loaded, which the first call of one of them does (``import
workspacefs`` loads no layer until it is used): one implementation, reached
from the methods every backend has.
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import Protocol

from .._errors import NotSupportedError


class ArchiveVerbs(Protocol):
    """The archive package's two verbs (``workspacefs.archive``)."""

    def export_archive(self, filesystem: object, path: str | os.PathLike[str]) -> int: ...

    def import_archive(
        self, filesystem: object, path: str | os.PathLike[str], *, limits: object
    ) -> int: ...


_registered: list[ArchiveVerbs] = []


def register_archive_verbs(verbs: ArchiveVerbs) -> None:
    """Make ``verbs`` what the in-memory backends' archive methods call."""
    _registered[:] = [verbs]


def archive_verbs() -> ArchiveVerbs:
    """The registered verbs, the archive package's (loaded now if it was not: by name,
    as the layer above is, so that this layer never imports it); NotSupportedError if
    it registers none."""
    if not _registered:
        import_module("..archive._backends", __package__)  # which registers them
    if not _registered:
        raise NotSupportedError("workspacefs.archive registers no archive verbs", None)
    return _registered[0]
