"""What access-rule tests compare: the whole tree before and after a refused change."""

from __future__ import annotations

import hashlib

from workspacefs import InMemoryFilesystem
from workspacefs.tree import Directory, File, Symlink

Picture = dict[str, tuple[object, ...]]


def picture(fs: InMemoryFilesystem) -> Picture:
    """Every path of ``fs``'s live tree with all a user could observe of it: kind, mode,
    owner, size, content digest or link target, times and extended attributes."""
    tree = fs.tree
    found: Picture = {}
    with tree.lock:
        root = tree.node(1)
        found[""] = ("dir", root.mode, root.uid, root.gid, root.mtime_ns, root.ctime_ns)
        for path, _, node in tree.walk():
            if isinstance(node, File):
                what: object = hashlib.sha256(node.read(0, node.size)).hexdigest()
            elif isinstance(node, Symlink):
                what = node.target
            elif isinstance(node, Directory):
                what = sorted(node.entries)
            else:
                what = None
            xattrs = tuple(sorted((node.xattrs or {}).items()))
            found[path] = (
                type(node).__name__,
                node.mode,
                node.uid,
                node.gid,
                node.size,
                what,
                node.nlink,
                node.mtime_ns,
                node.ctime_ns,
                xattrs,
            )
    return found
