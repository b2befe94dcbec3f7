"""Export files under `CLUB_DATA_DIR/exports/`: complete, or not there at all.

A file is written under a temporary name in the same directory, flushed and
fsynced, then renamed to `<operation_id>.csv` (a rename within one directory is
atomic) and the directory is fsynced, so the rename itself survives a crash. A
reader therefore sees either no file or the whole file, and the worker records
`Succeeded` only after this returns. The name is derived from the operation id (a
UUID), never from anything a client sent, so no request can name another path.
Files hold students' names: the directory is the owner's alone (0700), each file too
(0600), whatever the umask.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path
from uuid import UUID, uuid4

# A cell starting with one of these is a formula to a spreadsheet (=HYPERLINK(...),
# +cmd|..., @SUM(...)); tab and carriage return hide one after a separator (OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralised(cell: str) -> str:
    """Shown as text, not evaluated: a leading apostrophe, as OWASP recommends."""
    return f"'{cell}" if cell.startswith(FORMULA_STARTS) else cell


def csv_text(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """RFC 4180 quoting (commas, quotes, line breaks) and no live formulas."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(header)
    writer.writerows([neutralised(cell) for cell in row] for row in rows)
    return out.getvalue()


class CsvExportFiles:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def name_for(export_id: UUID) -> str:
        return f"{export_id}.csv"

    def path_for(self, export_id: UUID) -> Path:
        """The only path a result is read from: the id's own file."""
        return self.directory / self.name_for(export_id)

    def write(
        self, export_id: UUID, header: Sequence[str], rows: Sequence[Sequence[str]]
    ) -> str:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.directory.chmod(0o700)  # made before, under a looser umask
        final = self.path_for(export_id)
        # Unique per attempt: two workers racing on one export never share a file.
        temporary = self.directory / f".{final.name}.{uuid4().hex}.tmp"
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with open(fd, "w", encoding="utf-8", newline="") as file:  # noqa: PTH123
                # A BOM so spreadsheets read UTF-8 names as UTF-8.
                file.write("\ufeff" + csv_text(header, rows))
                file.flush()
                os.fsync(file.fileno())
            temporary.replace(final)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise
        _fsync_directory(self.directory)
        return final.name


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable: a crash right after it must not lose the name."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
