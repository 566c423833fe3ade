"""The FUSE front door: the live tree at a real mount point (pyfuse3 + trio)."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._attributes import CachePolicy as CachePolicy
    from ._causes import RequestCauses as RequestCauses
    from ._connection import Connection as Connection
    from ._connection import libfuse_path as libfuse_path
    from ._features import libfuse_version as libfuse_version
    from ._invalidate import invalidate as invalidate
    from ._mount import Mount as Mount
    from ._mount import fuse_mounts as fuse_mounts
    from ._mount import is_stale as is_stale
    from ._mount import mount as mount
    from ._mount import mount_options as mount_options
    from ._mount import mounts_inside as mounts_inside
    from ._mount import recover as recover
    from ._mount import refuse_if_mounted_inside as refuse_if_mounted_inside
    from ._mount import unavailable_reason as unavailable_reason
    from ._operations import WorkspaceOperations as WorkspaceOperations
    from ._probe import probe_connection as probe_connection
    from ._served import HIDDEN_NAMES as HIDDEN_NAMES
    from ._stats import RequestStats as RequestStats

_EXPORTS = {
    "CachePolicy": "._attributes",
    "RequestCauses": "._causes",
    "Connection": "._connection",
    "libfuse_path": "._connection",
    "libfuse_version": "._features",
    "invalidate": "._invalidate",
    "Mount": "._mount",
    "fuse_mounts": "._mount",
    "is_stale": "._mount",
    "mount": "._mount",
    "mount_options": "._mount",
    "mounts_inside": "._mount",
    "recover": "._mount",
    "refuse_if_mounted_inside": "._mount",
    "unavailable_reason": "._mount",
    "WorkspaceOperations": "._operations",
    "probe_connection": "._probe",
    "HIDDEN_NAMES": "._served",
    "RequestStats": "._stats",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
