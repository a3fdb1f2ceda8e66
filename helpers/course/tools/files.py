"""Writing the course's own files (notebooks, README) only where they change, and never half-written."""
from __future__ import annotations

from pathlib import Path

from helpers.data.graphfiles import write_atomically


def update(path: Path, text: str) -> bool:
    """Write ``text`` over ``path`` in one step where it differs from what is there; True if it changed."""
    path = Path(path)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    write_atomically(path, lambda file: file.write(text.encode("utf-8")))
    return True
