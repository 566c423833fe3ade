"""``rename_beneath``: move a name between two open directories, never replacing unasked.

``os.rename`` replaces what is at the new name; asked not to, a check first
(``lstat``) and a rename after leave a gap in which another process can put
a file there, and the rename then destroys it. ``renameat2(RENAME_NOREPLACE)``
(Linux 3.15+, glibc 2.28+) makes the check and the move one step: the kernel
refuses with EEXIST. Where the call or the filesystem lacks it (EINVAL,
ENOSYS), the check-then-move is the fallback, holding off this process's
own writers only (the caller's lock). Names are single components and both
directories are descriptors, so no link is followed on either side: a link
is moved or replaced itself.
"""

from __future__ import annotations

import ctypes
import errno
import os

RENAME_NOREPLACE = 1


class _Renameat2:
    """libc's ``renameat2``; None where libc has none."""

    def __init__(self) -> None:
        self._function: ctypes._NamedFuncPointer | None = None
        self._probed = False

    def function(self) -> ctypes._NamedFuncPointer | None:
        if not self._probed:
            self._probed = True
            libc = ctypes.CDLL(None, use_errno=True)
            found = getattr(libc, "renameat2", None)
            if found is not None:
                found.argtypes = (
                    ctypes.c_int,
                    ctypes.c_char_p,
                    ctypes.c_int,
                    ctypes.c_char_p,
                    ctypes.c_uint,
                )
                found.restype = ctypes.c_int
            self._function = found
        return self._function


_renameat2 = _Renameat2()


def rename_beneath(
    directory: int, name: str, target_directory: int, target_name: str, *, replace: bool
) -> None:
    """Move ``name`` in ``directory`` to ``target_name`` in ``target_directory``.

    Args:
        directory: The source's directory (any descriptor, ``O_PATH`` too).
        name: One component, never followed.
        target_directory: The destination's directory.
        target_name: One component; a link there is replaced itself.
        replace: Replace what is at the destination, as rename(2) does; else
            refuse with EEXIST, atomically where the kernel can.

    Raises:
        OSError: As rename(2) does (EEXIST, ENOENT, EISDIR, ENOTEMPTY, EINVAL for a
            directory moved into itself, EXDEV across filesystems).
    """
    if replace:
        os.rename(name, target_name, src_dir_fd=directory, dst_dir_fd=target_directory)
        return
    function = _renameat2.function()
    if function is not None:
        source, target = os.fsencode(name), os.fsencode(target_name)
        result = function(directory, source, target_directory, target, RENAME_NOREPLACE)
        if result == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(code, os.strerror(code), name, None, target_name)
    # No RENAME_NOREPLACE here (or EINVAL for another reason, which rename(2) gives
    # again, a directory moved into itself): check, then move.
    try:
        os.stat(target_name, dir_fd=target_directory, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(name, target_name, src_dir_fd=directory, dst_dir_fd=target_directory)
        return
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target_name)
