"""mkdocs hook: the source tree mkdocstrings reads.

`vfl` is a namespace package whose parts are the repository's top-level folders
(setup.py maps ``vfl.<part>`` to ``<part>/``). Griffe reads sources from a path,
so this hook lays out ``build/api-src/vfl/<part>`` as links to those folders
before the build; it works from a clone whether vfl is installed or not.
"""

from __future__ import annotations

import os
from pathlib import Path

NOT_PARTS = {"tests", "benchmarks", "docs", "build", "results", "configs"}


def on_startup(command, dirty) -> None:  # noqa: ARG001 (mkdocs' hook signature)
    repo = Path(__file__).resolve().parents[2]
    root = repo / "build" / "api-src" / "vfl"
    root.mkdir(parents=True, exist_ok=True)
    parts = [p.name for p in repo.iterdir() if (p / "__init__.py").is_file() and p.name not in NOT_PARTS]
    for part in parts:
        link = root / part
        if not link.is_symlink():
            os.symlink(repo / part, link, target_is_directory=True)
