"""Layering: mdp is the bottom layer and never reaches up, directly or by a string."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import mdp
from mdp.plugins import COMMANDS, EMBEDDINGS, EXPERIMENTS, INPUTS, SPACES

ROOT = Path(mdp.__file__).resolve().parent
UPPER = ("geo", "text", "experiments")
_STRING_REF = re.compile(r"^(geo|text|experiments)(\.[A-Za-z_][\w.]*)?(:\w+)?$")


def _is_module_reference(value) -> bool:
    """``"geo.popular"``, ``"text.vocabulary:space_from_spec"``: a module named by a string."""
    return (isinstance(value, str) and bool(_STRING_REF.match(value))
            and ("." in value or ":" in value))


def _mdp_modules() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_mdp_imports_nothing_above_it():
    offenders = []
    for path in _mdp_modules():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Constant) and _is_module_reference(node.value):
                offenders.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} "
                                 f"string {node.value!r}")
            for name in names:
                if name.split(".")[0] in UPPER:
                    offenders.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} imports {name}")
    assert offenders == []


def test_the_scan_would_catch_an_upward_import(tmp_path):
    # the detector itself must fire on the patterns it forbids
    src = "import geo.grid\nfrom text import privatize\nX = 'experiments.loss_curves'\n"
    tree = ast.parse(src)
    hits = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert {a.name for n in hits if isinstance(n, ast.Import) for a in n.names} == {"geo.grid"}
    assert _is_module_reference("experiments.loss_curves")
    assert _is_module_reference("text.vocabulary:space_from_spec")
    assert not _is_module_reference("geolife_beijing_cells_0p005.npz")
    assert not _is_module_reference("text")


def test_importing_mdp_loads_no_upper_package():
    code = ("import sys, mdp, mdp.cli, mdp.spaces, mdp.privatize, mdp.curves; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('geo', 'text', 'experiments')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_upper_packages_register_through_entry_points():
    assert {"glove", "fasttext", "geolife", "checkins"} <= set(SPACES.names())
    assert {"heatmap", "heatsource", "experiment"} <= set(COMMANDS.names())
    assert {"latlon", "text"} <= set(INPUTS.names())
    assert {"loss-curves", "scalability", "loss-vs-size", "ablation", "heatmaps", "federated",
            "heatsources"} <= set(EXPERIMENTS.names())
    assert {"glove", "glove-full", "fasttext-lee"} <= set(EMBEDDINGS.names())
    assert SPACES.get("glove").__module__ == "text.vocabulary"
    assert EMBEDDINGS.get("glove").vectors.__module__ == "text.sources"
    assert COMMANDS.get("experiment").help


def test_unknown_plugin_names_list_the_valid_ones():
    import pytest

    with pytest.raises(ValueError, match="valid names: .*glove"):
        SPACES.get("nosuchprefix")
