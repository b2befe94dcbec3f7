"""The code map and the contracts cite code by `file:name`; every citation must exist.

docs/architecture.md, docs/http-api.md and docs/events.md tell a newcomer where
things happen. A rename that leaves them pointing at nothing would send the reader
to a dead end, so each backticked `path.py:Name` or `path.py:Class.method` must name
a function, class, method or module-level assignment in that file. A bare file name
(`http.py:post_lesson`) must match exactly one file of the project.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DOCS = ("docs/architecture.md", "docs/http-api.md", "docs/events.md")
PACKAGES = ("domain", "application", "adapters", "projections", "entrypoints")
# `path/to/file.py:Name` or `file.py:Class.method`, inside backticks, possibly one
# of several names after the colon ("`lease.py:RelayLease.advance`").
CITATION = re.compile(r"`([\w/]+\.py):([A-Za-z_][\w.]*)")


def citations() -> list[tuple[str, str, str]]:
    found = []
    for doc in DOCS:
        for match in CITATION.finditer((ROOT / doc).read_text()):
            found.append((doc, match[1], match[2]))
    return found


@cache
def project_files() -> tuple[Path, ...]:
    return tuple(
        path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
    )


def resolve(cited: str) -> Path:
    if "/" in cited:
        return ROOT / cited
    matches = [path for path in project_files() if path.name == cited]
    assert len(matches) == 1, f"{cited} names {len(matches)} files: {matches}"
    return matches[0]


@cache
def defined_names(path: Path) -> frozenset[str]:
    """Every def, class and assigned name, and `Class.member` for class members, at
    any depth (routes are functions nested in `create_app`)."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                for name in _names_of(member):
                    names.add(f"{node.name}.{name}")
        if isinstance(node, ast.Module):
            for statement in node.body:
                names.update(_names_of(statement))
    return frozenset(names)


def _names_of(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    if isinstance(statement, ast.Assign):  # `A = …` and `A, B = …, …`
        targets = [
            element
            for target in statement.targets
            for element in (target.elts if isinstance(target, ast.Tuple) else [target])
        ]
        return [t.id for t in targets if isinstance(t, ast.Name)]
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    return []


def test_the_docs_cite_code_at_all() -> None:
    """Guards the pattern itself: a change of citation style must not make the
    check below vacuous."""
    cited_docs = {doc for doc, _, _ in citations()}
    assert cited_docs == set(DOCS)
    assert len(citations()) > 50


@pytest.mark.parametrize(
    ("doc", "cited_file", "name"),
    citations(),
    ids=[f"{doc}:{file}:{name}" for doc, file, name in citations()],
)
def test_every_citation_names_real_code(doc: str, cited_file: str, name: str) -> None:
    path = resolve(cited_file)
    assert path.is_file(), f"{doc} cites {cited_file}, which does not exist"
    assert name in defined_names(path), f"{doc} cites {cited_file}:{name}: not there"
