"""docs/seeds.md names where each seed's names are: every one of them must import."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "seeds.md"
NAME = re.compile(r"`(workspacefs(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")


def listed() -> list[str]:
    return sorted(set(NAME.findall(DOC.read_text())))


def resolve(dotted: str) -> object:
    """The object ``dotted`` names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(dotted)


def test_the_doc_lists_names() -> None:
    assert len(listed()) > 40


@pytest.mark.parametrize("dotted", listed())
def test_every_listed_name_imports(dotted: str) -> None:
    assert resolve(dotted) is not None
