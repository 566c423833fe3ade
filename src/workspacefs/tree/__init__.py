"""The pure copy-on-write inode tree: no I/O, no trio, no pyfuse3, no pygit2."""

from ._diff import PathDiff as PathDiff
from ._diff import changed_entries as changed_entries
from ._diff import diff_versions as diff_versions
from ._journal import Journal as Journal
from ._journal import Subscriber as Subscriber
from ._journal import TreeLock as TreeLock
from ._nodes import CHUNK_SIZE as CHUNK_SIZE
from ._nodes import Content as Content
from ._nodes import Directory as Directory
from ._nodes import File as File
from ._nodes import Node as Node
from ._nodes import Special as Special
from ._nodes import Symlink as Symlink
from ._tree import NAME_MAX as NAME_MAX
from ._tree import PATH_MAX as PATH_MAX
from ._tree import RENAME_EXCHANGE as RENAME_EXCHANGE
from ._tree import RENAME_NOREPLACE as RENAME_NOREPLACE
from ._tree import XATTR_CREATE as XATTR_CREATE
from ._tree import XATTR_REPLACE as XATTR_REPLACE
from ._tree import Tree as Tree
from ._tree import Version as Version
from ._tree import validate_name as validate_name
from ._view import ROOT_INO as ROOT_INO
from ._view import TreeView as TreeView
