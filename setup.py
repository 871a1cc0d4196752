"""Package layout only (metadata is in pyproject.toml).

`vfl` is a namespace package: each real part of the project is a top-level
folder installed as ``vfl.<part>``, with its subpackages found here, so a
new paper (``papers/<paper>/``) or solver family needs no packaging line.
Each paper's configs (``papers/<paper>/configs/*.toml``) ship with it.
"""

from setuptools import find_packages, setup

PARTS = (
    "admm",
    "attacks",
    "baselines",
    "cli",
    "core",
    "datasets",
    "decentralized",
    "experiments",
    "papers",
    "plots",
    "privacy",
    "stacking",
)

setup(
    packages=[
        f"vfl.{name}" for name in find_packages(include=[pattern for part in PARTS for pattern in (part, f"{part}.*")])
    ],
    package_dir={f"vfl.{part}": part for part in PARTS},
    package_data={"": ["configs/*.toml"]},
)
