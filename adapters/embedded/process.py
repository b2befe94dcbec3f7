"""Child server processes that die with their parent and never run as root."""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

_PR_SET_PDEATHSIG = 1
NOBODY = 65534  # PostgreSQL refuses to run as root; nobody exists on every Linux


LOWEST_PORT = 10_000  # below: ports that well-known services claim
_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port() -> int:
    """A loopback port nobody listens on, below the kernel's ephemeral range.

    A port from bind(0) is an ephemeral one: the kernel may give it to the next
    outgoing connection of any process before our server binds it (a cluster
    node once failed on "address already in use" for its monitoring port). One
    below the range can only be taken by another server's explicit bind."""
    span = max(1, lowest_ephemeral_port() - LOWEST_PORT)
    for _ in range(100):
        port = LOWEST_PORT + secrets.randbelow(span)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:  # in use, or lingering: another try
                continue
            return port
    with socket.socket() as s:  # nothing free down there: the kernel's choice
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def lowest_ephemeral_port() -> int:
    """Where the ports the kernel picks for outgoing connections begin (Linux's
    default when it cannot be read)."""
    try:
        return int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def running_as_root() -> bool:
    return os.geteuid() == 0


def become_nobody() -> None:
    """In a child about to exec: every privilege dropped, for good."""
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def _child_setup(*, as_nobody: bool) -> Callable[[], None]:
    def setup() -> None:
        os.setpgrp()  # Ctrl-C reaches the supervisor, which stops children in order
        if as_nobody:
            become_nobody()
        # Set after setuid: a credential change clears the parent-death signal.
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return setup


def spawn(
    argv: list[str], *, log: Path, as_nobody: bool = False
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_child_setup(as_nobody=as_nobody),  # noqa: PLW1509
        )


def spawn_role(
    argv: list[str], env: dict[str, str], *, as_nobody: bool = False
) -> subprocess.Popen[bytes]:
    """A role process that shares our terminal and dies with us."""
    return subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        preexec_fn=_child_setup(as_nobody=as_nobody),  # noqa: PLW1509
    )


def wait_for_port(
    port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            msg = f"{proc.args!r} exited with {proc.returncode}:\n{tail}"
            raise RuntimeError(msg)
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", port), timeout=0.2),
        ):
            return
        time.sleep(0.02)
    msg = f"{proc.args!r} did not listen on port {port} within {timeout}s; see {log}"
    raise RuntimeError(msg)


def stop(
    proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 20
) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    wait_or_kill(proc, timeout)


def wait_or_kill(proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """Waits for a process already asked to stop; SIGKILL if it takes too long."""
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def check_traversable(path: Path) -> None:
    """As root the server runs as nobody, who must reach `path` through its parents."""
    for parent in path.resolve().parents:
        if not parent.stat().st_mode & 0o001:
            msg = (
                f"{parent} is not searchable by other users, so the embedded "
                f"PostgreSQL (run as 'nobody' because you are root) cannot reach "
                f"{path}. Allow it (chmod o+x {parent}), run as a normal user, or "
                f"set CLUB_DATABASE_URL to a server you run."
            )
            raise RuntimeError(msg)
