"""Path rules: every protocol path is normalised once, here.

A normalised path is relative to the workspace root, uses ``/``, has no
empty, ``.`` or ``..`` segments, and is ``""`` for the root itself.
"""

from __future__ import annotations

from .._errors import InvalidPathError, LimitExceededError, PathEscapeError
from ._limits import Limits


def normalize_mount_point(mount_point: str | None) -> str | None:
    """Validate a mount point such as ``/workspace`` and drop trailing slashes."""
    if mount_point is None:
        return None
    if not mount_point.startswith("/") or "\0" in mount_point:
        raise InvalidPathError("mount point must be an absolute path", mount_point)
    stripped = "/" + mount_point.strip("/")
    if any(part in (".", "..") for part in stripped.split("/")):
        raise InvalidPathError("mount point must be normalised", mount_point)
    return stripped


def strip_mount_point(path: str, mount_point: str | None) -> str:
    """Turn an absolute path into one relative to the root.

    With a mount point ``/workspace``, ``/workspace/a`` means ``a`` and any
    other absolute path is outside the workspace. Without one, ``/`` is the root.
    """
    if mount_point is None or mount_point == "/":
        return path.lstrip("/")
    if path == mount_point or path.startswith(mount_point + "/"):
        return path[len(mount_point) :].lstrip("/")
    raise PathEscapeError(f"absolute path outside the mount point {mount_point}", path)


def normalize(path: str, mount_point: str | None, limits: Limits) -> str:
    """Normalise a protocol path; refuse escapes, NUL bytes and over-limit paths."""
    if not isinstance(path, str):
        raise InvalidPathError(f"path must be str, not {type(path).__name__}", repr(path))
    if "\0" in path:
        raise InvalidPathError("path contains a NUL byte", path)
    try:
        path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise InvalidPathError("path is not valid UTF-8", repr(path)) from None
    relative = strip_mount_point(path, mount_point) if path.startswith("/") else path
    parts: list[str] = []
    for part in relative.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise PathEscapeError("path escapes the workspace root", path)
            parts.pop()
            continue
        if len(part) > limits.max_segment_length:
            raise LimitExceededError(
                f"path segment of {len(part)} characters, over the limit of "
                f"{limits.max_segment_length}",
                path,
            )
        parts.append(part)
    if len(parts) > limits.max_path_depth:
        raise LimitExceededError(
            f"path depth {len(parts)}, over the limit of {limits.max_path_depth}", path
        )
    return "/".join(parts)


def join(base: str, name: str) -> str:
    """Join a normalised directory path and a name."""
    return f"{base}/{name}" if base else name


def display(path: str) -> str:
    """How a normalised path appears in results: the root is ``.``."""
    return path or "."
