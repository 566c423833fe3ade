"""Code run in a fresh interpreter, for what this process cannot show (it has imported
every layer already)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import workspacefs

SOURCE_ROOT = str(Path(workspacefs.__file__).resolve().parents[1])


def child_env() -> dict[str, str]:
    """The environment for a child interpreter that imports the workspacefs this test
    imported."""
    path = os.pathsep.join(p for p in (SOURCE_ROOT, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def python(code: str) -> str:
    """Run ``code`` in a new interpreter (``child_env``); its stripped stdout (it must
    succeed)."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=child_env()
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()
