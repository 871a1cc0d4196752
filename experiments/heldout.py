"""Where a run's held-out rows come from, and whether the relation protects them.

A private run scores its test rows and pre-trains or tunes on its public rows
without noise, so what it computes on them is covered by its guarantee only
when they are rows the relation does not protect: the published test file, or
a separate test file the user names (``data.test_path``). Rows held out of
the private training file (a user file's ``test_fraction``) or drawn from the
pool the units' rows come from (``partition.held_out = "pool"``) are records
it protects: test metrics scored on them are diagnostic
(:attr:`~vfl.experiments.distribution.Prepared.test_private`), and public rows
taken from them are refused.
"""

from __future__ import annotations

import numpy as np

from vfl.core.errors import ConfigError
from vfl.datasets.dataset import RawDataset
from vfl.datasets.stage import Stage

from .config import Config

__all__ = [
    "FROM_POOL",
    "HELD_OUT_FILE",
    "held_out_rows",
    "refuse_private_public",
    "rows_needed",
    "test_part",
    "test_part_private",
    "test_source",
]


def test_part_private(raw: RawDataset) -> str:
    """Why the dataset's test part is made of private records, or "" when it is not: a test
    part held out of the training file itself (a user file's ``test_fraction``) holds records
    of the file the guarantee protects; a published or separate test file, or a separately
    generated one, does not."""
    split = raw.provenance.get("split") or {}
    if split.get("test") != "held out from path":
        return ""
    return (
        f"scored on rows held out of the training file itself (data.test_fraction = "
        f"{split.get('test_fraction')}), records the guarantee protects: name a separate "
        "test file (data.test_path) whose rows need no protection to release them"
    )


#: how a private run's public rows can come from rows the relation does not protect
HELD_OUT_FILE = ("held out of the training file (data.test_fraction)", "name a separate test file (data.test_path)")
FROM_POOL = (
    "drawn from the pool the units' rows come from",
    'set partition.held_out = "test_part" (rows of the dataset\'s test file)',
)


def refuse_private_public(config: Config, source: tuple[str, str] | None) -> None:
    """A run that claims a guarantee takes its public rows (pre-training, tuning, a fitted
    scaling: used without noise) only from rows the relation does not protect; ``source``
    (where they would come from, and the fix) says they would be private records."""
    if config.privacy.claims_guarantee and config.partition.public and source:
        raise ConfigError(
            f"partition.public = {config.partition.public}: a private run's "
            f"public rows must be rows the guarantee does not protect, but these "
            f"would be {source[0]}: {source[1]}"
        )


def test_source(source: str, private: str) -> dict:
    """The distribution's words on the test rows: where from, and whether protected."""
    return {"test_source": source, "test_rows_protected": bool(private)}


def rows_needed(config: Config, agents: int, n: int, n_test_part: int) -> None:
    """A row setting's rows fit: the units' (and, with ``held_out = "pool"``, the public and test
    rows) in the pool of ``n`` rows; with ``"test_part"`` the public and test rows (at least
    one) in the test part of ``n_test_part``."""
    p = config.partition
    if p.held_out == "test_part":
        if agents * p.samples_per_agent > n:
            raise ConfigError(
                f"partition: {agents} agents x {p.samples_per_agent} samples = "
                f"{agents * p.samples_per_agent} rows, but the pool ({p.pool}) "
                f"has {n}"
            )
        need = p.public + max(p.test, 1)
        if need > n_test_part:
            raise ConfigError(
                f"partition.held_out = 'test_part': {p.public} public + "
                + (f"{p.test} test rows = {need}" if p.test else "at least 1 test row")
                + f", but the test part has {n_test_part}"
            )
        return
    need = p.public + agents * p.samples_per_agent + p.test
    if need > n:
        raise ConfigError(
            f"partition: {p.public} public + {agents} agents x {p.samples_per_agent} samples"
            + (f" + {p.test} test" if p.test else "")
            + f" = {need} rows, but the pool "
            f"({p.pool}) has {n}"
        )


def test_part(raw: RawDataset, stage: Stage) -> np.ndarray:
    """The dataset's test part as the pool's rows are before each split: encoded only when the
    scaling is fitted on each split's public rows, else through the whole stage."""
    X = stage.encode(raw.test) if stage.needs_public_rows else stage.rows.apply(stage.columns(raw.test))
    return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)


def held_out_rows(X, y, public: int, test: int, rng: np.random.Generator):
    """``partition.held_out = "test_part"``: one permutation of the test part; its first
    ``public`` rows are public, the next ``test`` (all the rest when 0) the test set."""
    perm = rng.permutation(len(y))
    pub, rest = perm[:public], perm[public:]
    held = rest if test == 0 else rest[:test]
    return (X[pub], y[pub]), (X[held], y[held])
