"""Under `club up` as root, the roles run as `nobody` where they can.

A role faces the network (the API, the sandboxes) or handles what others sent (the
workers): run as root, a hole in any of them is the machine's. As root, `club up`
starts its roles as `nobody` — the user the embedded PostgreSQL already runs as —
and hands them the only directories they write: exports and the sandboxes' state.
Their secrets come in their environment, which other users cannot read.

"Where they can": `nobody` must be able to run this install (the interpreter, the
clone and its `.venv`) and reach the data directory, and the API's port must not be
a privileged one. When it cannot, the roles run as root as before and `club up`
says why and what would let them drop it; a closed home (/root, mode 700) is the
usual reason, and loosening it is not ours to do
(docs/decisions/2026-11-30-root-newcomer-postgres-outside-a-closed-home.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs

from adapters.embedded.process import NOBODY, become_nobody, running_as_root
from entrypoints.config.settings import Settings, exports_dir

# Imports what a role imports first, then checks each directory it writes.
PROBE = (
    "import os, sys, entrypoints.cli.main\n"
    "sys.exit(0 if all(os.access(d, os.W_OK | os.X_OK) for d in sys.argv[1:]) else 3)"
)
CANNOT_WRITE = 3
PRIVILEGED_PORTS = 1024


@attrs.frozen
class RolesUser:
    as_nobody: bool
    note: str  # one line for `club up`'s announcement


AS_CALLER = RolesUser(as_nobody=False, note="")


def role_dirs(data_dir: Path) -> list[Path]:
    """What the roles write under CLUB_DATA_DIR (sandboxes/cli.py keeps its
    providers' state under `sandbox/`)."""
    return [exports_dir(data_dir), data_dir / "sandbox"]


def roles_user(settings: Settings) -> RolesUser:
    if not running_as_root():
        return AS_CALLER
    if settings.http_port < PRIVILEGED_PORTS:
        return _as_root(
            f"the API's port {settings.http_port} is privileged; a port of "
            f"{PRIVILEGED_PORTS} or more lets them run as 'nobody'"
        )
    dirs = role_dirs(settings.data_dir)
    for directory in dirs:
        _hand_over(directory)
    problem = _why_nobody_cannot_run(dirs)
    if problem is not None:
        return _as_root(problem)
    return RolesUser(as_nobody=True, note="run as 'nobody' (you are root)")


def _as_root(why: str) -> RolesUser:
    return RolesUser(as_nobody=False, note=f"run as root: {why}")


def _hand_over(directory: Path) -> None:
    """`directory` and what is in it become nobody's. Links are not followed: a
    link planted there must not make root give away the file it points to."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in [directory, *directory.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)


def _why_nobody_cannot_run(dirs: list[Path]) -> str | None:
    """Tried, not guessed: ACLs, mount options and SELinux all have a say."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *map(str, dirs)],
            capture_output=True,
            preexec_fn=become_nobody,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "'nobody' could not start this install within 60 s"
    except OSError as e:  # the interpreter itself is out of its reach
        return _cannot_run(f"{e.strerror}: {e.filename}")
    if done.returncode == 0:
        return None
    if done.returncode == CANNOT_WRITE:
        where = ", ".join(map(str, dirs))
        return (
            f"'nobody' cannot reach {where}; let other users search the "
            "directories above CLUB_DATA_DIR (chmod o+x) to run them unprivileged"
        )
    said = done.stderr.decode(errors="replace").strip().splitlines()
    return _cannot_run(said[-1] if said else f"exit status {done.returncode}")


def _cannot_run(reason: str) -> str:
    return (
        f"'nobody' cannot run this install ({reason}); a clone and .venv that "
        "other users may read let them run unprivileged"
    )
