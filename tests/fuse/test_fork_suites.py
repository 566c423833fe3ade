"""The mount's own suites, run on a fork that the mount serves at ``/.forks/<name>``.

Every test below is imported from its module and collected here again with
the ``mounted`` fixture of this module: a fork added to a mount of its
origin, reached through its path. So writes, renames, links, listings (open
and open-free), coherence with the fork's API, restores and the
differential checks against a kernel filesystem all run on a fork's inode
range, and so do fallocate, request accounting and the shell tools (git,
tar, cp -a...); at the end the origin still holds only what it held. (Left out: what needs
``/.snapshots``, which only the workspace's root has.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from workspacefs import InMemoryFilesystem, mount

from .conftest import Mounted
from .test_coherence import (  # noqa: F401  (collected here again)
    test_api_changes_seen_through_cached_pages_listings_and_links,
    test_api_creates_deletes_and_renames_visible,
    test_api_writes_visible_through_mount,
    test_concurrent_shell_and_api_writers,
    test_mount_writes_visible_to_api,
    test_open_file_sees_restore,
    test_random_interleaving_has_no_stale_reads,
    test_restore_visible_through_mount,
)
from .test_differential import (  # noqa: F401
    test_cached_listings_follow_every_change,
    test_descriptors_with_o_trunc_and_o_append_match_kernel,
    test_listings_spanning_changes_return_untouched_entries_once,
    test_random_syscalls_match_kernel,
    test_writes_and_truncates_clear_set_id_bits_like_the_kernel,
)
from .test_fallocate import test_modes_match_tmpfs, test_unsupported_modes_are_refused  # noqa: F401
from .test_mount_semantics import (  # noqa: F401
    test_a_shell_in_a_directory_a_restore_drops,
    test_an_open_file_survives_a_restore_that_drops_it,
    test_nothing_lands_in_a_directory_the_api_removed,
)
from .test_posix import (  # noqa: F401
    test_directories,
    test_fifo,
    test_hard_links_and_symlinks,
    test_large_sparse_file,
    test_ls_shows_dot_entries,
    test_modes_owners_and_setgid_inheritance,
    test_open_with_o_trunc,
    test_readdir_while_directory_changes,
    test_rename_semantics,
    test_statfs,
    test_timestamps_with_utimensat,
    test_umask_applies,
    test_unlinked_open_file_keeps_working,
    test_write_read_append_truncate,
    test_xattrs,
)
from .test_requests import (  # noqa: F401
    test_buffered_writers_use_128_kib_writes,
    test_fallocate_is_counted,
    test_stats_count_requests_by_type,
    test_warm_reads_and_listings_send_no_requests,
    test_writes_through_a_write_only_handle_are_one_request_each,
)
from .test_shell_tools import test_tool_behaves_as_on_a_kernel_filesystem  # noqa: F401


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Mounted]:
    """A fork of an empty workspace, served by the workspace's mount; the origin
    gets a file of its own after the fork, which the fork must never see."""
    origin = InMemoryFilesystem(mount_point="/workspace")
    root = tmp_path / "mnt"
    root.mkdir()
    with mount(origin, root, allow_other=True) as handle:
        fork = origin.fork()
        origin.write("origin-only.txt", "origin")
        path = handle.add_fork("suite", fork)
        yield Mounted(fork, Path(path), handle)
        assert os.listdir(root) == ["origin-only.txt"]
        assert [entry.name for entry in origin.list(".")] == ["origin-only.txt"]
    assert not os.path.ismount(root), "the mount outlived its test"
