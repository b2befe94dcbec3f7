"""The README's "Try it" lines work as written: each run by bash against a running
API, its port the only change, the ids a reader copies filled in from the answers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.stack import Stack

README = Path(__file__).parents[2] / "README.md"
BLOCK = re.compile(r"Try it.*?```sh\n(.*?)```", re.DOTALL)
STATUS = "\n__status__:"


def readme_commands() -> list[str]:
    found = BLOCK.search(README.read_text())
    assert found, "README.md has no `Try it` shell block"
    joined = found[1].replace("\\\n", " ")
    return [line.split("  #")[0].strip() for line in joined.splitlines()]


def run(line: str, env: dict[str, str]) -> tuple[int, dict[str, object]]:
    """One curl line; the answer's status and JSON body."""
    done = subprocess.run(
        ["bash", "-c", f"{line} -s -w '{STATUS}%{{http_code}}'"],
        env=env, capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    body, _, status = done.stdout.rpartition(STATUS)
    return int(status), json.loads(body) if body.strip() else {}


def test_the_readme_curl_lines_work_as_written(stack: Stack) -> None:
    port = stack.base.rsplit(":", 1)[1]
    club = str(Path(sys.executable).parent / "club")
    env = dict(stack.env)
    answers: list[tuple[int, dict[str, object]]] = []
    ids: dict[str, str] = {}
    for written in readme_commands():
        if not written or written.startswith("open "):
            continue  # a browser's page, not a call
        line = written.replace(".venv/bin/club", club).replace(":8000", f":{port}")
        if "=$(" in line:  # a token: NAME=$(club token ...)
            name, command = line.split("=", 1)
            env[name] = subprocess.run(
                ["bash", "-c", f"echo {command}"], env=env,
                capture_output=True, text=True, check=True,
            ).stdout.strip()  # fmt: skip
            continue
        for placeholder, value in ids.items():
            line = line.replace(placeholder, value)
        assert "<" not in line, f"an id the README's answers did not give: {written}"
        status, body = run(line, env)
        answers.append((status, body))
        for key in ("lesson_id", "enrollment_id"):
            if key in body:
                ids.setdefault(f"<{key}>", str(body[key]))

    assert [s for s, _ in answers] == [200, 201, 201, 200, 202, 200], answers
    profile, _, enrolled, enrollment, export, statistics = (b for _, b in answers)
    assert profile["email"] == "ann@example.org"
    assert enrolled["status"] == "confirmed"
    assert "notification" in enrollment  # the README's comment shows its state
    assert export["status"] in {"pending", "running", "succeeded"}
    assert statistics["totals"]["lessons"] >= 1  # type: ignore[index]
