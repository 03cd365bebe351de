"""The house's import graph: no circles (imports inside functions included) and no private names
taken from another module."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("mdp", "geo", "text", "experiments")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(modules: dict[str, Path]):
    """(importer, imported module, names taken) for every import statement, at any depth."""
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield module, alias.name, []
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, path, node)
                names = [a.name for a in node.names]
                # "from pkg import submodule" imports the submodule
                subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
                yield module, target, [n for n in names if f"{target}.{n}" not in modules]
                for sub in subs:
                    yield module, sub, []


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _cycles(edges: set[tuple[str, str]], nodes: list[str]) -> list[list[str]]:
    index = {m: i for i, m in enumerate(nodes)}
    rows = [index[a] for a, _ in edges]
    cols = [index[b] for _, b in edges]
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(nodes), len(nodes)))
    _, labels = connected_components(graph, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for m, lab in zip(nodes, labels, strict=True):
        groups.setdefault(int(lab), []).append(m)
    return [sorted(g) for g in groups.values() if len(g) > 1]


def _package_of(module: str, modules: dict[str, Path]) -> str:
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]


def _import_edges(modules):
    edges = set()
    for importer, target, _ in _imports(modules):
        owner = _owner(target, modules)
        # a package's initialiser runs before its modules: "a -> its own package" is no circle
        if owner and owner != importer and not importer.startswith(owner + "."):
            edges.add((importer, owner))
    return edges


def test_no_import_cycles():
    modules = _modules()
    assert _cycles(_import_edges(modules), sorted(modules)) == []


def test_the_cycle_check_finds_a_circle():
    nodes = ["a", "b", "c"]
    assert _cycles({("a", "b"), ("b", "a"), ("b", "c")}, nodes) == [["a", "b"]]
    assert _cycles({("a", "b"), ("b", "c")}, nodes) == []


def test_no_private_names_across_modules():
    modules = _modules()
    offenders = []
    for importer, target, names in _imports(modules):
        owner = _owner(target, modules)
        if owner is None or owner == importer:
            continue
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        # a private module (``_kernels``) is for its own package only
        last = target.rpartition(".")[2]
        if (last.startswith("_") and not last.startswith("__")
                and _package_of(importer, modules) != target.rpartition(".")[0]):
            private.append(target)
        if private:
            offenders.append(f"{importer} takes {private} from {target}")
    assert offenders == []
