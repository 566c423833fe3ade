"""Public test helpers: the protocol-compliance suite every backend runs, and a test double."""

from ._compliance import TREE as TREE
from ._compliance import FilesystemProtocolTests as FilesystemProtocolTests
from ._mock import MockFilesystem as MockFilesystem
