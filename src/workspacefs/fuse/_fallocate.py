"""fallocate(2) on the mount, which pyfuse3 3.5 does not expose.

pyfuse3's table of libfuse callbacks has no ``fallocate`` entry and its
``Operations`` no hook for it, so libfuse answers ENOSYS and the kernel then
fails every ``fallocate(2)`` on the mount with EOPNOTSUPP (tools that
preallocate fall back or fail). The clean fix is one more handler in
pyfuse3 (``patches/pyfuse3`` would be the place for it). Until then, ``install``
fills that one empty slot of the running session with a ctypes callback:

* ``pyfuse3.init`` has libfuse copy pyfuse3's callback table into the new
  session. The session is reached through pyfuse3's ``session`` variable,
  found by name in the extension's symbol table; the table is found in the
  session by value (the pointers to pyfuse3's own ``init`` and ``lookup``
  handlers, looked up the same way), and accepted only if every slot
  pyfuse3 fills holds its handler where libfuse's public
  ``struct fuse_lowlevel_ops`` says, and the ``fallocate`` slot is empty.
  Anything unexpected (a stripped build, another layout, a pyfuse3 that has
  its own ``fallocate``) leaves the session untouched: fallocate then stays
  unsupported, and nothing else changes.
* The callback runs in the FUSE thread, inside pyfuse3's request dispatch,
  holding the GIL: it does the tree work synchronously under the tree lock,
  as every handler does, and replies with libfuse's ``fuse_reply_err``.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import logging
import os
import struct
from collections.abc import Callable

import pyfuse3

log = logging.getLogger(__name__)

# struct fuse_lowlevel_ops (fuse_lowlevel.h), in order: the slots pyfuse3
# fills, and the one this module fills.
_SLOTS = {
    "init": 0,
    "lookup": 2,
    "forget": 3,
    "getattr": 4,
    "setattr": 5,
    "readlink": 6,
    "mknod": 7,
    "mkdir": 8,
    "unlink": 9,
    "rmdir": 10,
    "symlink": 11,
    "rename": 12,
    "link": 13,
    "open": 14,
    "read": 15,
    "write": 16,
    "flush": 17,
    "release": 18,
    "fsync": 19,
    "opendir": 20,
    "releasedir": 22,
    "fsyncdir": 23,
    "statfs": 24,
    "listxattr": 27,
    "removexattr": 28,
    "access": 29,
    "create": 30,
    "poll": 35,
    "write_buf": 36,
    "forget_multi": 38,
    "readdirplus": 41,
}
_FALLOCATE_SLOT = 40
_SEARCH_WORDS = 64  # the table starts within the first words of struct fuse_session
_WORD = ctypes.sizeof(ctypes.c_void_p)

_CALLBACK = ctypes.CFUNCTYPE(
    None,
    ctypes.c_void_p,  # fuse_req_t
    ctypes.c_uint64,  # fuse_ino_t
    ctypes.c_int,  # mode
    ctypes.c_int64,  # offset
    ctypes.c_int64,  # length
    ctypes.c_void_p,  # struct fuse_file_info *
)

Allocate = Callable[[int, int, int, int], None]
"""Does fallocate(inode, mode, offset, length); raises ``FUSEError`` or ``OSError``."""

_installed: list[object] = []  # the live callback: ctypes must keep it while the session lives


def install(allocate: Allocate) -> bool:
    """Serve FUSE_FALLOCATE in the session ``pyfuse3.init`` just made; True if done.

    Call it after ``pyfuse3.init`` and before the loop runs.
    """
    try:
        slot, reply = _locate()
    except Exception as exc:  # whatever the cause, the session stays as pyfuse3 made it
        log.info("fallocate stays unsupported on the mount: %r", exc)
        return False

    def serve(request: int, inode: int, mode: int, offset: int, length: int, _: int) -> None:
        code = 0
        try:
            allocate(inode, mode, offset, length)
        except pyfuse3.FUSEError as exc:
            code = exc.errno
        except OSError as exc:
            code = exc.errno or errno.EIO
        except MemoryError:
            code = errno.ENOSPC
        except BaseException:  # nothing may escape into libfuse
            log.exception("bug in fallocate")
            code = errno.EIO
        reply(request, code)

    callback = _CALLBACK(serve)
    _installed[:] = [callback]
    ctypes.c_void_p.from_address(slot).value = ctypes.cast(callback, ctypes.c_void_p).value
    return True


def _locate() -> tuple[int, Callable[[int, int], int]]:
    """(address of the session's fallocate slot, libfuse's fuse_reply_err)."""
    path = pyfuse3.__file__
    if path is None:
        raise LookupError("pyfuse3 has no file")
    symbols = _symbols(path)
    names = [f"__pyx_f_7pyfuse3_fuse_{name}" for name in _SLOTS]
    wanted = ["__pyx_v_7pyfuse3_session", "PyInit_pyfuse3", *names]
    missing = [name for name in wanted if name not in symbols]
    if missing:
        raise LookupError(f"pyfuse3's extension lacks the symbols {missing[:3]}")
    library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    anchor = ctypes.cast(library.PyInit_pyfuse3, ctypes.c_void_p).value
    assert anchor is not None
    base = anchor - symbols["PyInit_pyfuse3"]
    handlers = {
        slot: base + symbols[name] for name, slot in zip(names, _SLOTS.values(), strict=True)
    }
    session = ctypes.c_void_p.from_address(base + symbols["__pyx_v_7pyfuse3_session"]).value
    if not session:
        raise LookupError("no pyfuse3 session (call after pyfuse3.init)")
    words = (ctypes.c_void_p * (_SEARCH_WORDS + _FALLOCATE_SLOT + 8)).from_address(session)
    for start in range(_SEARCH_WORDS):
        table = words[start : start + _FALLOCATE_SLOT + 2]
        if all(table[slot] == address for slot, address in handlers.items()):
            if table[_FALLOCATE_SLOT]:
                raise LookupError("the session already has a fallocate handler")
            libfuse = ctypes.CDLL("libfuse3.so.3", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            reply = libfuse.fuse_reply_err
            reply.argtypes = [ctypes.c_void_p, ctypes.c_int]
            reply.restype = ctypes.c_int
            return session + (start + _FALLOCATE_SLOT) * _WORD, reply
    raise LookupError("pyfuse3's callback table is not where libfuse's layout says")


@functools.cache
def _symbols(path: str) -> dict[str, int]:
    """Name -> offset of the defined symbols in an ELF64 little-endian file's .symtab."""
    with open(path, "rb") as elf:
        data = elf.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (section_offset,) = struct.unpack_from("<Q", data, 0x28)
    entry_size, count = struct.unpack_from("<HH", data, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, section_offset + index * entry_size)
        for index in range(count)
    ]
    symtab = next((s for s in sections if s[1] == 2), None)  # SHT_SYMTAB
    if symtab is None:
        raise LookupError("the extension is stripped (no .symtab)")
    strings = sections[symtab[6]]  # sh_link: its string table
    strings_offset = strings[4]
    found = {}
    for offset in range(symtab[4], symtab[4] + symtab[5], 24):
        name_offset, _, _, section, value, _ = struct.unpack_from("<IBBHQQ", data, offset)
        if section == 0 or not value:
            continue  # undefined
        start = strings_offset + name_offset
        name = data[start : data.index(b"\0", start)].decode("ascii", "replace")
        found[name] = value
    return found
