"""The configs the repository ships: general ones in configs/, each paper's in its package."""

from pathlib import Path

from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from vfl.core.errors import ConfigError
from vfl.experiments.config import load_config

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


def write_breast_cancer(directory: Path) -> None:
    """The files of README's own-data example in ``directory``, written as its snippet writes
    them: scikit-learn's breast-cancer data, a quarter of the rows (a seeded split) in
    ``breast_cancer_test.csv``, the rest in ``breast_cancer.csv``."""

    frame = load_breast_cancer(as_frame=True).frame.rename(columns={"target": "label"})
    train, test = train_test_split(frame, test_size=0.25, random_state=0)
    train.to_csv(Path(directory) / "breast_cancer.csv", index=False)
    test.to_csv(Path(directory) / "breast_cancer_test.csv", index=False)


#: the override that makes an LDP config (a simulation of the paper) claim a guarantee
LDP_PRIVATE = ("privacy.delta=1e-5",)


def private_overrides(path: Path) -> tuple[str, ...] | None:
    """The overrides that make shipped config ``path`` a private run: none for a config that
    claims a guarantee, :data:`LDP_PRIVATE` for a network (LDP) one that then accounts; None
    when it is not a private method."""

    config = load_config(path)
    if config.privacy.claims_guarantee:
        return ()
    if config.setting.value != "network":
        return None
    try:
        config = load_config(path, list(LDP_PRIVATE))
    except ConfigError:
        return None
    return LDP_PRIVATE if config.privacy.claims_guarantee else None
