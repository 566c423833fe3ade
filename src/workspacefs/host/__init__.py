"""Backends on real directories: the sandboxed ``HostFilesystem``."""

from ._host import HostFilesystem as HostFilesystem
