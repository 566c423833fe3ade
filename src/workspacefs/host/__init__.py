"""Backends on real directories: the sandboxed ``HostFilesystem``."""

from ._apply import ApplyResult as ApplyResult
from ._apply import apply_changes as apply_changes
from ._config import HostFilesystemConfig as HostFilesystemConfig
from ._config import SnapshotStrategy as SnapshotStrategy
from ._host import HostFilesystem as HostFilesystem
from ._shadow import GitShadowProvider as GitShadowProvider
from ._shadow import ShadowSnapshot as ShadowSnapshot
