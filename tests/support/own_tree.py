"""What a container tries, to reach more of a mount than the tree it is bound to.

A mount serves every snapshot under ``/.snapshots`` and every fork under
``/.forks``; a container bound to the workspace (or to a fork) must reach
neither. ``escape_attempts`` lists the ways in: listing, ``stat``, reading,
writing, ``cd``, ``..`` and links, unmounting the cover, moving it away.
``probe`` is a shell script that prints the name of each attempt that worked,
so a container that is kept in prints nothing.
"""

from __future__ import annotations

from collections.abc import Mapping


def escape_attempts(workdir: str, tag: str, fork: str, fork_file: str) -> dict[str, str]:
    """Name -> a shell command that succeeds only if it got through.

    Args:
        workdir: Where the workspace is in the container (``/workspace``).
        tag: A snapshot's tag; its directory holds ``secret.env``.
        fork: A fork's name; its directory holds ``fork_file``.
        fork_file: A file of that fork.
    """
    snap = f"{workdir}/.snapshots/{tag}"
    forked = f"{workdir}/.forks/{fork}"
    return {
        "list snapshots": f"ls -A {workdir}/.snapshots | grep -qx {tag}",
        "stat snapshot": f"stat {snap}",
        "read snapshot": f"grep -q API_KEY {snap}/secret.env",
        "cd snapshot": f"cd {snap}",
        "dotdot snapshot": f"cd {workdir}/.snapshots && grep -q API_KEY ../.snapshots/{tag}/*",
        "list forks": f"ls -A {workdir}/.forks | grep -qx {fork}",
        "stat fork": f"stat {forked}",
        "read fork": f"cat {forked}/{fork_file}",
        "write fork": f"echo injected > {forked}/injected",
        "mkdir in fork": f"mkdir {forked}/made",
        "cd fork": f"cd {forked}",
        "dotdot fork": f"mkdir -p {workdir}/sub && cat {workdir}/sub/../.forks/{fork}/{fork_file}",
        "link to fork": (
            f"ln -sfn .forks/{fork} {workdir}/to-fork && cat {workdir}/to-fork/{fork_file}"
        ),
        "link to snapshot": f"ln -sfn {snap} {workdir}/to-snap && cat {workdir}/to-snap/secret.env",
        "umount": (
            f"umount {workdir}/.forks || umount -l {workdir}/.forks; cat {forked}/{fork_file}"
        ),
        "umount in a user namespace": (
            f"unshare -Urm sh -c 'umount -l {workdir}/.forks; cat {forked}/{fork_file}'"
        ),
        "move the cover away": (
            f"mv {workdir}/.forks {workdir}/moved && cat {workdir}/moved/{fork}/{fork_file}"
        ),
        "remove the cover": f"rmdir {workdir}/.forks && cat {forked}/{fork_file}",
        "make a real .forks": f"mkdir {workdir}/.forks/x || mkdir {workdir}/.forks",
        "make a real .snapshots": f"touch {workdir}/.snapshots/x || mkdir {workdir}/.snapshots",
        "listed": f"ls -a {workdir} | grep -qx -e .forks -e .snapshots",
    }


def probe(attempts: Mapping[str, str]) -> str:
    """A shell script printing the name of each attempt that succeeded, one a line."""
    return "".join(
        f"if ( {command} ) >/dev/null 2>&1; then echo '{name}'; fi\n"
        for name, command in attempts.items()
    )
