"""The project speaks of the software only.

Docs, README, the mkdocs configuration, code, tests, benchmarks and scripts hold no words about
how or when the work was organised (the developers' guide lists them) and no reference to a
tracker entry by number. The patterns are assembled from pieces, so this file does not match them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE_DIRS = ("mdp", "geo", "text", "experiments", "benchmarks", "tests", "scripts")

_SESS = "sess" + "ion"
_ISSUE = "is" + "sue"
# pytest's fixture scope and its test-run object are API names, not words about the work
ALLOWED = ('scope="' + _SESS + '"', "scope='" + _SESS + "'", "request." + _SESS + ".")
PATTERNS = {
    "work periods": re.compile(r"\b" + _SESS + r"s?\b|\bsit" + r"tings?\b", re.IGNORECASE),
    "tracker entries": re.compile(r"\b" + _ISSUE + r"s?[ _#-]*#?\d+", re.IGNORECASE),
    # a number of seconds after "task" is a figure, not a work item
    "numbered work items": re.compile(r"\bta" + r"sks? #?\d+(?![\d.])(?!\s*s\b)", re.IGNORECASE),
    "critiques of the work": re.compile(r"\bre" + r"views?\b", re.IGNORECASE),
    "history verdicts": re.compile(r"\bnot " + r"kept\b|\)\s*:\s*" + r"kept\b|(?<![\w.])\(" + r"kept\)",
                                   re.IGNORECASE),
}


def project_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "mkdocs.yml"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    for d in CODE_DIRS:
        files += sorted(p for p in (ROOT / d).rglob("*.py") if "__pycache__" not in p.parts)
    return [p for p in files if p.is_file()]


def offending_lines(text: str) -> list[tuple[int, str, str]]:
    """``(line number, what, line)`` for every line that holds one of the patterns."""
    found = []
    for i, line in enumerate(text.splitlines(), 1):
        clean = line
        for ok in ALLOWED:
            clean = clean.replace(ok, "")
        for what, pattern in PATTERNS.items():
            if pattern.search(clean):
                found.append((i, what, line.strip()))
    return found


def test_the_scan_covers_the_project():
    files = project_files()
    names = {p.relative_to(ROOT).as_posix() for p in files}
    assert {"README.md", "mkdocs.yml", "docs/design/lp.md", "tests/project/test_docs_words.py"} <= names
    assert any(n.startswith("benchmarks/") for n in names)
    assert any(n.startswith("mdp/lp/") for n in names)


@pytest.mark.parametrize("line, bad", [
    ("measured in the third " + _SESS + " of the work", True),
    ("see " + _ISSUE + " 18 for the targets", True),
    ("lp.md#warm-rounds-" + _ISSUE + "-18-ninth-" + _SESS + "-kept", True),
    ("done as ta" + "sk 7", True),
    ("after the re" + "view's edit", True),
    ("Devex pricing (not " + "kept)", True),
    ('@pytest.fixture(scope="' + _SESS + '")', False),
    ("items = request." + _SESS + ".items", False),
    ("the solver stops at its next iteration", False),
    ("the issue of scaling is numerical", False),
    ("rows kept in the LP between rounds", False),
    ("LP variables: kept pixels", False),
    ("tokenize(" + "kept)", False),
    ("**1e-2 (" + "kept)**", True),
    ("## Warm rounds (ninth): " + "kept", True),
    ("the build (the ta" + "sk 708.9 s)", False),
])
def test_patterns_find_what_they_should(line, bad):
    assert bool(offending_lines(line)) is bad


def test_no_words_about_how_the_project_was_built():
    hits = []
    for path in project_files():
        for i, what, line in offending_lines(path.read_text(encoding="utf-8", errors="replace")):
            hits.append(f"{path.relative_to(ROOT)}:{i}: {what}: {line[:120]}")
    assert not hits, "\n".join(hits)
