"""The README works as printed: every shell command and every Python block runs.

Fenced ``bash`` / ``sh`` / ``console`` blocks are split into commands (``\\`` continues a line;
in ``console`` blocks only ``$ `` lines are commands) and run one after the other, as printed,
in one temporary directory that holds a copy of ``docs/examples/`` (the README's recipes run
from the repository root). ``python`` blocks run there too, in order. Only the setup lines
(``pip install``, ``pytest``) are skipped. ``mdp`` is this checkout's entry point (read from
``pyproject.toml``), so the test checks the code beside it, installed or not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SHELL_LANGS = {"bash", "sh", "shell", "console"}
SETUP = re.compile(r"^(pip|python -m pip|pytest|python -m pytest)\b")
TIMEOUT_S = 300
MAX_LINES = 200


def fenced_blocks(markdown: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced code block, in order."""
    return [(m.group(1).lower(), m.group(2))
            for m in re.finditer(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", markdown, re.M | re.S)]


def shell_commands(lang: str, body: str) -> list[str]:
    """Commands of a shell block as printed (continuations joined, setup lines dropped)."""
    lines = body.splitlines()
    if lang == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    commands, current = [], ""
    for line in lines:
        current += line
        if current.endswith("\\"):
            current = current[:-1]          # as bash: backslash-newline disappears
            continue
        if current.strip() and not current.lstrip().startswith("#"):
            commands.append(current.strip())
        current = ""
    return [c for c in commands if not SETUP.match(c)]


def _readme_steps() -> list[tuple[str, str]]:
    steps = []
    for lang, body in fenced_blocks(README.read_text(encoding="utf-8")):
        if lang in SHELL_LANGS:
            steps += [("shell", c) for c in shell_commands(lang, body)]
        elif lang == "python":
            steps.append(("python", body))
    return steps


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A directory laid out like the repository root for the recipes, with an ``mdp`` shim."""
    work = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "docs" / "examples", work / "docs" / "examples")
    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["mdp"]
    module, func = target.split(":")
    bindir = work / ".bin"
    bindir.mkdir()
    shim = bindir / "mdp"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c '
                    f'"import sys; from {module} import {func} as main; sys.exit(main())" "$@"\n')
    shim.chmod(0o755)
    return work


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(work / ".bin"), str(Path(sys.executable).parent),
                                   env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["MPLBACKEND"] = "Agg"
    return env


def test_readme_is_a_short_guide():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES})"
    assert "seed" not in " ".join(lines).lower().replace("--seed", "").replace("rng=", ""), \
        "name the papers by authors and year, not 'seed'"


def test_readme_links_exist():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert links
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_shell_blocks_are_found():
    """The extraction itself: setup lines are skipped, continuations joined, console prompts read."""
    assert shell_commands("bash", "pip install -e .\npytest -q\nmdp a \\\n  --b 1\n# note\nmdp c\n") \
        == ["mdp a   --b 1", "mdp c"]
    assert shell_commands("console", "$ mdp list\noutput line\n$ mdp eps x\n") == ["mdp list", "mdp eps x"]
    kinds = [kind for kind, _ in _readme_steps()]
    assert kinds.count("shell") >= 8 and "python" in kinds


@pytest.mark.slow
def test_readme_commands_run_as_printed(workdir):
    """Every command of the README, in order, in one directory; each must exit 0."""
    env = _env(workdir)
    for kind, step in _readme_steps():
        if kind == "shell":
            argv = ["bash", "-e", "-o", "pipefail", "-c", step]
        else:
            argv = [sys.executable, "-c", step]
        try:
            proc = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True,
                                  timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"README {kind} step ran over {TIMEOUT_S} s:\n{step}")
        assert proc.returncode == 0, (f"README {kind} step failed ({proc.returncode}):\n{step}\n"
                                      f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
        assert "Traceback" not in proc.stderr, f"{step}\n{proc.stderr}"

    # What the recipes promise, checked on their outputs.
    for name in ("results/curves/curves.png", "out/sites-curves/curves.csv", "out/heat.png",
                 "out/sources.png", "out/places.npz", "out/words.npz", "out/mech.npz",
                 "out/mine-private.csv"):
        assert (workdir / name).stat().st_size > 0, name
    # privatizing the whole mine.csv: one line per line, the header passed through
    private = (workdir / "out/mine-private.csv").read_text().splitlines()
    original = (workdir / "out/mine.csv").read_text().splitlines()
    assert len(private) == len(original) and private[0] == original[0]
    # nothing but out/, results/ and the copied examples in the directory the recipes ran in
    assert {p.name for p in workdir.iterdir()} <= {"out", "results", "docs", ".bin"}


@pytest.mark.slow
def test_readme_location_and_text_recipes_release_points_of_the_space(workdir):
    """The privatized outputs of the two privatization recipes are points of their spaces."""
    import mdp

    env = _env(workdir)
    for npz in ("out/places.npz", "out/words.npz"):
        if not (workdir / npz).exists():
            pytest.skip("runs after test_readme_commands_run_as_printed")
    places = mdp.load(workdir / "out/places.npz").space
    out = subprocess.run(["bash", "-c", "printf '48.2082,16.3738\\n48.2100,16.3600\\n' | "
                          "mdp privatize out/places.npz --seed 1"], cwd=workdir, env=env,
                         capture_output=True, text=True, timeout=TIMEOUT_S, check=True).stdout
    centres = {(round(lat, 6), round(lon, 6)) for lat, lon in places.points}
    released = [tuple(round(float(v), 6) for v in line.split(",")) for line in out.split()]
    assert len(released) == 2 and set(released) <= centres
    # the space is the user's own file: the released points are rows of mine.csv
    rows = {(round(a, 6), round(b, 6)) for a, b in
            (map(float, line.split(",")) for line in
             (workdir / "out/mine.csv").read_text().split()[1:])}
    assert set(released) <= rows
    # the whole-file release: user and released point only, ann's third report refused
    released_file = (workdir / "out/released.csv").read_text().split()
    assert released_file[0] == "user,lat,lon" and len(released_file) == 1 + 3
    assert {tuple(round(float(v), 6) for v in line.split(",")[1:])
            for line in released_file[1:]} <= rows
    assert "leaflet" in (workdir / "out/map.html").read_text().lower()
    far = subprocess.run(["mdp", "privatize", "out/places.npz", "39.9042,116.4074"], cwd=workdir,
                         env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert far.returncode == 2 and "--snap" in far.stderr and far.stdout == ""
    words = set(mdp.load(workdir / "out/words.npz").space.labels.tolist())
    out = subprocess.run(["mdp", "privatize", "out/words.npz", "japan", "money", "--seed", "3"],
                         cwd=workdir, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                         check=True).stdout.split()
    assert len(out) == 2 and set(out) <= words
    refused = subprocess.run(["bash", "-c", "echo 'The committee met on Tuesday' | "
                              "mdp privatize out/words.npz --seed 1"], cwd=workdir, env=env,
                             capture_output=True, text=True, timeout=TIMEOUT_S)
    assert refused.returncode != 0 and "words 1, 2, 3, 4 and 5 of line 1" in refused.stderr
    assert "--oov mask" in refused.stderr
    assert "committee" not in refused.stdout + refused.stderr


def test_recipes_write_under_an_output_folder():
    """Outputs of the recipes go under out/ (or results/), never into the repository root."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"(?:\s-o|--plot|[^-]>)\s+(\S+)", text) + re.findall(r"save\(\"([^\"]+)\"\)", text)
    assert len(targets) >= 6
    assert all(t.startswith(("out/", "results/")) for t in targets), targets
