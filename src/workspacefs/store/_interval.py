"""The ``interval`` durability policy's default window, apart from the store's machinery:
the command line shows it as a default without loading the journal or git."""

DEFAULT_INTERVAL = 1.0
"""Seconds a change may wait for the disk under the ``interval`` policy."""
