"""Public test helpers: the protocol-compliance suite every backend runs."""

from ._compliance import TREE as TREE
from ._compliance import FilesystemProtocolTests as FilesystemProtocolTests
