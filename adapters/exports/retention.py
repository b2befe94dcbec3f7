"""Export files past their retention are removed; what is kept is measured.

A file's age is its modification time: written once, when the export finished (a
rename of a complete file, adapters/exports/csv_files.py). A temporary file a crashed
worker left behind goes after the same age. Removal is idempotent: a copy that finds
a file already gone moves on. The operation's result then answers 410 Gone.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISREG

# Known here by its old name (the trim reports what it removed in it).
from application.console_reads import ExportFilesTally as ExportFiles

__all__ = ["ExportFiles", "export_files_size", "trim_export_files"]


def export_files_size(directory: Path, now: float | None = None) -> ExportFiles:
    """Count, bytes and the oldest file's age; a missing directory holds nothing."""
    now = time.time() if now is None else now
    files, size, oldest = 0, 0, None
    for _, stat in _entries(directory):
        files += 1
        size += stat.st_size
        oldest = stat.st_mtime if oldest is None else min(oldest, stat.st_mtime)
    age = None if oldest is None else max(now - oldest, 0.0)
    return ExportFiles(files=files, bytes=size, oldest_age_seconds=age)


def trim_export_files(
    directory: Path, older_than_s: float, now: float | None = None
) -> ExportFiles:
    """Remove files older than `older_than_s`; returns what was removed."""
    cutoff = (time.time() if now is None else now) - older_than_s
    files, size = 0, 0
    for path, stat in _entries(directory):
        if stat.st_mtime >= cutoff:
            continue
        with contextlib.suppress(FileNotFoundError):  # another copy was first
            path.unlink()
            files += 1
            size += stat.st_size
    return ExportFiles(files=files, bytes=size)


def _entries(directory: Path) -> Iterator[tuple[Path, os.stat_result]]:
    try:
        paths = list(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return
    for path in paths:
        try:
            stat = path.stat()
        except FileNotFoundError:  # removed meanwhile
            continue
        if S_ISREG(stat.st_mode):
            yield path, stat
