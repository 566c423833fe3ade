"""How much one snapshot may hold when it is loaded (``load``'s limits): apart from the
loader, so that a command checking ``--load-limit`` loads no git."""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import LimitExceededError

_HOW = "git.load(limits=LoadLimits({name}=...)) or workspacefs mount --load-limit {name}=N"


@dataclass(frozen=True, slots=True)
class LoadLimits:
    """How much one snapshot may hold when it is loaded. A snapshot past a limit is
    refused with ``LimitExceededError`` naming the limit before anything is built."""

    max_entries: int = 1_000_000
    """Entries of all directories together (files, directories, links; each name of
    a hard link counts). Each costs about 1.5 KB of bookkeeping the memory budget
    does not count (measured), so the default allows about 1.5 GB of it."""
    max_total_bytes: int = 1 << 40
    """The files' declared sizes together. Contents are read when first used and
    count against the memory budget then, so this only bounds what a snapshot may
    claim (sizes, ``statfs``); 1 TiB is past any workspace memory holds."""
    max_record_bytes: int = 64 << 20
    """The largest single object ``load`` reads whole: a directory's record (JSON, a
    few hundred bytes per entry), a tree, the recorded history."""

    def check(self, name: str, value: int, what: str, unit: str) -> None:
        """Raise ``LimitExceededError`` if ``value`` is over the limit ``name``; the
        message reads "``what`` VALUE ``unit``, over the limit of ..." and says how
        to raise it."""
        limit: int = getattr(self, name)
        if value > limit:
            raise LimitExceededError(
                f"{what} {value:,} {unit}, over the limit of {limit:,} "
                f"({name}; raise it with {_HOW.format(name=name)})",
                None,
            )


DEFAULT_LOAD_LIMITS = LoadLimits()
