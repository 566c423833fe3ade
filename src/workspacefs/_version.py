"""The installed version (pyproject.toml holds it; the installed metadata reports it).

Its own module, loaded on first use of ``workspacefs.__version__``: importlib.metadata
alone costs more than importing the package.
"""

from importlib.metadata import version

__version__ = version("workspacefs")
