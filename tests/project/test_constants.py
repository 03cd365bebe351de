"""Module constants of the package are numerical constants that say why their value: every
numeric module-level constant in ``mdp/`` has a comment, its own (inline or on the lines above)
or its group's (constants on consecutive lines under one comment). Knobs a user may turn are
fields of a tuning dataclass (``tests/project/test_tuning.py``), not module constants."""

from __future__ import annotations

import ast
import re
from pathlib import Path

MDP = Path(__file__).resolve().parents[2] / "mdp"
NAME = re.compile(r"_?[A-Z][A-Z0-9_]*")


def _numeric(node: ast.AST) -> bool:
    """A value built of numbers only: literals, arithmetic, tuples, other constants' names,
    ``float.fromhex("...")``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    if isinstance(node, ast.Name):
        return bool(NAME.fullmatch(node.id))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "fromhex"
    return False


def _names(node: ast.stmt) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    out = []
    for t in targets:
        elts = t.elts if isinstance(t, ast.Tuple) else [t]
        out += [e.id for e in elts if isinstance(e, ast.Name)]
    return out


def uncommented_constants(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of each numeric module constant of ``source`` without a comment."""
    lines = source.splitlines()
    missing = []
    group_commented = False
    last_end = None
    for node in ast.parse(source).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            last_end = None
            continue
        names = [n for n in _names(node) if NAME.fullmatch(n)]
        if not names or not _numeric(node.value):
            last_end = None
            continue
        above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
        inline = any("#" in lines[i] for i in range(node.lineno - 1, node.end_lineno))
        if above.startswith("#"):
            group_commented = True
        elif last_end is None or node.lineno != last_end + 1:
            group_commented = False         # not under the group's comment
        if not (group_commented or inline):
            missing += [(node.lineno, n) for n in names]
        last_end = node.end_lineno
    return missing


def test_every_numeric_module_constant_says_why():
    missing = [f"{path.relative_to(MDP.parent)}:{line}: {name}"
               for path in sorted(MDP.rglob("*.py"))
               for line, name in uncommented_constants(path.read_text(encoding="utf-8"))]
    assert not missing, "numeric module constants without a comment:\n" + "\n".join(missing)


def test_the_scan_sees_a_bare_constant_and_accepts_groups():
    source = ("import x\n"
              "#: Why 3.\nA = 3\nB = 2 * A\n"        # a group under one comment
              "\nC = 0.5\n"                         # bare, after a blank line
              "D = 1e-9  # why\n"                   # inline
              "E = 'text'\n"                        # not numeric
              "_F = float.fromhex('0x1p-3')\n")     # bare
    assert uncommented_constants(source) == [(6, "C"), (9, "_F")]
