"""docs/scaling.md points at real code, decisions and results: a rename or a
removed file must not leave it pointing at nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.unit.test_docs_cite_real_code import CITATION, defined_names, resolve

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs/scaling.md"


def test_every_cited_name_exists() -> None:
    cited = CITATION.findall(DOC.read_text())
    assert cited, "the doc cites code; the pattern found none"
    for path, name in cited:
        assert name in defined_names(resolve(path)), f"{path}:{name}"


def test_every_linked_file_exists() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", DOC.read_text())
    assert links
    for link in links:
        assert (DOC.parent / link).resolve().exists(), link


def test_every_named_results_file_holds_json() -> None:
    for name in re.findall(r"`(bench/results/[\w.]+\.json)`", DOC.read_text()):
        assert isinstance(json.loads((ROOT / name).read_text()), dict), name
