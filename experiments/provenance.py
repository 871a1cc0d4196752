"""Where a number came from: code version, git commit, library versions."""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

__all__ = ["environment_info", "git_info", "vfl_version"]

_LIBRARIES = ("numpy", "scipy", "scikit-learn", "pandas", "matplotlib", "click")


def vfl_version() -> str:
    try:
        return metadata.version("vfl")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "unknown"


def git_info(path: Path) -> dict | None:
    """Commit and dirtiness of the git work tree containing ``path``, if any."""

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

    try:
        commit, root = git("rev-parse", "HEAD", "--show-toplevel").split("\n")  # one process
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return {"commit": commit, "dirty": dirty, "work_tree": root}


@functools.cache
def _library_versions() -> tuple:
    """The libraries' versions, read once per process (the code a process runs does not change
    when a library is reinstalled under it; reading the metadata cost ~10 ms a run)."""
    versions = []
    for lib in _LIBRARIES:
        try:
            versions.append((lib, metadata.version(lib)))
        except metadata.PackageNotFoundError:
            versions.append((lib, None))
    return tuple(versions)


def environment_info() -> dict:
    """Versions of everything that can change a number.

    The git commit is looked up from the installed code's location (an
    editable install or a source tree) and, failing that, from the current
    directory (a regular install run from the clone it was installed from).
    """
    here = Path(__file__).resolve().parent
    git = git_info(here)
    source = "package"
    if git is None:
        git, source = git_info(Path.cwd()), "cwd"
    versions = dict(_library_versions())
    return {
        "vfl_version": vfl_version(),
        "git": None if git is None else {**git, "found_from": source},
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "libraries": versions,
        "command": sys.argv,
    }
