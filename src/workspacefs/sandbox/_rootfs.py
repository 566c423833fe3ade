"""The container's root filesystem: a local image, or a copy-on-write overlay of a host directory.

Three kinds, chosen by ``root_filesystem``:

- ``ImageRoot``: any image in local storage, by name (``--pull=never``: no
  registry is asked). ``commit`` is ``podman commit``.
- ``OverlayRoot`` (root only): an overlay the sandbox mounts itself, lower
  layer the host directory (``/`` by default), upper layer on a tmpfs of
  ``disk`` bytes, so what the container writes outside the workspace is
  bounded and never reaches the host. ``commit`` copies the upper layer;
  restoring puts a copy back under a fresh mount.
- ``PodmanOverlayRoot`` (users other than root, or ``rootfs="DIR:O"``):
  Podman's own ``--rootfs DIR:O`` overlay, which needs no mount privilege.
  Podman cannot commit such a container, so neither can this kind, and
  what the container writes outside the workspace is not bounded.

Over the host's own ``/`` both overlays hide what is the machine's rather
than the system's: home directories, project and data directories, host
services' state and logs, and files in ``/etc`` that other users may not
read (``shadow``, private keys). The container keeps the programs (``/usr``,
``/etc``, package-manager state) and nothing else of the host.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import subprocess
from typing import Protocol

from .._errors import BackendUnavailableError, InvalidArgumentError, NotPermittedError
from ._podman import run_podman

log = logging.getLogger(__name__)

SYSTEM_DIRS = frozenset(
    {
        "bin",
        "sbin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "usr",
        "etc",
        "opt",
        "var",
        "dev",
        "proc",
        "sys",
    }
)
"""Top-level entries of the host's ``/`` a container keeps; every other one is hidden."""

EMPTY_DIRS = {"tmp": 0o1777, "run": 0o755, "root": 0o700, "home": 0o755}
"""Hidden top-level directories that stay, empty, because programs expect them."""

HIDDEN_VAR = ("tmp", "log", "mail", "spool", "backups", "local", "opt")
"""Host state under ``/var`` a container does not see (``var/lib`` is filtered on its own)."""

KEPT_VAR_LIB = frozenset(
    {
        "apt",
        "dpkg",
        "ucf",
        "pam",
        "misc",
        "python",
        "sgml-base",
        "xml-core",
        "shells.state",
        "ca-certificates",
        "ca-certificates-java",
    }
)
"""Package-manager state in ``/var/lib`` (for apt and dpkg); services' data is hidden."""

OPAQUE = "trusted.overlay.opaque"

COMMIT_REFUSED = (
    "container_commit needs the sandbox's own overlay (run as root, rootfs without :O) or "
    "image=; Podman cannot commit a container on --rootfs DIR:O"
)


class RootFilesystem(Protocol):
    """How a container gets its root filesystem."""

    description: str
    """Named in errors and in ``PodmanSandbox.root_description``."""

    commits: bool
    """True if ``commit`` can record the container's files."""

    def options(self) -> list[str]:
        """``podman run`` options it needs (before the root)."""
        ...

    def target(self) -> list[str]:
        """The root in ``podman run``'s argv: an image name or ``--rootfs PATH``."""
        ...

    def commit(self, container: str, label: str) -> str:
        """Record the container's own changes (the container is paused); a token for restore."""
        ...

    def restore(self, token: str) -> None:
        """Make the next container start from ``token``'s state (no container is running)."""
        ...

    def close(self) -> None:
        """Remove whatever it made; safe to call twice."""
        ...

    def branch(self, state: str) -> RootFilesystem:
        """A root for a second container (a try-run) that starts from this root's
        files as far as the kind allows, and whose writes go nowhere: an empty
        directory ``state`` holds whatever it needs; ``close`` removes it."""
        ...


class ImageRoot:
    """A local image, by name; commits are images too, removed on ``close``.

    Args:
        image: The image's name or id.
        prefix: Names the committed images (``<prefix>-commit:<label>``).
    """

    def __init__(self, image: str, prefix: str) -> None:
        self.image = image
        self.description = f"image {image}"
        self.commits = True
        self._prefix = prefix
        self._commits: list[str] = []

    def options(self) -> list[str]:
        return ["--pull=never"]

    def target(self) -> list[str]:
        return [self.image]

    def commit(self, container: str, label: str) -> str:
        name = f"localhost/{self._prefix}-commit:{label}"
        run_podman("commit", "--pause=false", "--quiet", container, name)
        self._commits.append(name)
        return name

    def restore(self, token: str) -> None:
        self.image = token

    def close(self) -> None:
        if self._commits:
            run_podman("rmi", "--force", *self._commits, check=False)
            self._commits.clear()

    def branch(self, state: str) -> RootFilesystem:
        # The image (or the commit restored last), not the running container's
        # changes: committing those would cost a podman commit per try.
        return ImageRoot(self.image, self._prefix)


class PodmanOverlayRoot:
    """Podman's ``--rootfs DIR:O``: a copy-on-write overlay that Podman manages.

    Args:
        lower: The host directory.
    """

    def __init__(self, lower: str) -> None:
        self._lower = lower
        self.description = f"Podman's overlay of {lower}"
        self.commits = False

    def options(self) -> list[str]:
        if self._lower != "/":
            return []
        hidden = [f"/{name}" for name in _hidden_top_level("/") if os.path.isdir(f"/{name}")]
        hidden += [f"/var/{name}" for name in _hidden_in_var("/")]
        # notmpcopyup: an empty tmpfs, not one filled with what it hides.
        return [f"--mount=type=tmpfs,destination={path},notmpcopyup" for path in hidden]

    def target(self) -> list[str]:
        return ["--rootfs", f"{self._lower}:O"]

    def commit(self, container: str, label: str) -> str:
        raise NotPermittedError(COMMIT_REFUSED, None)

    def restore(self, token: str) -> None:
        raise NotPermittedError("no container commit to restore", token)

    def close(self) -> None:
        pass

    def branch(self, state: str) -> RootFilesystem:
        return PodmanOverlayRoot(self._lower)  # Podman makes each container its own overlay


class OverlayRoot:
    """An overlay the sandbox mounts: the host directory below, a bounded tmpfs above.

    Args:
        lower: The host directory (never written).
        state: The sandbox's private directory; the overlay lives in it.
        disk: Bytes the container may write outside the workspace.
    """

    def __init__(self, lower: str, state: str, disk: int, *, below: str | None = None) -> None:
        for path in (lower, below or ""):
            if any(c in path for c in ",:\\"):
                raise InvalidArgumentError("rootfs path must not contain ',', ':' or '\\'", path)
        self._lower = lower
        self._below = below  # an upper layer over ``lower`` to start from (see branch)
        self._disk = disk
        self._scratch = os.path.join(state, "scratch")
        self._upper = os.path.join(self._scratch, "upper")
        self._work = os.path.join(self._scratch, "work")
        self._merged = os.path.join(state, "root")
        self._commits = os.path.join(state, "commits")
        self.description = f"overlay of {lower}"
        self.commits = True
        for path in (self._scratch, self._merged, self._commits):
            os.mkdir(path, 0o700)
        _mount("tmpfs", self._scratch, f"size={disk},mode=0700")
        try:
            os.mkdir(self._upper, 0o755)
            if lower == "/" and below is None:
                hide_host_state(self._upper)
            self._mount()
        except BaseException:
            _unmount(self._scratch)
            raise

    def _mount(self) -> None:
        if os.path.exists(self._work):
            shutil.rmtree(self._work)
        os.mkdir(self._work, 0o700)
        layers = self._lower if self._below is None else f"{self._below}:{self._lower}"
        options = f"lowerdir={layers},upperdir={self._upper},workdir={self._work}"
        _mount("overlay", self._merged, options)

    def options(self) -> list[str]:
        return []

    def target(self) -> list[str]:
        return ["--rootfs", self._merged]

    def commit(self, container: str, label: str) -> str:
        saved = os.path.join(self._commits, label)
        # Reading the upper layer under a live overlay is allowed (only
        # changing it is not); cp -a keeps whiteouts, opaque marks, owners.
        _run(["cp", "-a", self._upper, saved])
        return saved

    def restore(self, token: str) -> None:
        if not os.path.isdir(token) or os.path.dirname(token) != self._commits:
            raise InvalidArgumentError("not a commit of this sandbox", token)
        # An overlay's layers may only change while it is not mounted.
        _unmount(self._merged)
        shutil.rmtree(self._upper)
        _run(["cp", "-a", token, self._upper])
        self._mount()

    def close(self) -> None:
        for path in (self._merged, self._scratch):
            if os.path.ismount(path):
                _unmount(path)

    def branch(self, state: str) -> RootFilesystem:
        # This overlay's upper layer becomes the new overlay's middle layer, so
        # the try sees what the sandbox's container installed, with the host's
        # state hidden by its whiteouts and opaque directories. Overlayfs leaves changes to a lower
        # layer while mounted undefined (never a crash): the sandbox's
        # container may go on writing there during a try, and the try may or
        # may not see that.
        return OverlayRoot(self._lower, state, self._disk, below=self._upper)


def root_filesystem(
    image: str | None, rootfs: str | None, podman_overlay: bool, state: str, disk: int, prefix: str
) -> RootFilesystem:
    """The root filesystem the options ask for (see the module docstring)."""
    if image is not None:
        return ImageRoot(image, prefix)
    assert rootfs is not None  # SandboxConfig sets "/" when neither is given
    if podman_overlay:
        return PodmanOverlayRoot(rootfs)
    return OverlayRoot(rootfs, state, disk)


# -- hiding the host's own state ---------------------------------------------------------


def _hidden_top_level(root: str) -> list[str]:
    return sorted(name for name in os.listdir(root) if name not in SYSTEM_DIRS)


def _hidden_in_var(root: str) -> list[str]:
    var = os.path.join(root, "var")
    names = [name for name in HIDDEN_VAR if os.path.isdir(os.path.join(var, name))]
    with contextlib.suppress(OSError):
        names += [f"lib/{n}" for n in os.listdir(os.path.join(var, "lib")) if n not in KEPT_VAR_LIB]
    return sorted(names)


def hide_host_state(upper: str) -> None:
    """Fill an empty upper layer over the host's ``/`` so the merged view hides host state.

    A hidden directory becomes an empty *opaque* directory (the lower one's
    contents do not show through), a hidden file a *whiteout* (a 0/0
    character device, which overlayfs shows as absent).
    """
    for name in _hidden_top_level("/"):
        _hide(upper, name, EMPTY_DIRS.get(name))
    for name in _hidden_in_var("/"):
        _hide(upper, f"var/{name}", 0o1777 if name == "tmp" else None)
    for top, dirs, files in os.walk("/etc"):
        for name in list(dirs) + files:
            path = os.path.join(top, name)
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode) and not mode & stat.S_IROTH:
                _hide(upper, os.path.relpath(path, "/"), None)
                if name in dirs:
                    dirs.remove(name)


def _hide(upper: str, relative: str, keep_mode: int | None) -> None:
    """Hide ``/relative`` in the merged view: an empty opaque dir (``keep_mode``, or the
    lower directory's mode) for a directory, a whiteout for anything else."""
    lower = os.path.join("/", relative)
    _copy_parents(upper, os.path.dirname(relative))
    target = os.path.join(upper, relative)
    info = os.lstat(lower)
    if stat.S_ISDIR(info.st_mode):
        os.mkdir(target)
        os.chmod(target, keep_mode if keep_mode is not None else stat.S_IMODE(info.st_mode))
        os.chown(target, info.st_uid, info.st_gid)
        os.setxattr(target, OPAQUE, b"y")
    else:
        os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(0, 0))


def _copy_parents(upper: str, relative: str) -> None:
    """Create ``relative``'s directories in the upper layer with the lower ones' attributes:
    a directory present in the upper layer shows with the upper one's mode and owner."""
    if not relative:
        return
    target = os.path.join(upper, relative)
    if os.path.isdir(target):
        return
    _copy_parents(upper, os.path.dirname(relative))
    info = os.stat(os.path.join("/", relative))
    os.mkdir(target)
    os.chmod(target, stat.S_IMODE(info.st_mode))
    os.chown(target, info.st_uid, info.st_gid)
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))


# -- mounts and helpers ------------------------------------------------------------------


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BackendUnavailableError(
            f"`{' '.join(argv[:2])}` failed: {done.stderr.strip() or done.returncode}", argv[-1]
        )


def _mount(kind: str, path: str, options: str) -> None:
    _run(["mount", "-t", kind, "-o", options, kind, path])


def _unmount(path: str) -> None:
    """Unmount ``path``; lazily if something still holds it, so teardown never hangs."""
    done = subprocess.run(["umount", path], capture_output=True, text=True, check=False)
    if done.returncode != 0 and os.path.ismount(path):
        log.warning("%s busy (%s); detaching it lazily", path, done.stderr.strip())
        _run(["umount", "-l", path])
