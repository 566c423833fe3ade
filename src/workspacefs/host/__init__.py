"""Backends on real directories: the sandboxed ``HostFilesystem``."""

from ._host import HostFilesystem as HostFilesystem
from ._shadow import GitShadowProvider as GitShadowProvider
from ._shadow import ShadowSnapshot as ShadowSnapshot
