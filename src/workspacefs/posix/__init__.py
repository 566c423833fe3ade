"""Descriptor I/O under a real directory, never following a link out of it.

The bottom layer every real-directory operation goes through (the host
backend, its snapshots, archives and worktrees, the shadow provider,
hydration): paths resolved beneath an open directory with ``openat2``
(``RESOLVE_BENEATH``) or ``*at`` calls with ``O_NOFOLLOW``, files checked
before a byte moves, directories walked through their parents' descriptors,
and files, links and directories replaced atomically; files and directories
made for their owner alone (``make_private_directory``, ``open_private_file``);
and the kernel's mount table, parsed once (``mount_table``). Standard library
only.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._descriptors import BLOCK as BLOCK
    from ._descriptors import DIRECTORY_FLAGS as DIRECTORY_FLAGS
    from ._descriptors import OpenDirectories as OpenDirectories
    from ._descriptors import Walked as Walked
    from ._descriptors import open_beneath as open_beneath
    from ._descriptors import open_directory as open_directory
    from ._descriptors import open_regular as open_regular
    from ._descriptors import openat2_available as openat2_available
    from ._descriptors import read_blocks as read_blocks
    from ._descriptors import regular_blocks as regular_blocks
    from ._descriptors import same_object as same_object
    from ._descriptors import scan_directory as scan_directory
    from ._descriptors import walk_directory as walk_directory
    from ._descriptors import write_all as write_all
    from ._descriptors import write_parts as write_parts
    from ._mounts import MountEntry as MountEntry
    from ._mounts import canonical_mountpoint as canonical_mountpoint
    from ._mounts import mount_table as mount_table
    from ._mounts import mounts_under as mounts_under
    from ._private import check_own_directory as check_own_directory
    from ._private import make_private_directory as make_private_directory
    from ._private import open_private_file as open_private_file
    from ._private import write_private_file as write_private_file
    from ._rename import rename_beneath as rename_beneath
    from ._replace import TEMPORARY_PREFIX as TEMPORARY_PREFIX
    from ._replace import clear_directory as clear_directory
    from ._replace import copy_content as copy_content
    from ._replace import make_directories as make_directories
    from ._replace import remove_entry as remove_entry
    from ._replace import replace_directory as replace_directory
    from ._replace import replace_file as replace_file
    from ._replace import replace_symlink as replace_symlink
    from ._replace import set_attributes as set_attributes

__all__ = [
    "BLOCK",
    "DIRECTORY_FLAGS",
    "TEMPORARY_PREFIX",
    "MountEntry",
    "OpenDirectories",
    "Walked",
    "canonical_mountpoint",
    "check_own_directory",
    "clear_directory",
    "copy_content",
    "make_directories",
    "make_private_directory",
    "mount_table",
    "mounts_under",
    "open_beneath",
    "open_directory",
    "open_private_file",
    "open_regular",
    "openat2_available",
    "read_blocks",
    "regular_blocks",
    "remove_entry",
    "rename_beneath",
    "replace_directory",
    "replace_file",
    "replace_symlink",
    "same_object",
    "scan_directory",
    "set_attributes",
    "walk_directory",
    "write_all",
    "write_parts",
    "write_private_file",
]

_EXPORTS = {
    "BLOCK": "._descriptors",
    "DIRECTORY_FLAGS": "._descriptors",
    "OpenDirectories": "._descriptors",
    "write_all": "._descriptors",
    "write_parts": "._descriptors",
    "Walked": "._descriptors",
    "open_beneath": "._descriptors",
    "open_directory": "._descriptors",
    "open_regular": "._descriptors",
    "openat2_available": "._descriptors",
    "read_blocks": "._descriptors",
    "regular_blocks": "._descriptors",
    "same_object": "._descriptors",
    "scan_directory": "._descriptors",
    "walk_directory": "._descriptors",
    "MountEntry": "._mounts",
    "canonical_mountpoint": "._mounts",
    "mount_table": "._mounts",
    "mounts_under": "._mounts",
    "check_own_directory": "._private",
    "make_private_directory": "._private",
    "open_private_file": "._private",
    "write_private_file": "._private",
    "rename_beneath": "._rename",
    "TEMPORARY_PREFIX": "._replace",
    "clear_directory": "._replace",
    "copy_content": "._replace",
    "make_directories": "._replace",
    "remove_entry": "._replace",
    "replace_directory": "._replace",
    "replace_file": "._replace",
    "replace_symlink": "._replace",
    "set_attributes": "._replace",
}

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
