"""Backends on real directories: the sandboxed ``HostFilesystem``."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._apply import ApplyResult as ApplyResult
    from ._apply import apply_changes as apply_changes
    from ._config import HostFilesystemConfig as HostFilesystemConfig
    from ._config import SnapshotStrategy as SnapshotStrategy
    from ._host import HostFilesystem as HostFilesystem
    from ._shadow import GitShadowProvider as GitShadowProvider
    from ._shadow import ShadowSnapshot as ShadowSnapshot

_EXPORTS = {
    "ApplyResult": "._apply",
    "apply_changes": "._apply",
    "HostFilesystemConfig": "._config",
    "SnapshotStrategy": "._config",
    "HostFilesystem": "._host",
    "GitShadowProvider": "._shadow",
    "ShadowSnapshot": "._shadow",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
