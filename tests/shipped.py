"""The configs the repository ships: general ones in configs/, each paper's in its package."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENERAL = REPO / "configs"
#: every folder of shipped configs: configs/ (and own-data/) and papers/<paper>/configs/
FOLDERS = (GENERAL, GENERAL / "own-data", *sorted((REPO / "papers").glob("*/configs")))
ALL = sorted(p for folder in FOLDERS for p in folder.glob("*.toml"))


def paper_configs(package: str) -> Path:
    """The configs folder of the paper package ``package`` (``hu``, ``dp_admm``, ...)."""
    return REPO / "papers" / package / "configs"


def shipped(name: str) -> Path:
    """The shipped config named ``name`` (its stem), wherever it lives."""
    found = [p for p in ALL if p.stem == name and p.parent.name != "own-data"]
    if len(found) != 1:
        raise LookupError(f"{len(found)} shipped configs named {name!r}")
    return found[0]
