"""MkDocs hook: the command-line reference is the ``--help`` text of the installed code.

A page line ``<!-- mdp-help: all -->`` becomes the help of ``mdp`` and of each of its
subcommands (read from ``mdp --help``), ``<!-- mdp-help: build -->`` that of one subcommand, and
``<!-- mdp-experiments -->`` the help of every ``mdp experiment NAME``. The command is run from
this checkout (the ``mdp`` entry point named in ``pyproject.toml``), so the page cannot drift
from the code.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_MARK = re.compile(r"^<!-- mdp-help: ([\w-]+) -->$", re.MULTILINE)
_EXPERIMENTS = "<!-- mdp-experiments -->"


def _mdp(*args: str) -> str:
    """Output of ``mdp ARGS`` run with this checkout's code."""
    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["mdp"]
    module, func = target.split(":")
    code = f"import sys; from {module} import {func} as main; sys.exit(main())"
    env = dict(os.environ, COLUMNS="100",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"mdp {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout.rstrip()


def _block(args: list[str]) -> str:
    return f"```text\n$ mdp {' '.join(args)}\n{_mdp(*args)}\n```\n"


def _subcommands() -> list[str]:
    """The subcommands, in ``mdp --help`` order (the indented names under COMMAND)."""
    usage = _mdp("--help")
    block = usage.split("positional arguments:", 1)[-1].split("options:", 1)[0]
    names = re.findall(r"^    ([a-z][\w-]*)(?:\s|$)", block, re.MULTILINE)
    if not names:
        raise RuntimeError(f"no subcommand list in 'mdp --help':\n{usage}")
    return names


def _help_section(name: str) -> str:
    if name != "all":
        return _block([name, "--help"])
    parts = [_block(["--help"])]
    for sub in _subcommands():
        parts.append(f"## `mdp {sub}`\n\n{_block([sub, '--help'])}")
    return "\n".join(parts)


def _experiments_section() -> str:
    listing = _mdp("experiment", "--list")
    parts = [_block(["experiment", "--list"])]
    for line in listing.splitlines():
        name = line.split()[0] if line.strip() else ""
        if name and "(not available)" not in line:
            parts.append(f"### `mdp experiment {name}`\n\n{_block(['experiment', name, '--help'])}")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs API)
    """Replace the help markers of a page by the current help texts."""
    markdown = _MARK.sub(lambda m: _help_section(m.group(1)), markdown)
    if _EXPERIMENTS in markdown:
        markdown = markdown.replace(_EXPERIMENTS, _experiments_section())
    return markdown
